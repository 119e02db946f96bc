public import TipsJSON

// MARK: - Tips

extension TipDefinition {
  static let jsonKeys = [
    "id", "title", "message", "image", "actions", "rules", "options", "localizations", "variants", "presentation",
    "metadata", "removal", "sync", "goal", "schedule",
  ]

  /// The most JSON a tip's `metadata` may hold (compact UTF-8 bytes).
  public static let maxMetadataBytes = 4096

  /// Decodes `{id, title, message?, image?, actions?: [{id, title, invalidate?}], rules?: [...], options?: {...},
  /// localizations?, variants?, presentation?, metadata?, removal?, sync?, goal?, schedule?}`.
  /// Unknown keys, malformed rules and duplicate action ids are rejected with the offending path.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, Self.jsonKeys, path)
    let id = try D.nonEmptyString(try D.required(object, "id", path), D.join(path, "id"))
    guard !id.unicodeScalars.contains("\u{1F}") else {
      throw D.fail(D.join(path, "id"), "must not contain U+001F (it separates a tip id from a variant name)")
    }
    let title = try D.string(try D.required(object, "title", path), D.join(path, "title"))
    var message: String?
    if let value = D.optional(object, "message") { message = try D.string(value, D.join(path, "message")) }
    var image: String?
    if let value = D.optional(object, "image") { image = try D.string(value, D.join(path, "image")) }

    var actions: [TipAction] = []
    if let value = D.optional(object, "actions") { actions = try TipAction.list(value, D.join(path, "actions")) }

    var rules: [Rule] = []
    if let value = D.optional(object, "rules") {
      let rulesPath = D.join(path, "rules")
      for (index, element) in try D.array(value, rulesPath).enumerated() {
        rules.append(try Rule(json: element, path: "\(rulesPath)[\(index)]"))
      }
    }

    var options = TipOptions()
    if let value = D.optional(object, "options") {
      options = try TipOptions(json: value, path: D.join(path, "options"))
    }

    var localizations: [String: TipLocalization] = [:]
    if let value = D.optional(object, "localizations") {
      localizations = try TipLocalization.table(
        value, D.join(path, "localizations"), actionIDs: Set(actions.map { $0.id }))
    }

    var variants: [TipVariant] = []
    if let value = D.optional(object, "variants") {
      let variantsPath = D.join(path, "variants")
      let members = try D.object(value, variantsPath)
      guard !members.isEmpty else { throw D.fail(variantsPath, "expected at least one variant") }
      for (name, element) in members {
        variants.append(
          try TipVariant(json: element, name: name, path: D.join(variantsPath, name), tipActions: actions))
      }
    }

    var presentation: TipPresentation?
    if let value = D.optional(object, "presentation") {
      presentation = try TipPresentation(json: value, path: D.join(path, "presentation"))
    }
    var metadata: JSONObject?
    if let value = D.optional(object, "metadata") {
      let metadataPath = D.join(path, "metadata")
      metadata = try D.object(value, metadataPath)
      let size = value.jsonString.utf8.count
      guard size <= Self.maxMetadataBytes else {
        throw D.fail(metadataPath, "is \(size) bytes of JSON; at most \(Self.maxMetadataBytes) are handed to frontends")
      }
    }
    var removal: String?
    if let value = D.optional(object, "removal") { removal = try D.nonEmptyString(value, D.join(path, "removal")) }
    var sync: TipSync?
    if let value = D.optional(object, "sync") {
      let syncPath = D.join(path, "sync")
      let name = try D.string(value, syncPath)
      guard let choice = TipSync(rawValue: name) else {
        throw D.fail(syncPath, "expected \"local\" or \"synced\"")
      }
      sync = choice
    }
    var goal: TipGoal?
    if let value = D.optional(object, "goal") { goal = try TipGoal(json: value, path: D.join(path, "goal")) }
    var schedule: TipSchedule?
    if let value = D.optional(object, "schedule") {
      schedule = try TipSchedule(json: value, path: D.join(path, "schedule"))
    }
    self.init(
      id: id, title: title, message: message, image: image, actions: actions, rules: rules, options: options,
      localizations: localizations, variants: variants, presentation: presentation, metadata: metadata,
      removal: removal, sync: sync, goal: goal, schedule: schedule)
  }

  /// The definition as JSON, in the shape ``init(json:path:)`` reads (`actions` and `rules` always present).
  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id), "title": .string(title)]
    if let message { object["message"] = .string(message) }
    if let image { object["image"] = .string(image) }
    object["actions"] = .array(actions.map(\.json))
    object["rules"] = .array(rules.map(\.json))
    object["options"] = options.json
    if !localizations.isEmpty { object["localizations"] = TipLocalization.json(localizations) }
    if !variants.isEmpty { object["variants"] = .object(JSONObject(variants.map { ($0.name, $0.json) })) }
    if let presentation { object["presentation"] = presentation.json }
    if let metadata { object["metadata"] = .object(metadata) }
    if let removal { object["removal"] = .string(removal) }
    if let sync { object["sync"] = .string(sync.rawValue) }
    if let goal { object["goal"] = goal.json }
    if let schedule { object["schedule"] = schedule.json }
    return .object(object)
  }
}

extension TipSchedule {
  /// Decodes `{from?, until?}`, each an ISO 8601 instant to the second (`2027-01-01T00:00:00Z`, or with an offset),
  /// at least one present. A schedule that never opens (`until` at or before `from`) decodes: `tipsd lint` says so.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["from", "until"], path)
    func instant(_ key: String) throws(EngineError) -> Timestamp? {
      guard let value = D.optional(object, key) else { return nil }
      let keyPath = D.join(path, key)
      guard let text = value.stringValue, let instant = ISO8601.timestamp(from: text) else {
        throw D.fail(keyPath, "expected an ISO 8601 instant to the second, e.g. \"2027-01-01T00:00:00Z\"")
      }
      return instant
    }
    let from = try instant("from")
    let until = try instant("until")
    guard from != nil || until != nil else { throw D.fail(path, "expected \"from\", \"until\" or both") }
    self.init(from: from, until: until)
  }

  /// `{"from"?, "until"?}` as UTC instants.
  public var json: JSONValue {
    var object = JSONObject()
    if let from { object["from"] = .string(ISO8601.string(from: from)) }
    if let until { object["until"] = .string(ISO8601.string(from: until)) }
    return .object(object)
  }
}

extension TipGoal {
  /// Decodes `{event, within?: {minutes|hours|days|weeks: n}}` (`within` defaults to 24 hours).
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["event", "within"], path)
    let event = try D.nonEmptyString(try D.required(object, "event", path), D.join(path, "event"))
    var within = Self.defaultWithin
    if let value = D.optional(object, "within") { within = try EventRule.duration(value, D.join(path, "within")) }
    self.init(eventID: event, within: within)
  }

  /// `{"event", "within"}`, `within` in the largest exact unit.
  public var json: JSONValue {
    ["event": .string(eventID), "within": EventRule.durationJSON(within)]
  }
}

extension TipVariant {
  /// Decodes a variant `{title, message?, actions?, localizations?, weight?}` named `name`, or a holdout
  /// `{holdout: true, weight?}` (no copy: its installs never see the tip); its actions (or the tip's, when it has
  /// none of its own) are what its localizations may title. `weight` is a positive number (default 1).
  public init(json: JSONValue, name: String, path: String, tipActions: [TipAction]) throws(EngineError) {
    typealias D = JSONDecoding
    guard !name.isEmpty, !name.unicodeScalars.contains("\u{1F}") else {
      throw D.fail(path, "a variant name must be non-empty and must not contain U+001F")
    }
    let object = try D.object(json, path)
    var weight: Double?
    if let value = D.optional(object, "weight") {
      guard let number = value.doubleValue, number.isFinite, number > 0, value.isNumber else {
        throw D.fail(D.join(path, "weight"), "expected a positive number, got \(D.describeNumber(value))")
      }
      weight = number
    }
    if let value = D.optional(object, "holdout") {
      guard case .bool(let flag) = value else {
        throw D.fail(D.join(path, "holdout"), "expected a boolean, got \(value.typeName)")
      }
      if flag {
        try D.checkKeys(object, ["holdout", "weight"], path, what: " in a holdout (it has no copy)")
        self = .holdout(name, weight: weight)
        return
      }
    }
    try D.checkKeys(object, ["title", "message", "actions", "localizations", "holdout", "weight"], path)
    let title = try D.string(try D.required(object, "title", path), D.join(path, "title"))
    var message: String?
    if let value = D.optional(object, "message") { message = try D.string(value, D.join(path, "message")) }
    var actions: [TipAction]?
    if let value = D.optional(object, "actions") { actions = try TipAction.list(value, D.join(path, "actions")) }
    var localizations: [String: TipLocalization] = [:]
    if let value = D.optional(object, "localizations") {
      localizations = try TipLocalization.table(
        value, D.join(path, "localizations"), actionIDs: Set((actions ?? tipActions).map { $0.id }))
    }
    self.init(
      name: name, title: title, message: message, actions: actions, localizations: localizations, weight: weight)
  }

  public var json: JSONValue {
    var object = JSONObject()
    if holdout {
      object["holdout"] = true
    } else {
      object["title"] = .string(title)
      if let message { object["message"] = .string(message) }
      if let actions { object["actions"] = .array(actions.map { $0.json }) }
      if !localizations.isEmpty { object["localizations"] = TipLocalization.json(localizations) }
    }
    if let weight { object["weight"] = JSONDecoding.number(weight) }
    return .object(object)
  }
}

extension TipPresentation {
  /// Decodes `{style: "popover"|"inline", arrowEdge?: "top"|"bottom"|"leading"|"trailing"}`.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["style", "arrowEdge"], path)
    let stylePath = D.join(path, "style")
    let name = try D.string(try D.required(object, "style", path), stylePath)
    guard let style = Style(rawValue: name) else { throw D.fail(stylePath, "expected \"popover\" or \"inline\"") }
    var edge: ArrowEdge?
    if let value = D.optional(object, "arrowEdge") {
      let edgePath = D.join(path, "arrowEdge")
      let edgeName = try D.string(value, edgePath)
      guard let parsed = ArrowEdge(rawValue: edgeName) else {
        throw D.fail(edgePath, "expected \"top\", \"bottom\", \"leading\" or \"trailing\"")
      }
      guard style == .popover else { throw D.fail(edgePath, "only a popover has an arrow") }
      edge = parsed
    }
    self.init(style: style, arrowEdge: edge)
  }

  public var json: JSONValue {
    var object: JSONObject = ["style": .string(style.rawValue)]
    if let arrowEdge { object["arrowEdge"] = .string(arrowEdge.rawValue) }
    return .object(object)
  }
}

extension TipLocalization {
  static let jsonKeys = ["title", "message", "actions"]

  /// Decodes `{locale: {title?, message?, actions?}}`; locales must be BCP 47-shaped tags.
  static func table(_ value: JSONValue, _ path: String, actionIDs: Set<String>) throws(EngineError)
    -> [String: TipLocalization]
  {
    typealias D = JSONDecoding
    var localizations: [String: TipLocalization] = [:]
    for (locale, copy) in try D.object(value, path) {
      let localePath = D.join(path, locale)
      guard isLocaleTag(locale) else {
        throw D.fail(localePath, "a locale must be a BCP 47 tag such as \"ja\" or \"zh-Hans\"")
      }
      localizations[locale] = try TipLocalization(json: copy, path: localePath, actionIDs: actionIDs)
    }
    return localizations
  }

  /// Whether `tag` is shaped like a locale tag: ASCII letters, digits, `-` and `_`, not empty.
  public static func isLocaleTag(_ tag: String) -> Bool {
    !tag.isEmpty
      && tag.utf8.allSatisfy {
        $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
          || (0x61...0x7A).contains($0)
      }
  }

  /// A localization table as JSON, locales sorted.
  static func json(_ localizations: [String: TipLocalization]) -> JSONValue {
    var copies = JSONObject()
    for locale in localizations.keys.sorted() { copies[locale] = localizations[locale]!.json }
    return .object(copies)
  }

  /// Decodes `{title?, message?, actions?: {actionId: title}}`; action ids must be the tip's own.
  public init(json: JSONValue, path: String, actionIDs: Set<String>) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, Self.jsonKeys, path)
    var title: String?
    if let value = D.optional(object, "title") { title = try D.string(value, D.join(path, "title")) }
    var message: String?
    if let value = D.optional(object, "message") { message = try D.string(value, D.join(path, "message")) }
    var actionTitles: [String: String] = [:]
    if let value = D.optional(object, "actions") {
      let actionsPath = D.join(path, "actions")
      for (actionID, actionTitle) in try D.object(value, actionsPath) {
        guard actionIDs.contains(actionID) else {
          throw D.fail(D.join(actionsPath, actionID), "no action \"\(actionID)\" in this tip's actions")
        }
        actionTitles[actionID] = try D.string(actionTitle, D.join(actionsPath, actionID))
      }
    }
    self.init(title: title, message: message, actionTitles: actionTitles)
  }

  public var json: JSONValue {
    var object = JSONObject()
    if let title { object["title"] = .string(title) }
    if let message { object["message"] = .string(message) }
    if !actionTitles.isEmpty {
      var actions = JSONObject()
      for id in actionTitles.keys.sorted() { actions[id] = .string(actionTitles[id]!) }
      object["actions"] = .object(actions)
    }
    return .object(object)
  }
}

extension TipAction {
  /// Decodes `{id, title, invalidate?: bool}`; the id is required and non-empty; `invalidate` (default true) says
  /// whether performing it invalidates the tip.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["id", "title", "invalidate"], path)
    let id = try D.nonEmptyString(try D.required(object, "id", path), D.join(path, "id"))
    let title = try D.string(try D.required(object, "title", path), D.join(path, "title"))
    var invalidates = true
    if let value = D.optional(object, "invalidate") {
      guard case .bool(let flag) = value else {
        throw D.fail(D.join(path, "invalidate"), "expected a boolean, got \(value.typeName)")
      }
      invalidates = flag
    }
    self.init(id: id, title: title, invalidates: invalidates)
  }

  /// Decodes an array of actions with unique ids.
  static func list(_ value: JSONValue, _ path: String) throws(EngineError) -> [TipAction] {
    typealias D = JSONDecoding
    var actions: [TipAction] = []
    var seen = Set<String>()
    for (index, element) in try D.array(value, path).enumerated() {
      let elementPath = "\(path)[\(index)]"
      let action = try TipAction(json: element, path: elementPath)
      guard seen.insert(action.id).inserted else {
        throw D.fail(D.join(elementPath, "id"), "duplicate action id \"\(action.id)\"")
      }
      actions.append(action)
    }
    return actions
  }

  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id), "title": .string(title)]
    if !invalidates { object["invalidate"] = .bool(false) }
    return .object(object)
  }
}

extension TipOptions {
  /// Decodes `{maxDisplayCount?: int >= 1, maxDisplayDuration?: number > 0, ignoresDisplayFrequency?: bool}`.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["maxDisplayCount", "maxDisplayDuration", "ignoresDisplayFrequency"], path)
    self.init()
    if let value = D.optional(object, "maxDisplayCount") {
      guard let count = value.intValue, count >= 1, let exact = Int(exactly: count) else {
        throw D.fail(D.join(path, "maxDisplayCount"), "expected an integer of at least 1")
      }
      maxDisplayCount = exact
    }
    if let value = D.optional(object, "maxDisplayDuration") {
      guard let seconds = value.doubleValue, seconds.isFinite, seconds > 0 else {
        throw D.fail(D.join(path, "maxDisplayDuration"), "expected a positive number of seconds")
      }
      maxDisplayDuration = seconds
    }
    if let value = D.optional(object, "ignoresDisplayFrequency") {
      guard case .bool(let flag) = value else {
        throw D.fail(D.join(path, "ignoresDisplayFrequency"), "expected a boolean, got \(value.typeName)")
      }
      ignoresDisplayFrequency = flag
    }
  }

  /// Only the options that are set (`ignoresDisplayFrequency` only when true).
  public var json: JSONValue {
    var object = JSONObject()
    if let maxDisplayCount { object["maxDisplayCount"] = .int(Int64(maxDisplayCount)) }
    if let maxDisplayDuration { object["maxDisplayDuration"] = JSONDecoding.number(maxDisplayDuration) }
    if ignoresDisplayFrequency { object["ignoresDisplayFrequency"] = .bool(true) }
    return .object(object)
  }
}
