import CLibPQ
package import TipsTransport

#if canImport(Glibc)
  import Glibc
#endif

/// What one statement returned: its rows, every value as text (`nil` for SQL NULL).
package struct PGResult {
  package var rows: [[String?]] = []
}

/// A failed connection or statement, with libpq's or the server's message.
package struct PGError: Error, CustomStringConvertible {
  package var message: String
  /// The server answered the batch's sync point after a statement failed: it rolled the whole batch back, for
  /// certain (a lost connection leaves the outcome of a COMMIT unknown; this does not).
  package var rolledBack = false
  package var description: String { message }
}

/// One statement of a pipelined batch (``PGConnection/sendBatch(_:completion:)``), its parameters bound as text
/// (`nil`: SQL NULL) or, where ``binary`` holds them, in PostgreSQL's binary format (``PGBinary``).
package struct PGStatement {
  package enum Kind {
    /// Parse, bind and run `sql`.
    case query(String)
    /// Run the statement prepared as `name`.
    case prepared(String)
    /// Prepare `sql` as `name` (no parameters bound; the result is empty).
    case prepare(name: String, sql: String)
  }

  /// A parameter: text (`nil`: SQL NULL), or bytes in the binary format of the parameter's type.
  package enum Value {
    case text(String?)
    case binary([UInt8])
  }

  package var kind: Kind
  /// Each parameter's text (`nil`: SQL NULL, or bound from ``binary``).
  package var parameters: [String?]
  /// The parameters bound in binary, by position (most statements have none).
  package var binary: [Int: [UInt8]] = [:]

  package static func query(_ sql: String, _ parameters: [String?] = []) -> PGStatement {
    PGStatement(kind: .query(sql), parameters: parameters)
  }

  package static func prepared(_ name: String, _ parameters: [String?]) -> PGStatement {
    PGStatement(kind: .prepared(name), parameters: parameters)
  }

  /// The statement prepared as `name`, some of its parameters in binary: arrays of many items (a commit's
  /// operations, say) are neither escaped by the node nor parsed by PostgreSQL's `array_in`.
  package static func prepared(_ name: String, values: [Value]) -> PGStatement {
    var statement = PGStatement(kind: .prepared(name), parameters: [])
    for (index, value) in values.enumerated() {
      switch value {
      case .text(let text): statement.parameters.append(text)
      case .binary(let bytes):
        statement.parameters.append(nil)
        statement.binary[index] = bytes
      }
    }
    return statement
  }

  package static func prepare(_ name: String, _ sql: String) -> PGStatement {
    PGStatement(kind: .prepare(name: name, sql: sql), parameters: [])
  }
}

/// One PostgreSQL connection driven by libpq's non-blocking API on the daemon's loop: nothing here waits for the
/// server. `PQconnectStartParams`/`PQconnectPoll` connect, `PQsendQuery(Params)` sends, `PQflush` writes what the
/// socket took, and a ``LoopPoll`` on `PQsocket` says when to call `PQconsumeInput`/`PQgetResult` (or `PQflush`
/// again); `PQnotifies` yields `NOTIFY`s. One statement is in flight at a time; later ones queue.
///
/// **Pipeline mode** (``enterPipelineMode()``, libpq ≥ 14): batches of statements (``sendBatch(_:completion:)``) are
/// sent at once, each followed by a sync point, without waiting for earlier ones: every batch is one implicit
/// transaction (its statements commit together at the sync, or none does), many may be in flight, and their results
/// come back in order. An error aborts the rest of its batch only. ``send(_:parameters:completion:)`` is then a batch
/// of one statement (parameters required: pipeline mode has no simple-query protocol).
///
/// Ownership: the `PGconn` is this object's; the poll is closed before `PQfinish` closes the socket (a watched
/// descriptor must not be closed). The connection fails once — ``onFailure`` — and is then inert; the owner makes a
/// new one to reconnect. Loop thread only.
package final class PGConnection {
  private enum Phase { case idle, connecting, ready, closed }

  private struct Query {
    var sql: String
    /// nil: the simple-query protocol (several statements, no parameters).
    var parameters: [String?]?
    var completion: (Result<[PGResult], PGError>) -> Void
  }

  private let loop: any EventLoop
  private let keywords: [String]
  private let values: [String]
  private let connectTimeout: Double
  private var phase = Phase.idle
  private var connection: OpaquePointer?
  private var poll: (any LoopPoll)?
  private var timer: (any LoopTimer)?
  private var queue: [Query] = []
  private var inFlight: Query?
  private var results: [PGResult] = []
  private var firstError: String?

  /// A pipelined batch awaiting its results.
  private struct Batch {
    var completion: (Result<[PGResult], PGError>) -> Void
    var results: [PGResult] = []
    var firstError: String?
  }

  /// Whether the connection is in pipeline mode.
  package private(set) var isPipelined = false
  /// Pipelined batches sent and not yet complete, oldest first (their results arrive in this order).
  private var batches: [Batch] = []
  private var batchesHead = 0
  /// Pipelined batches sent and not yet answered.
  package var batchesInFlight: Int { batches.count - batchesHead }

  /// Connected (once).
  package var onReady: (() -> Void)?
  /// The connection failed or was lost (once); it is closed.
  package var onFailure: ((String) -> Void)?
  /// A `NOTIFY` on a channel this connection listens to: (channel, payload).
  package var onNotification: ((String, String) -> Void)?

  /// `keywords`/`values`: libpq connection parameters; a `dbname` holding a URI or conninfo string is expanded.
  package init(loop: any EventLoop, keywords: [String], values: [String], connectTimeout: Double) {
    self.loop = loop
    self.keywords = keywords
    self.values = values
    self.connectTimeout = connectTimeout
  }

  deinit { release() }

  package var isReady: Bool { phase == .ready }

  /// Starts connecting.
  package func start() {
    guard phase == .idle else { return }
    phase = .connecting
    connection = withCStrings(keywords) { keys in
      withCStrings(values) { vals in PQconnectStartParams(keys, vals, 1) }
    }
    guard let connection, PQstatus(connection) != CONNECTION_BAD else {
      fail(connection.map(Self.errorMessage) ?? "cannot allocate a PostgreSQL connection")
      return
    }
    let timer = loop.makeTimer()
    timer.keepsLoopAlive = false
    timer.start(afterMilliseconds: UInt64(connectTimeout * 1000)) { [weak self] in
      guard let self, self.phase == .connecting else { return }
      self.fail("no connection within \(Int(self.connectTimeout)) s")
    }
    self.timer = timer
    // "At the beginning, consider it as having returned PGRES_POLLING_WRITING" (libpq's documentation).
    watch(.writable, recreate: true)
  }

  /// Queues a statement: with `parameters` one statement (`$1`… bound as text), without several (simple protocol).
  package func send(
    _ sql: String, parameters: [String?]? = nil, completion: @escaping (Result<[PGResult], PGError>) -> Void
  ) {
    guard phase != .closed else {
      completion(.failure(PGError(message: "the connection is closed")))
      return
    }
    if isPipelined {
      sendBatch([.query(sql, parameters ?? [])], completion: completion)
      return
    }
    queue.append(Query(sql: sql, parameters: parameters, completion: completion))
    sendNext()
  }

  /// Enters pipeline mode. Only once connected, with no statement in flight or queued; false if libpq refused.
  @discardableResult
  package func enterPipelineMode() -> Bool {
    guard phase == .ready, !isPipelined, inFlight == nil, queue.isEmpty, let connection else { return false }
    guard PQenterPipelineMode(connection) == 1 else { return false }
    isPipelined = true
    return true
  }

  /// Pipeline mode: sends `statements` and a sync point at once; `completion` gets one result per statement (a
  /// `prepare` gives an empty one) once PostgreSQL has committed them together, or the first error (nothing of the
  /// batch committed). Batches sent later may complete only after this one.
  package func sendBatch(_ statements: [PGStatement], completion: @escaping (Result<[PGResult], PGError>) -> Void) {
    precondition(isPipelined || phase == .closed, "sendBatch needs pipeline mode")
    guard phase == .ready, let connection else {
      completion(.failure(PGError(message: "the connection is closed")))
      return
    }
    for statement in statements {
      let sent: Int32
      switch statement.kind {
      case .query(let sql):
        sent = withOptionalCStrings(statement.parameters) { pointers in
          PQsendQueryParams(connection, sql, Int32(statement.parameters.count), nil, pointers, nil, nil, 0)
        }
      case .prepared(let name) where !statement.binary.isEmpty:
        sent = withParameters(statement) { values, lengths, formats in
          PQsendQueryPrepared(connection, name, Int32(statement.parameters.count), values, lengths, formats, 0)
        }
      case .prepared(let name):
        sent = withOptionalCStrings(statement.parameters) { pointers in
          PQsendQueryPrepared(connection, name, Int32(statement.parameters.count), pointers, nil, nil, 0)
        }
      case .prepare(let name, let sql):
        sent = PQsendPrepare(connection, name, sql, 0, nil)
      }
      guard sent == 1 else {
        let message = Self.errorMessage(connection)
        batches.append(Batch(completion: completion))
        fail(message)
        return
      }
    }
    guard PQpipelineSync(connection) == 1 else {
      let message = Self.errorMessage(connection)
      batches.append(Batch(completion: completion))
      fail(message)
      return
    }
    batches.append(Batch(completion: completion))
    flush()
  }

  /// Closes the connection; queued statements fail. Idempotent; no ``onFailure``.
  package func close() {
    onFailure = nil
    fail("the connection was closed")
  }

  // MARK: Connecting

  private func advanceConnect() {
    guard phase == .connecting, let connection else { return }
    switch PQconnectPoll(connection) {
    case PGRES_POLLING_READING:
      watch(.readable, recreate: true)
    case PGRES_POLLING_WRITING:
      watch(.writable, recreate: true)
    case PGRES_POLLING_OK:
      phase = .ready
      // Notices (`NOTICE: schema "tipsd" already exists`) would otherwise be printed on the daemon's stderr by libpq.
      PQsetNoticeProcessor(connection, { _, _ in }, nil)
      timer?.close()
      timer = nil
      _ = PQsetnonblocking(connection, 1)
      watch(.readable, recreate: true)
      onReady?()
      sendNext()
    default:
      fail(Self.errorMessage(connection))
    }
  }

  /// Watches libpq's socket. While connecting the socket may change between steps (another host, a retry without
  /// TLS), so the poll is made again at each; closing one stops watching at once, so the same descriptor number can
  /// be watched again straight away.
  private func watch(_ events: PollEvents, recreate: Bool = false) {
    guard let connection, phase != .closed else { return }
    let socket = PQsocket(connection)
    guard socket >= 0 else {
      fail(Self.errorMessage(connection))
      return
    }
    if recreate || poll?.fileDescriptor != socket {
      poll?.close()
      poll = nil
      do {
        poll = try loop.makePoll(fileDescriptor: socket)
      } catch {
        fail("\(error)")
        return
      }
    }
    poll?.watch(events) { [weak self] ready in self?.handle(ready) }
  }

  private func handle(_ ready: PollEvents) {
    switch phase {
    case .connecting:
      advanceConnect()
    case .ready:
      if ready.contains(.readable) { readInput() }
      if phase == .ready { flush() }
    case .idle, .closed:
      break
    }
  }

  // MARK: Statements

  private func sendNext() {
    guard phase == .ready, inFlight == nil, !queue.isEmpty, let connection else { return }
    let query = queue.removeFirst()
    inFlight = query
    results = []
    firstError = nil
    let sent: Int32
    if let parameters = query.parameters {
      sent = withOptionalCStrings(parameters) { pointers in
        PQsendQueryParams(connection, query.sql, Int32(parameters.count), nil, pointers, nil, nil, 0)
      }
    } else {
      sent = PQsendQuery(connection, query.sql)
    }
    guard sent == 1 else {
      fail(Self.errorMessage(connection))
      return
    }
    flush()
  }

  /// Writes what libpq holds; watches for writability while some is left (reading too: the server may need to be
  /// read before it reads more).
  private func flush() {
    guard phase == .ready, let connection else { return }
    switch PQflush(connection) {
    case 0: watch(.readable)
    case 1: watch([.readable, .writable])
    default: fail(Self.errorMessage(connection))
    }
  }

  private func readInput() {
    guard let connection else { return }
    guard PQconsumeInput(connection) == 1 else {
      fail(Self.errorMessage(connection))
      return
    }
    // libpq parses no further than a finished result until it is taken, so a NOTIFY read together with a result is
    // only found after PQgetResult: look for notifications again after taking results, until neither yields more.
    var progress = true
    while progress && phase == .ready {
      progress = false
      while phase == .ready, let notice = PQnotifies(connection) {
        progress = true
        let channel = String(cString: notice.pointee.relname)
        let payload = notice.pointee.extra.map { String(cString: $0) } ?? ""
        PQfreemem(notice)
        onNotification?(channel, payload)
      }
      if isPipelined {
        if readPipelineResults(connection) { progress = true }
        continue
      }
      while inFlight != nil, phase == .ready, PQisBusy(connection) == 0 {
        progress = true
        guard let result = PQgetResult(connection) else {
          complete()
          continue
        }
        collect(result)
        PQclear(result)
      }
    }
    if phase == .ready && PQstatus(connection) == CONNECTION_BAD { fail(Self.errorMessage(connection)) }
  }

  /// Takes the pipelined batches' results that have arrived; returns whether any did.
  private func readPipelineResults(_ connection: OpaquePointer) -> Bool {
    var progress = false
    var nulls = 0
    while batchesHead < batches.count, phase == .ready, PQisBusy(connection) == 0 {
      // NULL ends one statement's results; a sync point ends the batch (after it libpq returns no NULL). Two NULLs in
      // a row mean nothing more is ready.
      guard let result = PQgetResult(connection) else {
        nulls += 1
        if nulls > 1 { break }
        continue
      }
      nulls = 0
      progress = true
      let status = PQresultStatus(result)
      if status == PGRES_PIPELINE_SYNC {
        PQclear(result)
        completeBatch()
        continue
      }
      if status == PGRES_PIPELINE_ABORTED {
        if batches[batchesHead].firstError == nil { batches[batchesHead].firstError = "statement aborted" }
      } else if let rows = Self.rows(of: result) {
        batches[batchesHead].results.append(rows)
      } else if batches[batchesHead].firstError == nil {
        batches[batchesHead].firstError = Self.resultError(result)
      }
      PQclear(result)
    }
    return progress
  }

  private func completeBatch() {
    let batch = batches[batchesHead]
    batchesHead += 1
    if batchesHead == batches.count {
      batches.removeAll(keepingCapacity: true)
      batchesHead = 0
    } else if batchesHead >= 64 && batchesHead * 2 >= batches.count {
      batches.removeFirst(batchesHead)
      batchesHead = 0
    }
    if let error = batch.firstError {
      batch.completion(.failure(PGError(message: error, rolledBack: true)))
    } else {
      batch.completion(.success(batch.results))
    }
  }

  /// A result's rows (an empty result for a command), or nil for an error.
  private static func rows(of result: OpaquePointer) -> PGResult? {
    switch PQresultStatus(result) {
    case PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE:
      var rows: [[String?]] = []
      let fields = PQnfields(result)
      rows.reserveCapacity(Int(PQntuples(result)))
      for row in 0..<PQntuples(result) {
        var values: [String?] = []
        values.reserveCapacity(Int(fields))
        for field in 0..<fields {
          values.append(PQgetisnull(result, row, field) == 1 ? nil : String(cString: PQgetvalue(result, row, field)))
        }
        rows.append(values)
      }
      return PGResult(rows: rows)
    case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
      return PGResult()
    default:
      return nil
    }
  }

  /// A failed result's message, on one line-trimmed string.
  private static func resultError(_ result: OpaquePointer) -> String {
    let message = String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines()
    return message.isEmpty ? "statement failed" : message
  }

  private func collect(_ result: OpaquePointer) {
    if let rows = Self.rows(of: result) {
      results.append(rows)
    } else if firstError == nil {
      firstError = Self.resultError(result)
    }
  }

  private func complete() {
    guard let query = inFlight else { return }
    inFlight = nil
    if let firstError {
      query.completion(.failure(PGError(message: firstError)))
    } else {
      query.completion(.success(results))
    }
    results = []
    sendNext()
  }

  // MARK: Failure

  private func fail(_ message: String) {
    guard phase != .closed else { return }
    phase = .closed
    let pending = (inFlight.map { [$0] } ?? []) + queue
    inFlight = nil
    queue = []
    let pendingBatches = batches[batchesHead...]
    batches = []
    batchesHead = 0
    release()
    let error = PGError(message: message.trimmingTrailingNewlines())
    for query in pending { query.completion(.failure(error)) }
    for batch in pendingBatches { batch.completion(.failure(error)) }
    let failure = onFailure
    onFailure = nil
    onReady = nil
    onNotification = nil
    failure?(error.message)
  }

  /// Stops watching, then closes the socket (in that order), and the timer.
  private func release() {
    poll?.close()
    poll = nil
    timer?.close()
    timer = nil
    if let connection { PQfinish(connection) }
    connection = nil
  }

  private static func errorMessage(_ connection: OpaquePointer) -> String {
    let message = String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
    return message.isEmpty ? "PostgreSQL connection failed" : message
  }
}

// MARK: - C strings

/// Calls `body` with a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
  var pointers: [UnsafePointer<CChar>?] = strings.map { UnsafePointer(strdup($0)) }
  pointers.append(nil)
  defer { for pointer in pointers { free(UnsafeMutablePointer(mutating: pointer)) } }
  return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Calls `body` with an array of C strings, NULL for nil (libpq's SQL NULL parameter).
private func withOptionalCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
  let pointers: [UnsafePointer<CChar>?] = strings.map { $0.map { UnsafePointer(strdup($0)) } ?? nil }
  defer { for pointer in pointers { free(UnsafeMutablePointer(mutating: pointer)) } }
  return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
}

extension String {
  func trimmingTrailingNewlines() -> String {
    var result = Substring(self)
    while let last = result.last, last == "\n" || last == "\r" || last == " " { result = result.dropLast() }
    return String(result)
  }
}
