public import TipsRecords
public import TipsTransport

/// The sync pump's transport over PostgreSQL (`--sync postgresql://…`): non-blocking libpq on the loop, the `tipsd`
/// schema created or migrated, `LISTEN` on the account's channel, `tipsd.pull` and `tipsd.push`.
public final class PGSyncTransport: SyncTransport {
  let server: SyncServer
  let account: String
  let device: String
  let connectTimeout: Double
  private let loop: any EventLoop
  private let channel: String
  private var connection: PGConnection?
  /// Counts connection attempts, so a resolution finishing after the transport moved on is ignored.
  private var attempt = 0

  public init(loop: any EventLoop, server: SyncServer, account: String, device: String, connectTimeout: Double = 10) {
    self.loop = loop
    self.server = server
    self.account = account
    self.device = device
    self.connectTimeout = connectTimeout
    channel = PGSchema.channel(account: account)
  }

  public var redacted: String { server.redacted }
  public var peerName: String { "PostgreSQL" }

  public func open(_ events: SyncTransportEvents) {
    close()
    let attempt = self.attempt
    PGConnector.make(
      loop: loop, server: server, applicationName: "tipsd", connectTimeout: connectTimeout,
      isCurrent: { [weak self] in self?.attempt == attempt }
    ) { [weak self] result in
      guard let self, self.attempt == attempt else { return }
      switch result {
      case .success(let connection):
        self.connection = connection
        connection.onReady = { events.ready() }
        connection.onFailure = { [unowned self, unowned connection] message in
          guard self.connection === connection else { return }
          events.failed(self.server.scrub(message))
        }
        connection.onNotification = { [unowned self] channel, _ in
          guard channel == self.channel else { return }
          events.changed()
        }
        connection.start()
      case .failure(let error):
        events.failed(self.server.scrub(error.message))
      }
    }
  }

  public func close() {
    attempt += 1
    connection?.close()
    connection = nil
  }

  /// Sends one statement on the current connection; its completion is ignored once the connection was replaced.
  private func send(
    _ sql: String, parameters: [String?]? = nil, failure what: String,
    _ done: @escaping (Result<[PGResult], SyncTransportError>) -> Void
  ) {
    guard let connection else { return }
    connection.send(sql, parameters: parameters) { [weak self, weak connection] result in
      guard let self, let connection, self.connection === connection else { return }
      done(result.mapError { SyncTransportError("\(what): \(self.server.scrub($0.message))") })
    }
  }

  public func handshake(_ done: @escaping (Result<(version: Int, supported: Int), SyncTransportError>) -> Void) {
    send(PGSchema.migrate, failure: "cannot create or migrate the tipsd schema") { result in
      done(
        result.map { results in
          let version = results.last { !$0.rows.isEmpty }?.rows.first?.first.flatMap { $0.flatMap { Int($0) } } ?? 0
          return (version, PGSchema.version)
        })
    }
  }

  public func listen(_ done: @escaping (Result<Void, SyncTransportError>) -> Void) {
    send("LISTEN \(channel)", failure: "cannot LISTEN") { done($0.map { _ in () }) }
  }

  public func pull(
    after cursor: Int64, limit: Int, _ done: @escaping (Result<PulledOperations, SyncTransportError>) -> Void
  ) {
    let parameters: [String?] = [account, device, String(cursor), String(limit)]
    send(PGSchema.pullAsDevice, parameters: parameters, failure: "catch-up query failed") { result in
      done(
        result.map { results in
          var rows: [OperationRow] = []
          for row in results.first?.rows ?? [] {
            guard row.count == 4, let cursor = row[0].flatMap({ Int64($0) }), let seq = row[2].flatMap({ Int64($0) }),
              let payload = row[3]
            else { continue }
            if seq == -1 { return .snapshot(state: payload, cursor: cursor) }
            guard let device = row[1] else { continue }
            rows.append(OperationRow(cursor: cursor, device: device, seq: seq, payload: payload))
          }
          return .rows(rows)
        })
    }
  }

  public func push(
    _ batch: [PendingOperation], _ done: @escaping (Result<Void, SyncTransportError>) -> Void
  ) {
    let parameters: [String?] = [
      account, device, channel, PGSchema.integerArray(batch.map(\.seq)), PGSchema.textArray(batch.map(\.payload)),
    ]
    send(PGSchema.push, parameters: parameters, failure: "push failed") { done($0.map { _ in () }) }
  }
}
