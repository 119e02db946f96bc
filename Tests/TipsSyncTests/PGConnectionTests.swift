import Testing
import TipsTestSupport
import TipsTransport

@testable import TipsSync

/// The libpq client on the embedded test loop (its polls ask the kernel at each turn), against a real PostgreSQL:
/// statements, errors, LISTEN/NOTIFY, and a failure when the server goes away.
@Suite struct PGConnectionTests {
  @Test func talksToPostgreSQLOnTheEmbeddedLoop() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let loop = EmbeddedEventLoop()
    func spin(until condition: () -> Bool) -> Bool {
      waitUntil {
        loop.run()
        return condition()
      }
    }
    let connection = PGConnection(
      loop: loop, keywords: ["dbname", "application_name"], values: [postgres.url, "tipsd-test"], connectTimeout: 30)
    var ready = false
    var failure: String?
    var notifications: [(String, String)] = []
    connection.onReady = { ready = true }
    connection.onFailure = { failure = $0 }
    connection.onNotification = { notifications.append(($0, $1)) }
    connection.start()
    #expect(spin { ready || failure != nil })
    #expect(failure == nil)

    var results: [Result<[PGResult], PGError>] = []
    connection.send("SELECT $1::int + 1, NULL::text", parameters: ["41"]) { results.append($0) }
    connection.send("SELECT nonsense FROM nowhere") { results.append($0) }
    connection.send("LISTEN tipsd_test; SELECT pg_notify('tipsd_test', 'hello')") { results.append($0) }
    #expect(spin { results.count == 3 && !notifications.isEmpty })
    guard results.count == 3 else { return }
    #expect((try? results[0].get())?.first?.rows == [["42", nil]])
    if case .failure(let error) = results[1] {
      #expect(error.message.contains("nowhere"))
    } else {
      Issue.record("no error")
    }
    #expect(notifications.first?.0 == "tipsd_test" && notifications.first?.1 == "hello")

    try postgres.stop()
    #expect(spin { failure != nil })
    connection.send("SELECT 1") { results.append($0) }
    #expect(results.count == 4)
  }
}

/// Pipeline mode: batches sent together, each one transaction, results in order; an error aborts its batch only.
@Suite struct PGPipelineTests {
  @Test func batchesCommitAtomicallyAndInOrder() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    try postgres.query("CREATE TABLE t (id integer PRIMARY KEY, note text)")
    let (connection, spin) = pipelinedConnection(postgres)
    #expect(connection.isPipelined)

    var completions: [(Int, Result<[PGResult], PGError>)] = []
    connection.sendBatch([
      .prepare("insert_t", "INSERT INTO t (id, note) VALUES ($1::integer, $2)"),
      .prepared("insert_t", ["1", "one"]),
      .query("SELECT count(*) FROM t"),
    ]) { completions.append((1, $0)) }
    // The second batch inserts, then fails: nothing of it is committed.
    connection.sendBatch([.prepared("insert_t", ["2", "two"]), .prepared("insert_t", ["1", "duplicate"])]) {
      completions.append((2, $0))
    }
    connection.sendBatch([.prepared("insert_t", ["3", nil]), .query("SELECT id, note FROM t ORDER BY id")]) {
      completions.append((3, $0))
    }
    #expect(connection.batchesInFlight == 3)
    #expect(spin { completions.count == 3 })
    #expect(completions.map(\.0) == [1, 2, 3])
    let first = try completions[0].1.get()
    #expect(first.count == 3 && first[2].rows == [["1"]])
    guard case .failure(let error) = completions[1].1 else {
      Issue.record("the batch with a duplicate key succeeded")
      return
    }
    #expect(error.message.contains("duplicate key"))
    let third = try completions[2].1.get()
    #expect(third.last?.rows == [["1", "one"], ["3", nil]])
    #expect(try postgres.query("SELECT string_agg(id::text, ',' ORDER BY id) FROM t") == "1,3\n")

    // A plain send is a batch of one; the connection failing fails every batch in flight.
    var plain: Result<[PGResult], PGError>?
    connection.send("SELECT $1::int * 2", parameters: ["21"]) { plain = $0 }
    #expect(spin { plain != nil })
    #expect((try? plain?.get())?.first?.rows == [["42"]])
    var failure: String?
    connection.onFailure = { failure = $0 }
    var late: [Result<[PGResult], PGError>] = []
    connection.sendBatch([.query("SELECT pg_sleep(5)")]) { late.append($0) }
    connection.sendBatch([.query("SELECT 1")]) { late.append($0) }
    try postgres.stop()
    #expect(spin { failure != nil && late.count == 2 })
    #expect(late.allSatisfy { if case .failure = $0 { true } else { false } })
  }
}

/// Binary parameters (``PGBinary``): arrays of each element type a commit sends, read back by PostgreSQL as the same
/// values their text forms give — quotes, backslashes, braces, commas, multi-byte text, empty strings and arrays,
/// raw bytes, extreme integers and doubles — mixed with text parameters in one prepared statement.
@Suite struct PGBinaryTests {
  @Test func arraysInBinaryReadAsTheirTextForms() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let (connection, spin) = pipelinedConnection(postgres)
    let texts = ["plain", "quote \" backslash \\ {brace}, comma", "", "é ünï 🎉", "NULL"]
    let bytes: [[UInt8]] = [[0, 1, 2, 255], [], Array("\\x00".utf8)]
    let bigs: [Int64] = [0, -1, Int64.max, Int64.min, 42]
    let ints: [Int64] = [0, -7, 2_147_483_647, -2_147_483_648]
    let doubles = [0, -1.5, 1_733_000_000.123456, Double.greatestFiniteMagnitude, 5e-324]
    let sql = """
      SELECT $1::text[] = $2::text[], $3::bytea[] = ARRAY['\\x000102ff', '\\x', '\\x5c783030']::bytea[],
        $4::bigint[] = $5::bigint[], $6::integer[] = $7::integer[], $8::double precision[] = $9::double precision[],
        cardinality($10::text[]), $11, array_length($1::text[], 1)
      """
    var result: Result<[PGResult], PGError>?
    connection.sendBatch([
      .prepare("binary_arrays", sql),
      .prepared(
        "binary_arrays",
        values: [
          .binary(PGBinary.textArray(texts)), .text(PGSchema.textArray(texts)), .binary(PGBinary.byteaArray(bytes)),
          .binary(PGBinary.int8Array(bigs)), .text(PGSchema.integerArray(bigs)), .binary(PGBinary.int4Array(ints)),
          .text(PGSchema.integerArray(ints)), .binary(PGBinary.float8Array(doubles)),
          .text("{" + doubles.map { "\($0)" }.joined(separator: ",") + "}"), .binary(PGBinary.textArray([])),
          .text("text beside"),
        ]),
    ]) { result = $0 }
    #expect(spin { result != nil })
    let rows = try result?.get().last?.rows
    #expect(rows == [["t", "t", "t", "t", "t", "0", "text beside", "5"]])
  }
}

/// A connection to `postgres` on an embedded loop, connected and in pipeline mode, and `spin`, which runs the loop
/// until its condition holds (false when it never does).
private func pipelinedConnection(
  _ postgres: PostgresServer, sourceLocation: SourceLocation = #_sourceLocation
) -> (PGConnection, (() -> Bool) -> Bool) {
  let loop = EmbeddedEventLoop()
  let spin = { (condition: () -> Bool) -> Bool in
    waitUntil {
      loop.run()
      return condition()
    }
  }
  let connection = PGConnection(loop: loop, keywords: ["dbname"], values: [postgres.url], connectTimeout: 30)
  var ready = false
  connection.onReady = { ready = true }
  connection.start()
  #expect(spin { ready }, sourceLocation: sourceLocation)
  #expect(connection.enterPipelineMode(), sourceLocation: sourceLocation)
  return (connection, spin)
}
