#if canImport(Glibc)
  import Glibc
#endif
import TipsEngine
import TipsJSON
import TipsSystem

/// A declarative catalog file (`--catalog FILE`, schema in `protocol/schemas/catalog.json`):
///
/// ```json
/// {"displayFrequency": "daily",
///  "parameters": [{"id": "isLoggedIn", "default": false}],
///  "tips": [{"id": "filter.tip", "title": "You can narrow this down", "rules": [...]}],
///  "groups": [{"id": "onboarding", "priority": "ordered", "tips": ["a", "b"]}]}
/// ```
struct Catalog {
  var displayFrequency: DisplayFrequency?
  var parameters: [ParameterDefinition] = []
  var tips: [TipDefinition] = []
  var groups: [TipGroupDefinition] = []

  static let keys: Set<String> = ["$schema", "displayFrequency", "parameters", "tips", "groups"]

  /// Reads and validates a catalog file; errors name the file and the offending path.
  static func load(path: String) throws(ServerError) -> Catalog {
    let bytes: [UInt8]
    do {
      bytes = try System.readFile(path)
    } catch {
      throw ServerError("catalog \(path): cannot read it: \(error.reason)")
    }
    let json: JSONValue
    do {
      json = try JSONParser.parse(bytes)
    } catch {
      throw ServerError("catalog \(path): \(error)")
    }
    do {
      return try Catalog(json: json)
    } catch {
      // Decoding errors name the path and the problem, never a value from the file (catalog strings — unreleased
      // copy, a secret pasted by mistake — would end up in logs).
      throw ServerError("catalog \(path): \(error)")
    }
  }

  init(json: JSONValue) throws(EngineError) {
    guard let object = json.objectValue else {
      throw .invalidDefinition(path: "$", message: "a catalog must be a JSON object")
    }
    for key in object.keys where !Self.keys.contains(key) {
      throw .invalidDefinition(
        path: key, message: "unknown key (expected displayFrequency, parameters, tips, groups)")
    }
    if let value = object["displayFrequency"] {
      guard let name = value.stringValue, let frequency = DisplayFrequency(rawValue: name) else {
        throw .invalidDefinition(
          path: "displayFrequency", message: "must be one of immediate, hourly, daily, weekly, monthly")
      }
      displayFrequency = frequency
    }
    for (index, item) in try Self.list(object, "parameters").enumerated() {
      parameters.append(try ParameterDefinition(json: item, path: "parameters[\(index)]"))
    }
    var seen: Set<String> = []
    for (index, item) in try Self.list(object, "tips").enumerated() {
      let tip = try TipDefinition(json: item, path: "tips[\(index)]")
      guard seen.insert(tip.id).inserted else {
        throw .invalidDefinition(path: "tips[\(index)].id", message: "duplicate tip id \"\(tip.id)\"")
      }
      tips.append(tip)
    }
    for (index, item) in try Self.list(object, "groups").enumerated() {
      let path = "groups[\(index)]"
      guard let group = item.objectValue, let id = group["id"]?.stringValue, !id.isEmpty else {
        throw .invalidDefinition(path: path, message: "a group needs a non-empty string \"id\"")
      }
      guard let name = group["priority"]?.stringValue, let priority = GroupPriority(rawValue: name) else {
        throw .invalidDefinition(path: "\(path).priority", message: "must be \"ordered\" or \"firstAvailable\"")
      }
      guard let members = group["tips"]?.arrayValue else {
        throw .invalidDefinition(path: "\(path).tips", message: "must be an array of tip ids")
      }
      var tipIDs: [String] = []
      for (position, member) in members.enumerated() {
        guard let tipID = member.stringValue else {
          throw .invalidDefinition(path: "\(path).tips[\(position)]", message: "must be a string")
        }
        guard seen.contains(tipID) else {
          throw .invalidDefinition(path: "\(path).tips[\(position)]", message: "no tip \"\(tipID)\" in this catalog")
        }
        tipIDs.append(tipID)
      }
      groups.append(TipGroupDefinition(id: id, priority: priority, tipIDs: tipIDs))
    }
  }

  static func list(_ object: JSONObject, _ key: String) throws(EngineError) -> [JSONValue] {
    guard let value = object[key] else { return [] }
    guard let array = value.arrayValue else { throw .invalidDefinition(path: key, message: "must be an array") }
    return array
  }

  /// Registers everything with the engine.
  func register(in engine: Engine) throws(EngineError) -> Mutation {
    var mutation = Mutation()
    func add(_ next: Mutation) {
      mutation.changes += next.changes
      mutation.writes += next.writes
    }
    if let displayFrequency { add(engine.configure(displayFrequency: displayFrequency)) }
    add(try engine.defineParameters(parameters))
    add(engine.register(tips))
    for group in groups { add(try engine.registerGroup(group)) }
    return mutation
  }
}
