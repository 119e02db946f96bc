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
    if case .failure(let error) = results[1] { #expect(error.message.contains("nowhere")) } else { Issue.record("no error") }
    #expect(notifications.first?.0 == "tipsd_test" && notifications.first?.1 == "hello")

    try postgres.stop()
    #expect(spin { failure != nil })
    connection.send("SELECT 1") { results.append($0) }
    #expect(results.count == 4)
  }
}
