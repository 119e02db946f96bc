import Foundation
import TipsEmbedded
import TipsJSON
import TipsLogging
import TipsProtocol
import TipsServer
import TipsTransport

/// The `hosted` fuzz target's oracle: hosted mode's dispatcher (sessions, batches, sign-in) on a node with every
/// account in memory (`--hosted memory:`), on the embedded loop. The input is a script of steps — open a connection,
/// send a frame (a message or a batch built from the input: any method of the protocol, params naming other
/// accounts, other sessions' subscription ids, cursors, junk; or raw bytes), close one, let time pass, take the store
/// away or fail its next commit — against a fresh node. After every step: every request of the frame got exactly one
/// reply (unless the node closed the connection saying why), and nothing another account owns — its id — reaches a
/// connection signed in as someone else. Compiled into Fuzz/harness/HostedDispatcherHarness.swift by Fuzz/build.sh,
/// replayed over the seeds and regressions by `FuzzRegressions`. The tokens were minted once by PyJWT (HS256, `exp`
/// in 2100) with ``secret``.
enum HostedDispatcherFuzzOracle {
  typealias Check = (_ holds: Bool, _ message: () -> String) -> Void

  static let secret = "fuzz-dispatcher-secret-0123456789abcdef"
  static let admin = String(repeating: "5a", count: 32)
  static let accounts = ["acct-alpha-7f3a", "acct-bravo-91c2", "acct-carol-d04e"]
  static let tokens = [
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhY2N0LWFscGhhLTdmM2EiLCJhdWQiOiJmdXp6IiwiaXNzIjoiZnV6ei1pc3N1ZXIiLC"
      + "JpYXQiOjE3MDAwMDAwMDAsImV4cCI6NDEwMjQ0NDgwMH0.CIHa24c3ndd2UqqFRR4yimwlmHceEpM8frgArsrVcxc",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhY2N0LWJyYXZvLTkxYzIiLCJhdWQiOiJmdXp6IiwiaXNzIjoiZnV6ei1pc3N1ZXIiLC"
      + "JpYXQiOjE3MDAwMDAwMDAsImV4cCI6NDEwMjQ0NDgwMH0.SbKs6YdWsprl8hLut8u4RN_TbFLVNxRymJs7eGWhxbU",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhY2N0LWNhcm9sLWQwNGUiLCJhdWQiOiJmdXp6IiwiaXNzIjoiZnV6ei1pc3N1ZXIiLC"
      + "JpYXQiOjE3MDAwMDAwMDAsImV4cCI6NDEwMjQ0NDgwMH0.KyVDKV0porOL6LQJeZ4Drk9PX0bhVgP9En0qiv2er9w",
  ]
  static let catalog = #"""
    {"tips": [
      {"id": "filter.tip", "title": "Filter", "rules": [{"event": "search.opened", "count": {"gte": 2}}],
       "actions": [{"id": "learn", "title": "Learn"}]},
      {"id": "held.tip", "title": "Held", "rules": [{"event": "map.opened", "count": {"gte": 1}}],
       "goal": {"event": "search.opened", "within": {"hours": 1}},
       "variants": {"a": {"title": "A"}, "h": {"holdout": true}}}
    ],
     "parameters": [{"id": "flag", "default": false}],
     "events": [{"id": "search.opened", "description": "s"}, {"id": "map.opened", "description": "m"}]}
    """#

  /// The node's files (secret, admin token, catalog), written once per process.
  static let files: (secret: String, admin: String, catalog: String) = {
    let directory = NSTemporaryDirectory() + "tipsd-fuzz-hosted-\(getpid())"
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let paths = (secret: directory + "/secret", admin: directory + "/admin", catalog: directory + "/catalog.json")
    FileManager.default.createFile(atPath: paths.secret, contents: Data((secret + "\n").utf8))
    FileManager.default.createFile(atPath: paths.admin, contents: Data((admin + "\n").utf8))
    FileManager.default.createFile(atPath: paths.catalog, contents: Data(catalog.utf8))
    chmod(paths.secret, 0o600)
    chmod(paths.admin, 0o600)
    return paths
  }()

  static let methods = Messages.clientMethods

  final class Connection {
    let stream: EmbeddedStream
    var buffer: [UInt8] = []
    var signedAs: String?
    var closedSaying: String?
    var exited = false

    init(stream: EmbeddedStream) { self.stream = stream }
  }

  /// The input, read a byte at a time (zeros once it runs out).
  struct Script {
    let bytes: [UInt8]
    var index = 0
    var isEmpty: Bool { index >= bytes.count }
    mutating func next() -> UInt8 {
      defer { index += 1 }
      return index < bytes.count ? bytes[index] : 0
    }
    mutating func pick<T>(_ items: [T]) -> T { items[Int(next()) % items.count] }
    mutating func take(_ count: Int) -> [UInt8] {
      let end = min(bytes.count, index + count)
      defer { index = end }
      return index < end ? Array(bytes[index..<end]) : []
    }
  }

  static func check(_ input: [UInt8], _ check: Check) {
    var configuration = ServerConfiguration()
    var hosted = HostedConfiguration(server: HostedConfiguration.memory, node: "fuzz")
    hosted.jwtSecretFile = files.secret
    hosted.audiences = ["fuzz"]
    hosted.issuer = "fuzz-issuer"
    hosted.adminTokenFile = files.admin
    hosted.signInTimeout = 30
    configuration.hosted = hosted
    configuration.catalogPath = files.catalog
    configuration.allowTesting = true
    let loop = EmbeddedEventLoop()
    guard
      let server = try? Server(
        configuration: configuration, logger: Logger(level: .error, handler: DiscardingLogHandler()), loop: loop)
    else {
      check(false) { "the hosted node did not start" }
      return
    }
    server.start()
    loop.run()
    var connections: [Connection] = []
    var ids = 0
    var script = Script(bytes: input)
    var subscriptions: [String] = []
    var steps = 0
    while !script.isEmpty && steps < 64 {
      steps += 1
      switch script.next() % 8 {
      case 0 where connections.count < 4, 1 where connections.isEmpty:
        let stream = EmbeddedStream(loop: loop)
        server.accept(stream)
        connections.append(Connection(stream: stream))
      case 2 where !connections.isEmpty:
        let connection = script.pick(connections)
        connection.stream.peerClose()
        connections.removeAll { $0 === connection }
      case 3:
        loop.advance(seconds: Double(script.next() % 40))
      case 4:
        server.setMemoryStoreFaults(available: script.next() % 4 != 0, failNextCommits: Int(script.next() % 2))
      default:
        guard !connections.isEmpty else { continue }
        let connection = script.pick(connections)
        let (frame, requests) = makeFrame(&script, ids: &ids, subscriptions: subscriptions)
        connection.stream.send(frame + [0x0A])
        loop.run()
        let messages = read(connection)
        var answered: [String: Int] = [:]
        for message in messages {
          for part in message.arrayValue ?? [message] {
            if let id = part["id"], id != .null, part["method"] == nil {
              answered[id.jsonString, default: 0] += 1
              if let auth = part["result"]?["auth"], let object = auth.objectValue {
                connection.signedAs = object["admin"] == true ? "admin" : object["account"]?.stringValue
              }
              if let subscription = part["result"]?["subscription"]?.stringValue { subscriptions.append(subscription) }
            } else if part["id"] == .null, let reason = part["error"]?["data"]?["reason"]?.stringValue {
              connection.closedSaying = reason
            }
          }
          let text = message.jsonString
          if let own = connection.signedAs, own != "admin" {
            for other in accounts where other != own {
              check(!text.contains(other)) { "\(own)'s connection received \(other)'s data: \(text.prefix(400))" }
            }
          }
        }
        for (id, count) in answered { check(count == 1) { "request \(id) answered \(count) times" } }
        if connection.closedSaying == nil, !connection.exited, !connection.stream.hasClosed {
          for id in requests {
            check(answered[id] == 1) {
              "request \(id) got no reply (frame \(String(decoding: frame.prefix(300), as: UTF8.self)))"
            }
          }
        }
        if String(decoding: frame, as: UTF8.self).contains(#""exit""#) { connection.exited = true }
      }
    }
    for connection in connections { connection.stream.peerClose() }
    loop.run()
    server.beginStop()
    loop.advance(seconds: 3)
    server.closeDatastore()
  }

  /// Whole JSON messages the node wrote to the connection.
  static func read(_ connection: Connection) -> [JSONValue] {
    connection.buffer += connection.stream.receive()
    var messages: [JSONValue] = []
    while let newline = connection.buffer.firstIndex(of: 0x0A) {
      let line = Array(connection.buffer[..<newline])
      connection.buffer.removeFirst(newline + 1)
      if let message = try? JSONParser.parse(line) { messages.append(message) }
    }
    return messages
  }

  /// A frame and the ids (their JSON) of the requests it holds.
  static func makeFrame(_ script: inout Script, ids: inout Int, subscriptions: [String]) -> ([UInt8], [String]) {
    let kind = script.next() % 8
    if kind == 0 { return (script.take(Int(script.next() % 64)).filter { $0 != 0x0A }, []) }
    var messages: [JSONValue] = []
    var requests: [String] = []
    let count = kind < 5 ? 1 : Int(script.next() % 6)
    for _ in 0..<count {
      let (message, id) = makeMessage(&script, ids: &ids, subscriptions: subscriptions)
      messages.append(message)
      if let id { requests.append(id) }
    }
    let value: JSONValue = kind < 5 && messages.count == 1 ? messages[0] : .array(messages)
    return (value.serialized(), requests)
  }

  static func makeMessage(
    _ script: inout Script, ids: inout Int, subscriptions: [String]
  ) -> (JSONValue, String?) {
    let choice = script.next()
    let method = choice < 48 ? "initialize" : methods[Int(script.next()) % methods.count]
    var params: JSONObject = [:]
    switch method {
    case "initialize":
      params = ["protocolVersion": "1.3", "clientInfo": ["name": "fuzz"]]
      let who = script.next() % 6
      if who < 3 { params["auth"] = ["token": .string(tokens[Int(who)])] }
      if who == 3 { params["auth"] = ["token": .string(admin)] }
      if who == 4 { params["auth"] = ["token": .string(admin + "\u{0}")] }
    case "auth/refresh":
      params = ["token": .string(script.pick(tokens + [admin, "x.y.z"]))]
    default:
      for _ in 0..<Int(script.next() % 3) {
        let key = script.pick(["id", "ids", "event", "subscription", "after", "limit", "value", "reason", "watch"])
        params[key] = value(&script, subscriptions: subscriptions)
      }
    }
    if script.next() % 4 == 0 { params["account"] = .string(script.pick(accounts + ["", "nobody"])) }
    if script.next() % 8 == 0 { params["idempotencyKey"] = .string("k\(script.next() % 4)") }
    var message: JSONObject = ["jsonrpc": "2.0", "method": .string(method), "params": .object(params)]
    guard script.next() % 10 != 0 else { return (.object(message), nil) }
    ids += 1
    message["id"] = .int(Int64(ids))
    return (.object(message), JSONValue.int(Int64(ids)).jsonString)
  }

  static func value(_ script: inout Script, subscriptions: [String]) -> JSONValue {
    switch script.next() % 8 {
    case 0: .string(script.pick(["filter.tip", "held.tip", "search.opened", "map.opened", "flag", "learn"]))
    case 1: .array([.string(script.pick(["filter.tip", "held.tip", "nope"]))])
    case 2: subscriptions.isEmpty ? "sub-1" : .string(script.pick(subscriptions))
    case 3: .int(Int64(Int8(bitPattern: script.next())))
    case 4: .bool(script.next() % 2 == 0)
    case 5: .null
    case 6: .string(script.pick(accounts))
    default: .object(["x": .int(Int64(script.next()))])
    }
  }
}
