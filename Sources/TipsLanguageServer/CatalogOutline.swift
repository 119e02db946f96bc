import TipsJSON

/// What an object of a catalog is, read from its path (the catalog format in docs/catalog.md, `Catalog.keys`,
/// `TipDefinition`'s and the rules' keys).
enum ObjectRole: Sendable, Hashable {
  case catalog
  /// A tip (`tips[i]`) or a template (`templates[i]`).
  case tip
  case rule
  /// A rule's `count`: comparison operators.
  case count
  /// A rule's `within`, a tip rule's `for`, an event's `maxAge`: units.
  case within
  /// A tip's or a group's `schedule`: `from`, `until`.
  case schedule
  case eventDeclaration
  case parameterDeclaration
  case group
  case action
  case options
  case presentation
  case variant
  case other

  init(path: [PathSegment]) {
    if path.isEmpty {
      self = .catalog
      return
    }
    if Self.isRule(path) {
      self = .rule
      return
    }
    if let last = path.last, case .key(let key) = last, Self.isRule(Array(path.dropLast())) {
      switch key {
      case "count", "displayed": self = .count
      case "within", "for": self = .within
      default: self = .other
      }
      return
    }
    if path.count == 3, case .key(let list) = path[0], case .index = path[1], case .key(let key) = path[2] {
      switch (list, key) {
      case ("events", "maxAge"):
        self = .within
        return
      case ("tips", "schedule"), ("templates", "schedule"), ("groups", "schedule"):
        self = .schedule
        return
      default: break
      }
    }
    switch path.count {
    case 2:
      if case .key(let list) = path[0], case .index = path[1] {
        switch list {
        case "tips", "templates": self = .tip
        case "events": self = .eventDeclaration
        case "parameters": self = .parameterDeclaration
        case "groups": self = .group
        default: self = .other
        }
        return
      }
    default: break
    }
    guard path.count >= 3, case .key(let list) = path[0], list == "tips" || list == "templates", case .index = path[1]
    else {
      self = .other
      return
    }
    let rest = Array(path.dropFirst(2))
    switch rest.count {
    case 1:
      self = rest[0] == .key("options") ? .options : rest[0] == .key("presentation") ? .presentation : .other
    case 2:
      if rest[0] == .key("actions"), case .index = rest[1] {
        self = .action
      } else if rest[0] == .key("variants"), case .key = rest[1] {
        self = .variant
      } else {
        self = .other
      }
    case 4:
      if rest[0] == .key("variants"), rest[2] == .key("actions"), case .index = rest[3] {
        self = .action
      } else {
        self = .other
      }
    default: self = .other
    }
  }

  /// `tips[i].rules[j]` or `templates[i].rules[j]`, then any `.allOf[k]`, `.anyOf[k]`, `.not`.
  static func isRule(_ path: [PathSegment]) -> Bool {
    guard path.count >= 4, case .key(let list) = path[0], list == "tips" || list == "templates", case .index = path[1],
      path[2] == .key("rules"), case .index = path[3]
    else { return false }
    var index = 4
    while index < path.count {
      switch path[index] {
      case .key("not"): index += 1
      case .key("allOf"), .key("anyOf"):
        guard index + 1 < path.count, case .index = path[index + 1] else { return false }
        index += 2
      default: return false
      }
    }
    return true
  }

  /// The keys an object of this role may hold, each with a word on what it is.
  var keys: [(name: String, detail: String)] {
    switch self {
    case .catalog:
      [
        ("$schema", "the JSON schema, for editors"),
        ("displayFrequency", "immediate, hourly, daily, weekly or monthly: the cooldown between two tips appearing"),
        ("parameters", "[{id, default, transient?}]: rule parameters with their defaults"),
        ("events", "[{id, description, maxDonations?, maxAge?}]: every event rules may read"),
        ("locales", "the locales the app ships, e.g. [\"en\", \"ja\"]"),
        ("sourceLocale", "the locale of the tips' own copy (default en)"),
        ("tips", "tip definitions"),
        ("templates", "content tips made from a pattern, instantiated by tips/instantiate"),
        ("groups", "[{id, priority, tips, schedule?}]: TipKit's TipGroup"),
      ]
    case .tip:
      [
        ("id", "the tip's id (feature.purpose)"), ("title", "the tip's title"), ("message", "the tip's message"),
        ("image", "an image name"), ("actions", "[{id, title, invalidate?}]"),
        ("rules", "rules that must all hold for the tip to show"),
        ("options", "{maxDisplayCount, maxDisplayDuration, ignoresDisplayFrequency}"),
        ("localizations", "{locale: {title?, message?, actions?}}"),
        (
          "variants",
          "A/B copy over one rule tree: {name: {title, message?, actions?, weight?}}; one may be {holdout: true}"
        ),
        ("presentation", "{style: popover|inline, arrowEdge?}"),
        ("metadata", "an object handed to frontends untouched"),
        ("removal", "when and why the tip stops showing (checklist)"), ("sync", "\"local\" or \"synced\" (checklist)"),
        ("goal", "{event, within?}: the event that shows the tip helped (metrics/get)"),
        ("schedule", "{from?, until?}: ISO 8601 instants; outside them the tip is pending"),
      ]
    case .rule:
      Self.ruleKeys
    case .count:
      Self.operators
    case .within:
      [
        ("minutes", "a duration in minutes"), ("hours", "a duration in hours"), ("days", "a duration in days"),
        ("weeks", "a duration in weeks"),
      ]
    case .schedule:
      [
        ("from", "the first instant the tip may show (inclusive), e.g. \"2027-01-01T00:00:00Z\""),
        ("until", "the instant it stops (exclusive), e.g. \"2027-02-01T00:00:00Z\""),
      ]
    case .eventDeclaration:
      [
        ("id", "the event's id"), ("description", "what the event means"),
        ("maxDonations", "how many donations its history keeps (default 1000)"),
        ("maxAge", "{days: n}: older donations are invisible to rules and dropped (iOS 26 DonationLimit)"),
      ]
    case .parameterDeclaration:
      [
        ("id", "the parameter's id"), ("default", "its value until set (Bool, Int, Double or String)"),
        ("transient", "reset at every start"),
      ]
    case .group:
      [
        ("id", "the group's id"), ("priority", "\"ordered\" or \"firstAvailable\""), ("tips", "the member tips' ids"),
        ("schedule", "{from?, until?}: outside it the group has no current tip"),
      ]
    case .action:
      [("id", "the action's id"), ("title", "its title"), ("invalidate", "whether performing it invalidates the tip")]
    case .options:
      [
        ("maxDisplayCount", "TipKit's MaxDisplayCount"), ("maxDisplayDuration", "TipKit's MaxDisplayDuration, seconds"),
        ("ignoresDisplayFrequency", "TipKit's IgnoresDisplayFrequency"),
      ]
    case .presentation:
      [("style", "\"popover\" or \"inline\""), ("arrowEdge", "\"top\", \"bottom\", \"leading\" or \"trailing\"")]
    case .variant:
      [
        ("title", "the variant's title"), ("message", "its message"), ("actions", "its actions"),
        ("localizations", "its translations"),
        ("weight", "its share of installs relative to the other variants' (default 1)"),
        (
          "holdout",
          "true: installs assigned to it never see the tip (a holdout, no copy; metrics/get reports the lift)"
        ),
      ]
    case .other: []
    }
  }

  static let ruleKeys: [(name: String, detail: String)] = [
    ("event", "the event whose donations are counted"),
    ("count", "{op: n}: how many donations (eq, ne, lt, lte, gt, gte)"),
    ("within", "only donations younger than {minutes|hours|days|weeks: n}"),
    ("where", "only donations whose associated values match"),
    ("largestGroupBy", "count the largest group of donations sharing a value for this key"),
    ("parameter", "a parameter compared with a constant: {\"parameter\": p, op: value}"),
    ("tip", "another tip whose state this rule reads (tips that follow tips)"),
    ("status", "\"invalidated\": holds once the other tip is invalidated"),
    ("for", "{days: n}: and has been invalidated at least that long"),
    ("displayed", "{op: n}: the other tip's display count"),
    ("allOf", "[rules]: all must hold"), ("anyOf", "[rules]: at least one must hold"),
    ("not", "{rule}: must not hold"),
  ]

  static let eventRuleKeys: Set<String> = ["event", "count", "within", "where", "largestGroupBy"]
  static let tipRuleKeys: Set<String> = ["tip", "status", "for", "displayed"]

  static let operators: [(name: String, detail: String)] = [
    ("eq", "equal to (==)"), ("ne", "not equal to (!=)"), ("lt", "less than (<)"), ("lte", "at most (<=)"),
    ("gt", "greater than (>)"), ("gte", "at least (>=)"),
  ]

  /// The keys worth offering in an object of this role that already holds `present`.
  func offeredKeys(present: Set<String>) -> [(name: String, detail: String)] {
    let operatorNames = Set(Self.operators.map(\.name))
    var keys = self.keys
    if self == .rule {
      if !present.isDisjoint(with: Self.eventRuleKeys) {
        keys = Self.ruleKeys.filter { Self.eventRuleKeys.contains($0.name) }
      } else if !present.isDisjoint(with: Self.tipRuleKeys) {
        // A tip rule: `status` (with `for`) or `displayed`, not both.
        let allowed: Set<String> =
          present.contains("displayed")
          ? ["tip"] : present.isDisjoint(with: ["status", "for"]) ? Self.tipRuleKeys : ["tip", "status", "for"]
        keys = Self.ruleKeys.filter { allowed.contains($0.name) }
      } else if present.contains("parameter") {
        keys = present.isDisjoint(with: operatorNames) ? Self.operators : []
      } else if !present.isDisjoint(with: ["allOf", "anyOf", "not"]) {
        keys = []
      } else {
        // A tip rule's conditions are offered once it names its tip.
        keys = keys.filter { $0.name == "tip" || !Self.tipRuleKeys.contains($0.name) }
      }
    }
    return keys.filter { !present.contains($0.name) }
  }

  /// The values a member `key` of an object of this role takes from a fixed list.
  func enumeration(_ key: String) -> [String] {
    switch (self, key) {
    case (.catalog, "displayFrequency"): ["immediate", "hourly", "daily", "weekly", "monthly"]
    case (.tip, "sync"): ["local", "synced"]
    case (.group, "priority"): ["ordered", "firstAvailable"]
    case (.presentation, "style"): ["popover", "inline"]
    case (.presentation, "arrowEdge"): ["top", "bottom", "leading", "trailing"]
    case (.rule, "status"): ["invalidated"]
    default: []
    }
  }
}

/// The ids a catalog declares and uses, with their nodes, read from its syntax tree (so an unfinished edit still
/// completes and navigates).
struct CatalogOutline {
  struct Declaration {
    var id: String
    /// The `id` string's node.
    var idNode: Int
    /// The declaring object's node.
    var node: Int
    var description: String?
  }

  /// `events[i]`; nil when the catalog has no `events` list.
  var events: [Declaration]?
  var parameters: [Declaration] = []
  var tips: [Declaration] = []
  /// Every rule object of tips and templates.
  var rules: [Int] = []
  /// Every `event` string of those rules.
  var eventUses: [Int] = []

  init(_ tree: SyntaxTree) {
    let root = tree.root
    func declarations(_ key: String) -> [Declaration] {
      tree.elements(tree.member(root, key)).compactMap { element in
        guard let idNode = tree.member(element, "id"), tree[idNode].kind == .string else { return nil }
        return Declaration(
          id: tree[idNode].text, idNode: idNode, node: element, description: tree.string(element, "description"))
      }
    }
    if let list = tree.member(root, "events"), tree[list].kind == .array { events = declarations("events") }
    parameters = declarations("parameters")
    tips = declarations("tips")
    var rules: [Int] = []
    func visit(_ rule: Int) {
      guard tree[rule].kind == .object else { return }
      rules.append(rule)
      for key in ["allOf", "anyOf"] { tree.elements(tree.member(rule, key)).forEach(visit) }
      if let inner = tree.member(rule, "not") { visit(inner) }
    }
    for list in ["tips", "templates"] {
      for owner in tree.elements(tree.member(root, list)) { tree.elements(tree.member(owner, "rules")).forEach(visit) }
    }
    self.rules = rules
    eventUses = rules.compactMap { rule in
      guard let event = tree.member(rule, "event"), tree[event].kind == .string else { return nil }
      return event
    }
  }

  /// Event ids to offer: the declared ones, or without an `events` list those the rules use (but `excluding`, the
  /// string being typed, and template patterns).
  func eventCandidates(_ tree: SyntaxTree, excluding: Int?) -> [(id: String, detail: String?)] {
    if let events { return events.map { ($0.id, $0.description) } }
    var seen: Set<String> = []
    var out: [(id: String, detail: String?)] = []
    for use in eventUses where use != excluding {
      let id = tree[use].text
      guard !id.isEmpty, !id.contains("{"), seen.insert(id).inserted else { continue }
      out.append((id, "used by a rule (the catalog declares no events)"))
    }
    return out
  }
}
