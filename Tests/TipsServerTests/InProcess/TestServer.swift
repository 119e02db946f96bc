import TipsEngine
import TipsFraming
import TipsJSON
import TipsLogging
import TipsProtocol
import TipsTestSupport
import TipsTransport

@testable import TipsServer

/// A ``Server`` on an ``EmbeddedEventLoop``: in-process, in-memory datastore, manual time, a memory log. Clients are
/// ``EmbeddedClient``s on in-memory streams. Nothing is asynchronous: after `loop.run()` everything that can happen
/// now has happened, so a test can assert that something did *not* happen simply by looking.
final class TestServer {
  let loop = EmbeddedEventLoop()
  let log = MemoryLogHandler()
  let server: Server
  let clock: EmbeddedClock

  init(_ configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
    var configuration = ServerConfiguration()
    configuration.datastorePath = ":memory:"
    configure(&configuration)
    clock = EmbeddedClock(loop: loop)
    server = try Server(
      configuration: configuration, logger: Logger(level: .debug, handler: log), loop: loop, clock: clock)
    server.start()
    loop.run()
  }

  /// A new connection (initialized unless told otherwise); `window` bounds the peer's receive buffer from the start
  /// (set `client.stream.window` later to make an initialized client slow). Its traffic goes to the traffic log
  /// (`TIPSD_TRAFFIC_LOG`, checked against protocol/openrpc.json by `make test`) like a process client's.
  func connect(
    framing: Framing = .newline, initialize: Bool = true, window: Int? = nil, primary: Bool = false,
    locale: String? = nil, file: String = #filePath, function: String = #function, line: Int = #line
  ) throws -> EmbeddedClient {
    let stream = EmbeddedStream(loop: loop)
    stream.window = window
    server.accept(stream, primary: primary)
    let client = EmbeddedClient(stream: stream, loop: loop, framing: framing)
    client.tap = TrafficTap.fromEnvironment(
      peer: TrafficTap.embeddedPeer(framing: framing), file: file, function: function, line: line)
    loop.run()
    if initialize { try client.initialize(locale: locale) }
    return client
  }

  /// Whether a log record's message contains `text`.
  func logged(_ text: String, level: LogLevel? = nil) -> Bool {
    log.records.contains { $0.message.contains(text) && (level == nil || $0.level == level) }
  }

  /// The log, for failure messages.
  var logText: String { log.records.map { "\($0.level) \($0.message) \($0.metadata)" }.joined(separator: "\n") }
}

let toggleTip: JSONValue = ["id": "toggle.tip", "title": "Toggle", "rules": [["parameter": "flag", "eq": true]]]

extension EmbeddedClient {
  /// The error a request is refused with; a failure when it gets a result instead.
  func refusal(_ method: String, _ params: JSONValue? = nil) throws -> ResponseError {
    let reply = try call(method, params)
    guard let error = reply["error"].flatMap(ResponseError.init(json:)) else {
      throw TestFailure("\(method) was not refused: \(reply.jsonString)")
    }
    return error
  }

  /// Defines the `flag` parameter and registers `toggle.tip`, which shows while it is true.
  func registerToggle() throws {
    try result("parameters/define", ["parameters": [["id": "flag", "default": false]]])
    try result("tips/register", ["tips": [toggleTip]])
  }

  /// The `seq` and `shouldDisplay` of each `tips/shouldDisplayChanged` taken from the inbox.
  func takeShouldDisplay() -> [(seq: Int64, value: Bool)] {
    takeNotifications("tips/shouldDisplayChanged").map {
      ($0["params"]?["seq"]?.intValue ?? -1, $0["params"]?["shouldDisplay"]?.boolValue ?? false)
    }
  }
}
