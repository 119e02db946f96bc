import TipsEmbedded
import TipsJSON
import TipsLogging
import TipsServer
import TipsSystem
import TipsTranscript

/// Runs one transcript against a fresh ``Server`` on an ``EmbeddedEventLoop``.
struct TranscriptRunner {
  /// `--catalog` for every transcript that does not name its own.
  var catalogPath: String?
  /// `--partial`.
  var partialByDefault = false

  static let defaultArgs = [
    "--datastore", ":memory:", "--clock", "virtual", "--clock-start", "1000000", "--allow-testing",
  ]

  func run(path: String) -> TranscriptResult {
    let name = Transcript.name(forPath: path)
    let text: String
    do {
      text = String(decoding: try System.readFile(path), as: UTF8.self)
    } catch {
      return TranscriptResult(
        name: name, path: path, status: .error, failure: .init(line: 0, message: "cannot read it: \(error.reason)"))
    }
    let transcript: Transcript
    do {
      transcript = try Transcript(text: text, path: path)
    } catch {
      return TranscriptResult(
        name: name, path: path, status: .error, failure: .init(line: error.line, message: error.message))
    }
    return run(transcript)
  }

  func run(_ transcript: Transcript) -> TranscriptResult {
    let started = System.monotonicSeconds()
    var session = TranscriptSession(transcript: transcript, partial: partialByDefault || transcript.partial)
    var result = session.run(catalogPath: catalogPath)
    result.seconds = System.monotonicSeconds() - started
    if transcript.knownBug != nil && result.status == .failed { result.status = .skipped }
    return result
  }
}

/// One run of a transcript: the daemon, its clients and the captured values.
struct TranscriptSession {
  let transcript: Transcript
  let matcher: PatternMatcher
  let loop = EmbeddedEventLoop()
  let log = MemoryLogHandler()
  var server: Server?
  var clients: [String: EmbeddedClient] = [:]
  var control: EmbeddedClient?
  var bindings: [String: JSONValue] = [:]

  init(transcript: Transcript, partial: Bool) {
    self.transcript = transcript
    self.matcher = PatternMatcher(partial: partial)
  }

  /// A failure that ends the run.
  struct Stop: Error {
    var failure: TranscriptResult.Failure
    var status: TranscriptResult.Status = .failed
  }

  mutating func run(catalogPath: String?) -> TranscriptResult {
    var status = TranscriptResult.Status.passed
    var failure: TranscriptResult.Failure?
    do {
      try start(catalogPath: catalogPath)
      for step in transcript.steps { try perform(step) }
      try finishChecks()
    } catch {
      status = error.status
      failure = error.failure
    }
    stopServer()
    let logText = log.records.suffix(40).map { record in
      ([record.level.description, record.message] + record.metadata.map { "\($0.0)=\($0.1)" }).joined(separator: " ")
    }.joined(separator: "\n")
    return TranscriptResult(
      name: transcript.name, path: transcript.path, status: status, failure: failure, steps: transcript.steps.count,
      log: status == .passed ? "" : logText)
  }

  // MARK: Daemon and clients

  private mutating func start(catalogPath: String?) throws(Stop) {
    var args = transcript.serveArgs ?? TranscriptRunner.defaultArgs
    args += transcript.args
    // Relative paths in a transcript's flags are relative to the transcript.
    let directory = System.splitPath(transcript.path).directory
    for (index, arg) in args.enumerated() where arg == "--catalog" && index + 1 < args.count {
      if !args[index + 1].hasPrefix("/") && System.fileExists("\(directory)/\(args[index + 1])") {
        args[index + 1] = "\(directory)/\(args[index + 1])"
      }
    }
    if !args.contains("--catalog"), let catalogPath { args += ["--catalog", catalogPath] }
    var configuration: ServerConfiguration
    do {
      configuration = try ServeCommand(parsing: ["--stdio"] + args, environment: [:]).configuration
    } catch {
      throw Stop(failure: .init(line: 0, message: "bad daemon flags: \(error)"), status: .error)
    }
    // Never the user's real datastore.
    if !args.contains("--datastore") { configuration.datastorePath = ":memory:" }
    do {
      server = try Server(configuration: configuration, logger: Logger(level: .info, handler: log), loop: loop)
    } catch {
      throw Stop(failure: .init(line: 0, message: "the daemon did not start: \(error)"), status: .error)
    }
    server?.start()
    loop.run()
  }

  /// The runner's own initialized connection (for `== advance`), made on first use.
  private mutating func controlClient(line: Int) throws(Stop) -> EmbeddedClient {
    if let control { return control }
    let stream = EmbeddedStream(loop: loop)
    server?.accept(stream, transport: "unix")
    let client = EmbeddedClient(stream: stream, loop: loop)
    loop.run()
    do {
      try client.initialize(name: "tipsd test")
    } catch {
      throw Stop(failure: .init(line: line, message: "the runner's own connection could not initialize: \(error)"))
    }
    control = client
    return client
  }

  private mutating func client(_ name: String) -> EmbeddedClient {
    if let client = clients[name] { return client }
    let stream = EmbeddedStream(loop: loop)
    // The default client is the daemon's stdio (its `exit` stops the daemon); named clients are socket clients.
    server?.accept(stream, primary: name.isEmpty, transport: name.isEmpty ? "stdio" : "unix")
    let client = EmbeddedClient(stream: stream, loop: loop)
    clients[name] = client
    loop.run()
    return client
  }

  private func drain(_ client: EmbeddedClient, line: Int) throws(Stop) {
    loop.run()
    do {
      try client.read()
    } catch {
      throw Stop(failure: .init(line: line, message: "the daemon sent bytes that do not frame: \(error)"))
    }
  }

  private func who(_ name: String) -> String { name.isEmpty ? "" : "\(name): " }

  // MARK: Steps

  private mutating func perform(_ step: Transcript.Step) throws(Stop) {
    if case .advance(let seconds) = step.kind { return try advance(seconds, line: step.line) }
    let client = client(step.client)
    switch step.kind {
    case .send(let text):
      client.sendRaw(try substitute(text, line: step.line))
      try drain(client, line: step.line)

    case .expect(let lines):
      try drain(client, line: step.line)
      var patterns: [JSONValue] = []
      for (text, line) in lines {
        let substituted = try substitute(text, line: line)
        do {
          patterns.append(try JSONParser.parse(Array(substituted.utf8)))
        } catch {
          throw Stop(
            failure: .init(line: line, message: "<-- line is not JSON after substitution: \(error)"), status: .error)
        }
      }
      let received = client.takeFirst(patterns.count)
      guard received.count == patterns.count else {
        let what = patterns.count == 1 ? "1 message" : "\(patterns.count) messages"
        throw Stop(
          failure: .init(
            line: step.line,
            message:
              "\(who(step.client))expected \(what), got \(received.count)\(received.isEmpty ? "" : ": \(received.map { $0.jsonString }.joined(separator: " "))")",
            diff: diff(patterns, received)))
      }
      var trial = bindings
      if matcher.matchUnordered(patterns, received, &trial) == nil {
        // Messages the block does not mention, ahead of the ones it does: name them as unexpected.
        let available = received + client.inbox
        var probe = bindings
        if available.count > patterns.count, let chosen = matcher.matchUnordered(patterns, available, &probe) {
          let extra = received.indices.filter { !chosen.contains($0) }.map { received[$0] }
          throw Stop(
            failure: .init(
              line: step.line,
              message:
                "\(who(step.client))unexpected message before the block: \(extra.map { $0.jsonString }.joined(separator: " "))",
              diff: diff(patterns, received)))
        }
        // Report each pattern's mismatch against the message in its position.
        var problems: [String] = []
        for (index, pattern) in patterns.enumerated() {
          var scratch = bindings
          if let problem = matcher.match(pattern, received[index], &scratch) {
            problems.append("line \(lines[index].line): \(problem)")
          }
        }
        if problems.isEmpty { problems = ["no assignment of the messages to the block's patterns matches"] }
        throw Stop(
          failure: .init(
            line: step.line, message: "\(who(step.client))message does not match: " + problems.joined(separator: "; "),
            diff: diff(patterns, received)))
      }
      bindings = trial

    case .nothing:
      try drain(client, line: step.line)
      let extra = client.takeAll()
      guard extra.isEmpty else {
        throw Stop(
          failure: .init(
            line: step.line,
            message: "\(who(step.client))expected nothing, got \(extra.map { $0.jsonString }.joined(separator: " "))",
            diff: diff([], extra)))
      }

    case .eof, .exit:
      try drain(client, line: step.line)
      let extra = client.takeAll()
      guard extra.isEmpty else {
        throw Stop(
          failure: .init(
            line: step.line,
            message:
              "\(who(step.client))expected the connection to close, got \(extra.map { $0.jsonString }.joined(separator: " "))"
          ))
      }
      if case .exit(let expected) = step.kind, step.client.isEmpty {
        guard loop.isStopped, let server else {
          throw Stop(
            failure: .init(
              line: step.line, message: "expected the daemon to exit with status \(expected); it is still running"))
        }
        let status: Int32 = server.exitStatus == .clean ? 0 : 1
        guard status == expected else {
          throw Stop(failure: .init(line: step.line, message: "expected exit status \(expected), got \(status)"))
        }
      } else if !client.stream.isClosed {
        throw Stop(
          failure: .init(
            line: step.line, message: "\(who(step.client))expected the daemon to close the connection; it is open"))
      }

    case .advance:
      break  // handled above
    }
  }

  /// `== advance`: `clock/advance` over a connection of the runner's own, so that the transcript's clients see only
  /// what the time change caused.
  private mutating func advance(_ seconds: Double, line: Int) throws(Stop) {
    let control = try controlClient(line: line)
    let id = control.sendRequest("clock/advance", ["seconds": JSONValue.number(seconds)])
    try drain(control, line: line)
    let reply: JSONValue
    do {
      reply = try control.takeReply(id: id)
    } catch {
      throw Stop(failure: .init(line: line, message: "clock/advance got no reply"))
    }
    if let error = reply["error"] {
      throw Stop(failure: .init(line: line, message: "clock/advance failed: \(error.jsonString)"))
    }
    _ = control.takeAll()
  }

  /// After the last step: nothing may be left unread on any connection.
  private func finishChecks() throws(Stop) {
    let last = transcript.steps.last?.line ?? 0
    loop.run()
    for name in clients.keys.sorted() {
      guard let client = clients[name] else { continue }
      try drain(client, line: last)
      let extra = client.takeAll()
      if !extra.isEmpty {
        throw Stop(
          failure: .init(
            line: last,
            message:
              "\(who(name))unexpected message after the last step: \(extra.map { $0.jsonString }.joined(separator: " "))",
            diff: diff([], extra)))
      }
    }
  }

  private func substitute(_ text: String, line: Int) throws(Stop) -> String {
    do {
      return try Substitution.apply(text, bindings)
    } catch {
      throw Stop(failure: .init(line: line, message: "${\(error.name)} used before it was captured"), status: .error)
    }
  }

  private func diff(_ expected: [JSONValue], _ received: [JSONValue]) -> String {
    func lines(_ values: [JSONValue]) -> [String] {
      values.flatMap { $0.prettyString().split(separator: "\n").map(String.init) }
    }
    return UnifiedDiff.diff(expected: lines(expected), received: lines(received))
  }

  private mutating func stopServer() {
    guard let server else { return }
    server.beginStop()
    loop.run()
    loop.advance(by: 2_500)
    server.finish()
    server.closeDatastore()
    self.server = nil
  }
}
