import Foundation
import Testing
import TipsEngine
import TipsJSON
import TipsProtocol

/// The repository root (for protocol/openrpc.json and the clients' sources).
private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent()

private func readJSON(_ relativePath: String) throws -> JSONValue {
  try JSONParser.parse(Array(try Data(contentsOf: repositoryRoot.appendingPathComponent(relativePath))))
}

private func bytewise(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

/// `Messages` is the one registry of the protocol's types; these tests hold it, protocol/openrpc.json and the two
/// clients' method lists to each other, both ways.
@Suite struct RegistryTests {
  let document: JSONValue
  let components: JSONObject

  init() throws {
    document = try readJSON("protocol/openrpc.json")
    components = document["components"]?["schemas"]?.objectValue ?? [:]
  }

  /// The document's methods by name.
  var methods: [String: JSONValue] {
    var byName: [String: JSONValue] = [:]
    for method in document["methods"]?.arrayValue ?? [] {
      if let name = method["name"]?.stringValue { byName[name] = method }
    }
    return byName
  }

  /// A schema with `$ref`s to `#/components/schemas/…` resolved (one level), and the component's name if any.
  func resolve(_ schema: JSONValue?) -> (schema: JSONValue?, name: String?) {
    guard let ref = schema?["$ref"]?.stringValue, ref.hasPrefix("#/components/schemas/") else { return (schema, nil) }
    let name = String(ref.dropFirst("#/components/schemas/".count))
    return (components[name], name)
  }

  /// Compares an object shape with a schema's `properties` and `required`.
  func expectShape(
    _ shape: ObjectShape, _ schema: JSONValue?, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let properties = Set(schema?["properties"]?.objectValue?.keys ?? [])
    let required = Set((schema?["required"]?.arrayValue ?? []).compactMap(\.stringValue))
    #expect(
      Set(shape.members) == properties, "\(what): members \(shape.members) vs schema \(properties.sorted())",
      sourceLocation: sourceLocation)
    #expect(
      shape.required == required, "\(what): required \(shape.required.sorted()) vs schema \(required.sorted())",
      sourceLocation: sourceLocation)
  }

  /// One protocol version: what every Swift client sends and the daemon answers is the document's.
  @Test func theProtocolVersionIsTheDocuments() {
    #expect(document["info"]?["version"]?.stringValue == ProtocolVersion.current)
    #expect(InitializeRequest(clientName: "x").protocolVersion == ProtocolVersion.current)
  }

  @Test func listsAreSortedAndUnique() {
    let requests = Messages.requests.map { $0.method }
    #expect(requests == requests.sorted(by: bytewise))
    #expect(Set(requests).count == requests.count)
    let notifications = Messages.clientNotifications.map { $0.method }
    #expect(notifications == notifications.sorted(by: bytewise))
    #expect(Messages.serverNotificationMethods == Messages.serverNotificationMethods.sorted(by: bytewise))
    #expect(Messages.clientMethods == (requests + notifications).sorted(by: bytewise))
    #expect(Set(requests).isDisjoint(with: notifications))
  }

  /// Every method of the document is in the registry, and every registered method is in the document.
  @Test func methodNamesMatchTheDocument() {
    let documented = Set(methods.keys)
    let registered = Set(Messages.clientMethods)
    #expect(
      documented.subtracting(registered).isEmpty,
      "documented but not registered: \(documented.subtracting(registered).sorted())")
    #expect(
      registered.subtracting(documented).isEmpty,
      "registered but not documented: \(registered.subtracting(documented).sorted())")
    let notes = Set((document["x-notifications"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
    #expect(notes == Set(Messages.serverNotificationMethods))
  }

  @Test(arguments: Messages.requests.map { $0.method })
  func paramsMatchTheDocument(method: String) throws {
    let type = try #require(Messages.requestsByMethod[method])
    let entry = try #require(methods[method])
    let documented = (entry["params"]?.arrayValue ?? []).map {
      ParamSpec(name: $0["name"]?.stringValue ?? "?", required: $0["required"]?.boolValue ?? false)
    }
    #expect(type.params == documented, "\(method): \(type.params) vs \(documented)")
    // Positional params are what the document calls paramStructure "either".
    #expect((entry["paramStructure"]?.stringValue == "either") == !type.positionalParams.isEmpty)
    for name in type.positionalParams { #expect(type.params.contains { $0.name == name }) }
  }

  @Test func clientNotificationParamsMatchTheDocument() throws {
    for type in Messages.clientNotifications {
      let entry = try #require(methods[type.method])
      let documented = (entry["params"]?.arrayValue ?? []).map {
        ParamSpec(name: $0["name"]?.stringValue ?? "?", required: $0["required"]?.boolValue ?? false)
      }
      #expect(type.params == documented, "\(type.method)")
    }
  }

  @Test(arguments: Messages.requests.map { $0.method })
  func resultShapeMatchesTheDocument(method: String) throws {
    let type = try #require(Messages.requestsByMethod[method])
    let schema = methods[method]?["result"]?["schema"]
    switch Self.shape(of: type) {
    case .null:
      #expect(schema?["type"] == "null", "\(method): \(schema?.jsonString ?? "nil")")
    case .document:
      #expect(schema?["$ref"]?.stringValue?.contains("open-rpc/meta-schema") == true, "\(method)")
    case .object(let shape, let name):
      let (resolved, component) = resolve(schema)
      #expect(component == name, "\(method): result schema \(component ?? "inline") vs \(name ?? "inline")")
      expectShape(shape, resolved, method)
    }
  }

  private static func shape<R: RequestType>(of type: R.Type) -> ResultShape { R.Response.shape }

  @Test func notificationShapesMatchTheDocument() {
    for type in Messages.serverNotifications {
      let entry = (document["x-notifications"]?.arrayValue ?? []).first { $0["name"]?.stringValue == type.method }
      expectShape(type.paramsShape, resolve(entry?["x-params-schema"]).schema, type.method)
    }
  }

  /// The payloads inside results have the document's shapes too.
  @Test func nestedShapesMatchTheDocument() {
    expectShape(TipStateInfo.objectShape, resolve(["$ref": "#/components/schemas/TipState"]).schema, "TipState")
    expectShape(TipContent.shape, resolve(["$ref": "#/components/schemas/TipContent"]).schema, "TipContent")
    expectShape(ActionInfo.shape, resolve(["$ref": "#/components/schemas/Action"]).schema, "Action")
    expectShape(
      GroupCurrentTip.shape, resolve(["$ref": "#/components/schemas/GroupCurrentTip"]).schema, "GroupCurrentTip")
    expectShape(
      InitializeRequest.Response.capabilitiesShape, resolve(["$ref": "#/components/schemas/Capabilities"]).schema,
      "Capabilities")
  }

  /// What the types write has the members their shapes declare (optional ones may be absent).
  @Test func encodingsHaveTheirShapes() throws {
    func keys(_ value: JSONValue) -> Set<String> { Set(value.objectValue?.keys ?? []) }
    func check(_ value: JSONValue, _ shape: ObjectShape, _ what: String) {
      let written = keys(value)
      #expect(written.isSubset(of: Set(shape.members)), "\(what) wrote \(written.sorted())")
      #expect(shape.required.isSubset(of: written), "\(what) lacks \(shape.required.subtracting(written).sorted())")
    }
    let content = TipContent(
      TipDefinition(id: "t", title: "T", actions: [TipAction(id: "a", title: "A")]), id: "t", locale: nil)
    let pending = TipStateInfo(
      id: "t", shouldDisplay: false, status: .pending, displayCount: 0, displayedDuration: 0, tip: content)
    let closed = TipStateInfo(
      id: "t", shouldDisplay: false, status: .invalidated(.tipClosed), displayCount: 1, displayedDuration: 2,
      tip: content)
    check(pending.json, TipStateInfo.objectShape, "TipState (pending)")
    check(closed.json, TipStateInfo.objectShape, "TipState (invalidated)")
    #expect(closed.json["reason"] == "tipClosed" && pending.json["reason"] == nil)
    check(closed.json["tip"] ?? nil, TipContent.shape, "TipContent")
    check(closed.json["tip"]?["actions"]?[0] ?? nil, ActionInfo.shape, "Action")
    var writer = JSONWriter()
    ShouldDisplayChangedNotification(
      subscription: "sub-1", seq: 3, id: "t", shouldDisplay: false, status: StatusInfo(.invalidated(.tipClosed)),
      tip: content
    ).writeParams(to: &writer)
    check(try JSONParser.parse(writer.bytes), ShouldDisplayChangedNotification.paramsShape, "tips/shouldDisplayChanged")
    let initialize = InitializeRequest.Response(
      protocolVersion: "1.0", serverVersion: "0", framings: [], virtualClock: false, maxMessageSize: 1,
      notifications: [],
      methods: [])
    check(initialize.json, ObjectShape(["protocolVersion", "serverInfo", "capabilities"]), "InitializeResult")
    check(initialize.json["capabilities"] ?? nil, InitializeRequest.Response.capabilitiesShape, "Capabilities")
    check(
      ObserveRequest.Response(subscription: "s", tips: [pending], groups: []).json,
      ObjectShape(["subscription", "tips", "groups"]), "ObserveResult")
  }

  /// The TypeScript client's `MethodMap` (one entry per request method) lists exactly the registry's requests.
  @Test func typeScriptMethodMapMatchesTheRegistry() throws {
    let source = try String(
      contentsOf: repositoryRoot.appendingPathComponent("clients/typescript/src/protocol.ts"), encoding: .utf8)
    let start = try #require(source.range(of: "export interface MethodMap {"))
    let end = try #require(source.range(of: "\n}", range: start.upperBound..<source.endIndex))
    let body = source[start.upperBound..<end.lowerBound]
    var names: [String] = []
    for line in body.split(separator: "\n") {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      guard let colon = trimmed.firstIndex(of: ":"), trimmed.contains("params:") else { continue }
      names.append(trimmed[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
    }
    #expect(Set(names) == Set(Messages.requests.map { $0.method }), "MethodMap: \(names.sorted())")
    #expect(names.count == Messages.requests.count)
  }

  /// Each language client states the protocol version it speaks once (`PROTOCOL_VERSION`), and it is the document's.
  /// (Each client's own suite also calls every method of the document through its wrapper.)
  @Test func clientsStateTheDocumentsProtocolVersion() throws {
    let documented = try #require(document["info"]?["version"]?.stringValue)
    for (path, prefix) in [
      ("clients/typescript/src/protocol.ts", "export const PROTOCOL_VERSION = \""),
      ("clients/python/src/tipsd_client/methods.py", "PROTOCOL_VERSION = \""),
    ] {
      let source = try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
      let statements = source.split(separator: "\n").filter { $0.hasPrefix(prefix) }
      #expect(statements.count == 1, "\(path): \(statements.count) statements of PROTOCOL_VERSION")
      let stated = statements.first.map { $0.dropFirst(prefix.count).prefix { $0 != "\"" } }
      #expect(stated.map(String.init) == documented, "\(path) speaks \(stated ?? "?"), the document \(documented)")
    }
  }

  /// The document's methods carrying the extension `key` (`x-account-free`, `x-idempotent`); requests only (no
  /// client-to-server notification) unless `notifications`.
  func marked(_ key: String, notifications: Bool = false) -> Set<String> {
    Set(
      methods.compactMap { name, method in
        guard method[key]?.boolValue == true, notifications || method["x-notification"]?.boolValue != true else {
          return nil
        }
        return name
      })
  }

  /// The string literals of the list that starts at `marker` in a client's source, up to the closing `end`.
  func literals(in path: String, after marker: String, end: String) throws -> Set<String> {
    let source = try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
    let start = try #require(source.range(of: marker), "\(path): \(marker)")
    let close = try #require(source.range(of: end, range: start.upperBound..<source.endIndex))
    var names: Set<String> = []
    for piece in source[start.upperBound..<close.lowerBound].split(separator: "\"").enumerated()
    where piece.offset % 2 == 1 {
      names.insert(String(piece.element))
    }
    return names
  }

  /// Both clients' lists of methods that act on no account (hosted mode: `account` is never added to them) and of
  /// changes sent with an `idempotencyKey` are the document's `x-account-free` and `x-idempotent` methods.
  @Test func clientsMethodListsAreTheDocuments() throws {
    #expect(!marked("x-account-free").isEmpty && !marked("x-idempotent").isEmpty)
    let lists: [(String, String, String, String)] = [
      ("clients/typescript/src/client.ts", "ACCOUNT_FREE: ReadonlySet<string> = new Set([", "]);", "x-account-free"),
      (
        "clients/typescript/src/client.ts", "IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([", "]);", "x-idempotent"
      ),
      ("clients/python/src/tipsd_client/connection.py", "ACCOUNT_FREE = frozenset(", "\n)", "x-account-free"),
      ("clients/python/src/tipsd_client/connection.py", "IDEMPOTENT_METHODS = frozenset(", "\n)", "x-idempotent"),
    ]
    for (path, marker, end, key) in lists {
      let listed = try literals(in: path, after: marker, end: end)
      #expect(listed == marked(key), "\(path) \(marker): \(listed.sorted()) vs the document's \(key)")
    }
  }

  /// The Python client's `METHODS` (every request method it can send) lists exactly the registry's requests.
  @Test func pythonMethodListMatchesTheRegistry() throws {
    let source = try String(
      contentsOf: repositoryRoot.appendingPathComponent("clients/python/src/tipsd_client/methods.py"), encoding: .utf8)
    let start = try #require(source.range(of: "METHODS = ("))
    let body = source[start.upperBound...].prefix { $0 != ")" }
    let names = body.split(separator: "\n").compactMap { line -> String? in
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      guard trimmed.hasPrefix("\"") else { return nil }
      return String(trimmed.dropFirst().prefix { $0 != "\"" })
    }
    #expect(names == Messages.requests.map { $0.method }, "METHODS: \(names)")
  }
}
