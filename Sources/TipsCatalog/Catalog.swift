public import TipsEngine
public import TipsJSON
import TipsSystem

/// A declarative catalog file (`tipsd serve --catalog FILE`, schema in `protocol/schemas/catalog.json`):
///
/// ```json
/// {"displayFrequency": "daily",
///  "parameters": [{"id": "isLoggedIn", "default": false}],
///  "events": [{"id": "search.opened", "description": "The search screen appeared", "maxDonations": 500,
///              "maxAge": {"days": 30}}],
///  "locales": ["en", "ja"], "sourceLocale": "en",
///  "tips": [{"id": "filter.tip", "title": "You can narrow this down", "rules": [...]}],
///  "templates": [{"id": "trail.new.{trailId}", "title": "New: {trailName}", "rules": [...]}],
///  "groups": [{"id": "onboarding", "priority": "ordered", "tips": ["a.tip", "b.tip"]}]}
/// ```
///
/// Decoding is strict: unknown keys, malformed elements, duplicate ids and groups naming unknown tips are errors
/// that name the JSON path. ``CatalogLoader`` runs the same decoding element by element, collecting every problem,
/// then the lint checks.
public struct Catalog: Sendable {
  /// The global display frequency, when the catalog sets one.
  public var displayFrequency: DisplayFrequency?
  public var parameters: [ParameterDefinition] = []
  /// The events rules may read, or nil when the catalog declares no `events` list (then rules are not checked
  /// against it).
  public var events: [EventDeclaration]?
  /// The locales the app ships (`tipsd lint` checks each has every copy string); empty when not declared.
  public var locales: [String] = []
  /// The locale of the tips' own (inline) copy; `en` unless the catalog says otherwise.
  public var sourceLocale = "en"
  /// Tips in catalog order, message files applied, variants completed with the copy they inherit.
  public var tips: [TipDefinition] = []
  public var templates: [TipTemplate] = []
  public var groups: [TipGroupDefinition] = []
  /// Each tip's JSON as declared, by id: message files are applied to these, so that applying them again (a
  /// reload) starts from the catalog's own copy.
  var tipSources: [String: JSONObject] = [:]

  /// The top-level keys a catalog may have.
  public static let keys = [
    "$schema", "displayFrequency", "parameters", "events", "locales", "sourceLocale", "tips", "templates", "groups",
  ]

  /// An empty catalog.
  public init() {}

  /// Decodes a catalog; the first problem is thrown with its JSON path.
  public init(json: JSONValue) throws(EngineError) {
    let decoder = CatalogDecoder(json: json)
    if let issue = decoder.issues.first { throw .invalidDefinition(path: issue.path, message: issue.message) }
    self = decoder.catalog
  }

  /// Reads and decodes a catalog file and, with `messagesDirectory`, applies its message files (see
  /// ``MessageCatalog``). Errors name the file and the JSON path, never a value from the file.
  public init(path: String, messagesDirectory: String? = nil) throws(CatalogError) {
    let bytes: [UInt8]
    do {
      bytes = try System.readFile(path)
    } catch {
      throw CatalogError(file: path, message: "cannot read it: \(error.reason)")
    }
    let json: JSONValue
    do {
      json = try JSONParser.parse(bytes)
    } catch {
      throw CatalogError(file: path, message: "\(error)")
    }
    do {
      self = try Catalog(json: json)
    } catch {
      switch error {
      case .invalidDefinition(let errorPath, let message):
        throw CatalogError(file: path, path: errorPath, message: message)
      default: throw CatalogError(file: path, message: error.description)
      }
    }
    if let messagesDirectory {
      self = applying(try MessageCatalog.load(directory: messagesDirectory))
    }
  }

  /// The template whose id pattern is `id`.
  public func template(_ id: String) -> TipTemplate? {
    templates.first { $0.id == id }
  }

  /// Registers everything with the engine: display frequency, parameters, each declared event's `maxDonations` and
  /// `maxAge`, tips and groups. Templates are not registered: they become tips when instantiated.
  public func register(in engine: Engine) throws(EngineError) -> Mutation {
    var mutation = Mutation()
    func add(_ next: Mutation) {
      mutation.changes += next.changes
      mutation.writes += next.writes
    }
    if let displayFrequency { add(engine.configure(displayFrequency: displayFrequency)) }
    add(try engine.defineParameters(parameters))
    for event in events ?? [] {
      if let limit = event.maxDonations { add(try engine.setDonationLimit(event.id, limit)) }
      if let maxAge = event.maxAge { add(try engine.setDonationMaxAge(event.id, maxAge)) }
    }
    add(try engine.register(tips))
    for group in groups { add(try engine.registerGroup(group)) }
    return mutation
  }

  /// This catalog with translators' message files applied (see ``MessageCatalog``): a file's key overrides the
  /// inline localization of its locale; the source locale's file overrides the tips' own copy. Keys that name
  /// nothing in the catalog are skipped (`tipsd lint` reports them). Always starts from the catalog's own copy,
  /// so applying a newer set of files replaces the older one.
  public func applying(_ messages: MessageCatalog) -> Catalog {
    let originals = tips.map { tipSources[$0.id] ?? ($0.json.objectValue ?? [:]) }
    var tipObjects = originals
    var templateObjects = templates.map { $0.json }
    let resolver = CopyResolver(tips: tipObjects, templates: templateObjects)
    for file in messages.files {
      let locale: String? = file.locale == sourceLocale ? nil : file.locale
      for entry in file.entries {
        guard case .success(let target) = resolver.resolve(entry.key) else { continue }
        switch target.owner {
        case .tip(let index):
          Copy.set(&tipObjects[index], target.member, locale: locale, sourceLocale: sourceLocale, to: entry.value)
        case .template(let index):
          Copy.set(&templateObjects[index], target.member, locale: locale, sourceLocale: sourceLocale, to: entry.value)
        }
      }
    }
    var catalog = self
    for (index, object) in tipObjects.enumerated() {
      guard let tip = try? TipDefinition(json: .object(object), path: "tips[\(index)]") else { continue }
      catalog.tips[index] = tip
      catalog.tipSources[tip.id] = originals[index]
    }
    for (index, object) in templateObjects.enumerated() {
      if let template = try? TipTemplate(json: .object(object), path: "templates[\(index)]") {
        catalog.templates[index] = template
      }
    }
    return catalog
  }
}

/// A declared event (`events` in a catalog): the one namespace seed 000 asks for, so rules cannot drift into
/// `serach.opened`.
public struct EventDeclaration: Sendable, Hashable {
  /// The event id rules and `events/donate` use.
  public var id: String
  /// What happened in the app when it is donated (for people reading the catalog).
  public var description: String
  /// How many donations are kept (newest first) for `within`, `where` and `largestGroupBy` rules; the engine's
  /// default (1000) when nil. Applied with `Engine.setDonationLimit` at registration.
  public var maxDonations: Int?
  /// iOS 26's maximum age, seconds: older donations are invisible to the event's rules and dropped. Applied with
  /// `Engine.setDonationMaxAge` at registration.
  public var maxAge: Double?

  public init(id: String, description: String, maxDonations: Int? = nil, maxAge: Double? = nil) {
    self.id = id
    self.description = description
    self.maxDonations = maxDonations
    self.maxAge = maxAge
  }

  /// Decodes `{id, description, maxDonations?: int >= 1, maxAge?: {minutes|hours|days|weeks: n}}`.
  public init(json: JSONValue, path: String) throws(EngineError) {
    guard case .object(let object) = json else {
      throw JSONPath.fail(path, "expected an object, got \(json.typeName)")
    }
    for (key, _) in object where !["id", "description", "maxDonations", "maxAge"].contains(key) {
      throw JSONPath.fail(path, "unknown key \"\(key)\"")
    }
    guard case .string(let id)? = object["id"], !id.isEmpty else {
      throw JSONPath.fail(JSONPath.join(path, "id"), "expected a non-empty string")
    }
    guard case .string(let description)? = object["description"], !description.isEmpty else {
      throw JSONPath.fail(JSONPath.join(path, "description"), "expected a non-empty string saying what the event means")
    }
    var maxDonations: Int?
    if let value = object["maxDonations"], !value.isNull {
      guard let count = value.intValue, count >= 1, let exact = Int(exactly: count) else {
        throw JSONPath.fail(JSONPath.join(path, "maxDonations"), "expected an integer of at least 1")
      }
      maxDonations = exact
    }
    var maxAge: Double?
    if let value = object["maxAge"], !value.isNull {
      maxAge = try EventRule.duration(value, JSONPath.join(path, "maxAge"))
    }
    self.init(id: id, description: description, maxDonations: maxDonations, maxAge: maxAge)
  }

  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id), "description": .string(description)]
    if let maxDonations { object["maxDonations"] = .int(Int64(maxDonations)) }
    if let maxAge { object["maxAge"] = EventRule.durationJSON(maxAge) }
    return .object(object)
  }
}
