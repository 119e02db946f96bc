import Foundation
public import TipsJSON
public import TipsProtocol
public import TipsRecords
public import TipsTransport

/// Where a device's token comes from (`--sync-token-command CMD` or `--sync-token-file F`): read before every
/// connection, so a token renewed meanwhile (a new file, a command that signs one in again) is the one presented.
public enum SyncTokenSource: Sendable, Equatable {
  /// A shell command whose standard output (trimmed) is the token.
  case command(String)
  /// A file holding the token (trimmed).
  case file(String)

  /// Reads the token now; throws what went wrong (never the token).
  public func read() throws(SyncTransportError) -> String {
    let text: String
    switch self {
    case .file(let path):
      guard let data = FileManager.default.contents(atPath: path) else {
        throw SyncTransportError("--sync-token-file \(path): cannot be read")
      }
      text = String(decoding: data, as: UTF8.self)
    case .command(let command):
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/bin/sh")
      process.arguments = ["-c", command]
      let output = Pipe()
      process.standardOutput = output
      process.standardInput = FileHandle.nullDevice
      do {
        try process.run()
      } catch {
        throw SyncTransportError("--sync-token-command: cannot run /bin/sh: \(error)")
      }
      let data = output.fileHandleForReading.readDataToEndOfFile()
      process.waitUntilExit()
      guard process.terminationStatus == 0 else {
        throw SyncTransportError("--sync-token-command exited with status \(process.terminationStatus)")
      }
      text = String(decoding: data, as: UTF8.self)
    }
    let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !token.isEmpty, !token.contains(where: \.isWhitespace) else {
      throw SyncTransportError("\(self.option): no token (empty, or more than one word)")
    }
    return token
  }

  /// Reads the token without blocking the loop: a command's output is read as it comes (its descriptor polled on the
  /// loop) and the command is given `timeout` seconds; a file is read at once. `done` is called later, on the loop.
  public func read(
    on loop: any EventLoop, timeout: Double = 30, _ done: @escaping (Result<String, SyncTransportError>) -> Void
  ) {
    guard case .command(let command) = self else {
      let result: Result<String, SyncTransportError>
      do {
        result = .success(try read())
      } catch {
        result = .failure(error)
      }
      let timer = loop.makeTimer()
      timer.start(afterMilliseconds: 0) {
        timer.close()
        done(result)
      }
      return
    }
    CommandOutput(command: command, option: option, loop: loop, timeout: timeout, done: done).start()
  }

  var option: String {
    switch self {
    case .command: "--sync-token-command"
    case .file(let path): "--sync-token-file \(path)"
    }
  }
}

/// A token command's run on the loop: its standard output read as the loop says it is readable, then its exit
/// awaited by polling (a command that closes its output and lingers is given `timeout` seconds in all).
private final class CommandOutput {
  let command: String
  let option: String
  let loop: any EventLoop
  let timeout: Double
  let done: (Result<String, SyncTransportError>) -> Void
  private let process = Process()
  private let pipe = Pipe()
  private var output: [UInt8] = []
  private var poll: (any LoopPoll)?
  private var timer: (any LoopTimer)?
  private var started: UInt64 = 0
  private var finished = false
  /// Kept alive until done.
  private var retained: CommandOutput?

  init(
    command: String, option: String, loop: any EventLoop, timeout: Double,
    done: @escaping (Result<String, SyncTransportError>) -> Void
  ) {
    self.command = command
    self.option = option
    self.loop = loop
    self.timeout = timeout
    self.done = done
  }

  func start() {
    retained = self
    started = loop.now
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    process.standardOutput = pipe
    process.standardInput = FileHandle.nullDevice
    do {
      try process.run()
    } catch {
      return later(.failure(SyncTransportError("\(option): cannot run /bin/sh: \(error)")))
    }
    let descriptor = pipe.fileHandleForReading.fileDescriptor
    _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    do {
      let poll = try loop.makePoll(fileDescriptor: descriptor)
      self.poll = poll
      poll.watch(.readable) { [unowned self] _ in self.readable() }
    } catch {
      process.terminate()
      return later(.failure(SyncTransportError("\(option): \(error.message)")))
    }
    let timer = loop.makeTimer()
    self.timer = timer
    timer.start(afterMilliseconds: 10, repeatEvery: 10) { [unowned self] in self.tick() }
  }

  private func readable() {
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(pipe.fileHandleForReading.fileDescriptor, $0.baseAddress, 4096) }
      if count > 0 {
        output += buffer[0..<count]
        if output.count > 64 * 1024 {
          process.terminate()
          return finish(.failure(SyncTransportError("\(option) printed more than 64 KiB")))
        }
        continue
      }
      if count == 0 {
        // End of output: the exit follows (polled by the timer).
        poll?.close()
        poll = nil
      }
      return
    }
  }

  private func tick() {
    if poll == nil, !process.isRunning {
      guard process.terminationStatus == 0 else {
        return finish(
          .failure(SyncTransportError("\(option) exited with status \(process.terminationStatus)")))
      }
      let token = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      guard !token.isEmpty, !token.contains(where: \.isWhitespace) else {
        return finish(.failure(SyncTransportError("\(option): no token (empty, or more than one word)")))
      }
      return finish(.success(token))
    }
    if Double(loop.now &- started) / 1000 > timeout {
      process.terminate()
      finish(.failure(SyncTransportError("\(option) did not finish within \(Int(timeout)) s")))
    }
  }

  private func later(_ result: Result<String, SyncTransportError>) {
    let timer = loop.makeTimer()
    self.timer = timer
    timer.start(afterMilliseconds: 0) { [unowned self] in self.finish(result) }
  }

  private func finish(_ result: Result<String, SyncTransportError>) {
    guard !finished else { return }
    finished = true
    poll?.close()
    poll = nil
    timer?.close()
    timer = nil
    try? pipe.fileHandleForReading.close()
    done(result)
    retained = nil
  }
}

/// The sync pump's transport through a hosted node (`--sync wss://…`): JSON-RPC 2.0 over a WebSocket
/// (``WebSocketClient``), signed in with the user's token (`initialize`'s `auth.token`), `sync/pull` and `sync/push`
/// on the token's account, `sync/changed` as the account's notification. No database credential is involved: the
/// node checks every operation and the account is the token's.
///
/// A refusal of the token (-32013: expired, revoked), or the session's end the node announces with id null, gives the
/// connection up like a lost one: the pump connects again, and the token is read again first.
public final class NodeSyncTransport: SyncTransport {
  public let url: WebSocketURL
  let tokenSource: SyncTokenSource
  /// The token's account, which the node must confirm at sign-in.
  let account: String
  let device: String
  private let loop: any EventLoop
  private var client: WebSocketClient?
  private var events: SyncTransportEvents?
  private var pending: [Int64: (Result<JSONValue, SyncTransportError>) -> Void] = [:]
  private var nextID: Int64 = 0
  private var token: String?
  /// `--sync-token-file`: its directory watched, so a renewed token reaches the node (`auth/refresh`) at once.
  private var watcher: FileWatcher?
  private var refreshTimer: (any LoopTimer)?
  private var signedIn = false

  public init(loop: any EventLoop, url: WebSocketURL, tokenSource: SyncTokenSource, account: String, device: String) {
    self.loop = loop
    self.url = url
    self.tokenSource = tokenSource
    self.account = account
    self.device = device
  }

  public var redacted: String { url.description }
  public var peerName: String { "the hosted node" }

  public func open(_ events: SyncTransportEvents) {
    close()
    self.events = events
    let fail = { [weak self] (message: String) in
      // Later, never inside open: the pump is in the middle of its own action.
      let timer = self?.loop.makeTimer()
      timer?.start(afterMilliseconds: 0) { [weak self] in
        timer?.close()
        guard let self, let events = self.events else { return }
        self.events = nil
        events.failed(message)
      }
    }
    guard let uv = loop as? UVLoop else { return fail("a hosted node is reached on the daemon's libuv loop only") }
    opening += 1
    let attempt = opening
    tokenSource.read(on: loop) { [weak self] result in
      guard let self, self.opening == attempt, self.events != nil else { return }
      switch result {
      case .failure(let error): fail(error.message)
      case .success(let token):
        self.token = token
        self.connect(uv)
      }
    }
  }

  /// Counts ``open(_:)`` calls, so a token read for one replaced since is dropped.
  private var opening = 0

  private func connect(_ uv: UVLoop) {
    let client = self.client ?? WebSocketClient(loop: uv)
    self.client = client
    client.onOpen = { [weak self] in self?.events?.ready() }
    client.onMessage = { [weak self] bytes in self?.received(bytes) }
    client.onClose = { [weak self] reason in self?.lost(reason) }
    client.connect(to: url, subprotocol: AccessPolicy.subprotocol)
  }

  public func close() {
    events = nil
    signedIn = false
    let waiting = pending
    pending = [:]
    _ = waiting  // their connection is given up: nothing more is reported for it
    client?.close(reason: "closed")
  }

  private func lost(_ reason: String) {
    pending = [:]
    signedIn = false
    guard let events else { return }
    self.events = nil
    events.failed("\(url): \(reason)")
  }

  // MARK: Steps

  public func handshake(_ done: @escaping (Result<(version: Int, supported: Int), SyncTransportError>) -> Void) {
    guard let token else { return done(.failure(SyncTransportError("no token"))) }
    let params: JSONValue = .object([
      "protocolVersion": .string(ProtocolVersion.current),
      "clientInfo": .object(["name": .string("tipsd-device-sync")]),
      "auth": .object(["token": .string(token)]),
    ])
    request(InitializeRequest.method, params) { [weak self] result in
      guard let self else { return }
      done(
        result.flatMap { value -> Result<(version: Int, supported: Int), SyncTransportError> in
          let signedIn = value["auth"]?["account"]?.stringValue
          guard signedIn == self.account else {
            return .failure(
              SyncTransportError(
                "the node signed the token in as \(signedIn.map { "account \"\($0)\"" } ?? "no account"), "
                  + "not account \"\(self.account)\""))
          }
          self.notify(InitializedNotification.method)
          self.signedIn = true
          self.watchTokenFile()
          return .success((0, 0))
        })
    }
  }

  /// Watches the token file's directory (once): when the file changes while signed in, the new token replaces the
  /// session's (`auth/refresh`); a refused one gives the connection up (the next one reads the file again).
  private func watchTokenFile() {
    guard watcher == nil, case .file(let path) = tokenSource, let uv = loop as? UVLoop else { return }
    let url = URL(fileURLWithPath: path)
    let name = url.lastPathComponent
    watcher = try? uv.watch(url.deletingLastPathComponent().path) { [weak self] changed in
      guard let self, changed == nil || changed == name else { return }
      // Debounced: a save is several writes and a rename.
      let timer = self.refreshTimer ?? self.loop.makeTimer()
      timer.keepsLoopAlive = false
      self.refreshTimer = timer
      timer.start(afterMilliseconds: 100) { [weak self] in self?.tokenFileChanged() }
    }
  }

  private func tokenFileChanged() {
    guard signedIn, let renewed = try? tokenSource.read(), renewed != token else { return }
    token = renewed
    request(AuthRefreshRequest.method, .object(["token": .string(renewed)])) { [weak self] result in
      guard let self, case .failure(let error) = result else { return }
      self.client?.close(reason: "the renewed token was refused: \(error.message)")
      self.lost("the renewed token was refused: \(error.message)")
    }
  }

  public func listen(_ done: @escaping (Result<Void, SyncTransportError>) -> Void) {
    // The node subscribes the session to sync/changed with its first pull, which follows at once.
    done(.success(()))
  }

  public func pull(
    after cursor: Int64, limit: Int, _ done: @escaping (Result<PulledOperations, SyncTransportError>) -> Void
  ) {
    let request = SyncPullRequest(device: device, after: cursor, limit: limit)
    self.request(SyncPullRequest.method, request.encodedParams) { result in
      done(result.flatMap { Self.pulled($0) })
    }
  }

  /// A `sync/pull` result as rows or a snapshot.
  public static func pulled(_ value: JSONValue) -> Result<PulledOperations, SyncTransportError> {
    let response: SyncPullRequest.Response
    do throws(ResultDecodingError) {
      response = try SyncPullRequest.Response(from: ResultReader(value, path: "result"))
    } catch {
      return .failure(SyncTransportError("sync/pull: an unreadable answer: \(error.message)"))
    }
    if let snapshot = response.snapshot {
      return .success(.snapshot(state: snapshot.jsonString, cursor: response.cursor))
    }
    return .success(
      .rows(
        response.operations.map {
          OperationRow(cursor: $0.cursor, device: $0.device, seq: $0.seq, payload: JSONValue.object($0.op).jsonString)
        }))
  }

  public func push(
    _ batch: [PendingOperation], _ done: @escaping (Result<Void, SyncTransportError>) -> Void
  ) {
    var ops: [SyncPushRequest.Operation] = []
    for operation in batch {
      let (seq, payload) = (operation.seq, operation.payload)
      guard case .object(let op)? = try? JSONParser.parse(payload) else {
        return done(.failure(SyncTransportError("push: the outbox's operation \(seq) is not a JSON object")))
      }
      ops.append(SyncPushRequest.Operation(seq: seq, op: op))
    }
    pushChunks(Self.chunks(ops, payloads: batch.map(\.payload))[...], done)
  }

  /// At most this many bytes of operations in one `sync/push` (the node reads messages of 1 MiB at most).
  public static let maxPushBytes = 256 * 1024

  /// The batch in pushes of at most ``maxPushBytes`` of operations and ``SyncPushRequest/maxOperations`` each (one
  /// operation a push at least).
  public static func chunks(_ ops: [SyncPushRequest.Operation], payloads: [String]) -> [[SyncPushRequest.Operation]] {
    var chunks: [[SyncPushRequest.Operation]] = []
    var current: [SyncPushRequest.Operation] = []
    var bytes = 0
    for (op, payload) in zip(ops, payloads) {
      let size = payload.utf8.count + 32
      if !current.isEmpty && (bytes + size > maxPushBytes || current.count == SyncPushRequest.maxOperations) {
        chunks.append(current)
        current = []
        bytes = 0
      }
      current.append(op)
      bytes += size
    }
    if !current.isEmpty { chunks.append(current) }
    return chunks
  }

  /// One push after the other (each idempotent: a failure part-way is repeated whole by the next attempt).
  private func pushChunks(
    _ chunks: ArraySlice<[SyncPushRequest.Operation]>, _ done: @escaping (Result<Void, SyncTransportError>) -> Void
  ) {
    guard let first = chunks.first else { return done(.success(())) }
    request(SyncPushRequest.method, SyncPushRequest(device: device, ops: first).encodedParams) { [weak self] result in
      switch result {
      case .failure(let error): done(.failure(error))
      case .success: self?.pushChunks(chunks.dropFirst(), done)
      }
    }
  }

  // MARK: JSON-RPC

  private func request(
    _ method: String, _ params: JSONValue?, _ done: @escaping (Result<JSONValue, SyncTransportError>) -> Void
  ) {
    guard let client, events != nil else { return }
    nextID += 1
    pending[nextID] = done
    var message: JSONObject = ["jsonrpc": .string("2.0"), "id": .int(nextID), "method": .string(method)]
    if let params { message["params"] = params }
    client.send(Array(JSONValue.object(message).jsonString.utf8))
  }

  private func notify(_ method: String) {
    let message: JSONObject = ["jsonrpc": .string("2.0"), "method": .string(method)]
    client?.send(Array(JSONValue.object(message).jsonString.utf8))
  }

  /// What a message from the node means for the transport.
  public enum Incoming: Equatable {
    case result(id: Int64, JSONValue)
    case error(id: Int64, code: Int, message: String)
    /// An error answering no request: the node is closing the session (its token expired, its account deleted).
    case sessionEnded(code: Int, message: String)
    /// `sync/changed`.
    case changed
    /// Anything else (other notifications; a stray answer).
    case ignored
    case unreadable(String)
  }

  /// Decodes one message from the node.
  public static func decode(_ bytes: [UInt8]) -> Incoming {
    guard let value = try? JSONParser.parse(bytes), case .object(let object) = value else {
      return .unreadable("not a JSON object")
    }
    if let method = object["method"]?.stringValue {
      return method == SyncChangedNotification.method ? .changed : .ignored
    }
    if let error = object["error"]?.objectValue {
      let code = Int(error["code"]?.intValue ?? 0)
      let message = error["message"]?.stringValue ?? "an error without a message"
      guard let id = object["id"]?.intValue else { return .sessionEnded(code: code, message: message) }
      return .error(id: id, code: code, message: message)
    }
    guard let id = object["id"]?.intValue, let result = object["result"] else { return .ignored }
    return .result(id: id, result)
  }

  private func received(_ bytes: [UInt8]) {
    switch Self.decode(bytes) {
    case .result(let id, let value):
      pending.removeValue(forKey: id)?(.success(value))
    case .error(let id, let code, let message):
      pending.removeValue(forKey: id)?(.failure(SyncTransportError("the node refused (\(code)): \(message)")))
    case .sessionEnded(let code, let message):
      client?.close(reason: "the node ended the session (\(code)): \(message)")
      lost("the node ended the session (\(code)): \(message)")
    case .changed:
      events?.changed()
    case .ignored:
      break
    case .unreadable(let problem):
      client?.close(reason: "an unreadable message: \(problem)")
      lost("an unreadable message from the node: \(problem)")
    }
  }
}
