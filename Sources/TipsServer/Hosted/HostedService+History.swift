import TipsAuth
import TipsCatalog
import TipsEngine
import TipsHosted
import TipsJSON
import TipsLogging
import TipsMetrics
import TipsProtocol
import TipsStore
import TipsSync
import TipsSystem
import TipsTransport

// Hosted mode's history: an account's lifecycle history read back from PostgreSQL (paging, bounds, replay), and
// the fleet's analytics stream for the admin.

extension HostedService {
  // MARK: - History

  /// The account's history bounds in PostgreSQL (nil when they cannot be read: the caller answers without them).
  func bounds(of tenant: Tenant, _ done: @escaping ((oldestCursor: Int64?, oldestAt: Double?)?) -> Void) {
    guard let account = tenant.account else { return done(nil) }
    store.historyBounds(account) { done(try? $0.get()) }
  }

  /// The account's stored history after `cursor`, oldest first, the entries `wanted` keeps, at most `limit` (nil:
  /// all). Everything of an idle account is stored (no commit of it is in flight), so nothing is missed.
  func history(
    of account: String, after cursor: Int64, limit: Int?, wanted: @escaping (HistoryEvent) -> Bool,
    completion: @escaping (Result<[HistoryEvent], ResponseError>) -> Void
  ) {
    var collected: [HistoryEvent] = []
    func page(after: Int64) {
      store.history(account, after: after, limit: 64) { result in
        switch result {
        case .failure(let error):
          completion(.failure(.unavailable(method: "history", retryAfter: 1, error.message)))
        case .success(let chunks):
          for chunk in chunks {
            guard let events = HistoryBatch.decode(chunk.bytes, first: chunk.cursor) else {
              completion(
                .failure(
                  ResponseError(
                    code: .internalError, message: "account \(account): a stored history chunk is unreadable")))
              return
            }
            for event in events where event.cursor > cursor && wanted(event) {
              collected.append(event)
              if let limit, collected.count >= limit {
                completion(.success(collected))
                return
              }
            }
          }
          guard chunks.count == 64, let last = chunks.last else {
            completion(.success(collected))
            return
          }
          page(after: last.cursor + Int64(last.count) - 1)
        }
      }
    }
    page(after: cursor)
  }

  /// Seed 000's metrics across every account (the admin's `metrics/get` without an account): each account's stored
  /// history, read a page at a time in account order, computed on its own and pooled (``FleetMetrics``). The tips
  /// are the catalog's.
  func fleetMetrics(_ request: MetricsGetRequest, completion: @escaping (Result<MetricsReport, ResponseError>) -> Void)
  {
    let engine: Engine
    let tips: [MetricsTip]
    do {
      engine = try makeEngine(account: "fleet")  // only its tips and its clock are read
      tips = try Handlers.metricsTips(request, engine: engine)
    } catch let error as ResponseError {
      return completion(.failure(error))
    } catch {
      return completion(.failure(ResponseError(code: .internalError, message: "metrics/get: \(error)")))
    }
    var fleet = FleetMetrics(
      tips: tips, configuration: services.configuration.metrics, since: request.since, until: request.until,
      now: engine.clock.now())
    var current: (account: String, start: Double, events: [HistoryEvent])?
    func flush() {
      if let current { fleet.add(history: current.events, historyStart: current.start) }
      current = nil
    }
    let pageSize = 256
    func page(after account: String, cursor: Int64) {
      store.historyByAccount(after: account, cursor: cursor, limit: pageSize) { result in
        switch result {
        case .failure(let error):
          completion(.failure(.unavailable(method: MetricsGetRequest.method, retryAfter: 1, error.message)))
        case .success(let chunks):
          // The app default's accounts (its catalog's tips): another app's same tip id is another experiment.
          for chunk in chunks where AccountKey.app(of: chunk.account) == AccountKey.defaultApp {
            guard let events = HistoryBatch.decode(chunk.bytes, first: chunk.cursor) else {
              let message = "account \(chunk.account): a stored history chunk is unreadable"
              return completion(.failure(ResponseError(code: .internalError, message: message)))
            }
            if current?.account != chunk.account {
              flush()
              current = (chunk.account, chunk.firstAt, [])
            }
            current!.events += events.filter { HistoryBatch.metricKinds & (1 << $0.kind.code) != 0 }
          }
          guard chunks.count == pageSize, let last = chunks.last else {
            flush()
            return completion(.success(fleet.report()))
          }
          page(after: last.account, cursor: last.cursor)
        }
      }
    }
    page(after: "", cursor: 0)
  }

  /// Replays the account's history after `cursor` to a new analytics subscriber, then makes it live: the account's
  /// requests wait meanwhile, so no entry is committed between the replay and going live.
  func replayAnalytics(
    of tenant: Tenant, to subscription: String, after cursor: Int64,
    done: @escaping (Result<Void, ResponseError>) -> Void
  ) {
    guard let account = tenant.account else { return }
    node.reading(account)
    history(of: account, after: cursor, limit: nil, wanted: { $0.kind.isStreamed }) { [weak self] result in
      guard let self else { return }
      if case .success(let events) = result {
        done(.success(()))
        tenant.subscriptions.replayed(subscription, events: events) { session, note in
          self.services.stage(.notification(note), on: session)
        }
      } else if case .failure(let error) = result {
        done(.failure(error))
      }
      self.perform(self.node.committed(account, success: true))
      self.services.requestEndOfTurn()
    }
  }

  /// An account's export: its state as of its last stored operation and its whole history.
  func export(_ account: String, completion: @escaping (Result<AccountsExportRequest.Response, ResponseError>) -> Void)
  {
    store.load(account) { [weak self] result in
      guard let self else { return }
      switch result {
      case .failure(let error):
        completion(.failure(.unavailable(method: AccountsExportRequest.method, retryAfter: 1, error.message)))
      case .success(let stored):
        let snapshot: AccountSnapshot
        do {
          let engine = try self.makeEngine(account: account)
          snapshot = try AccountLoader.snapshot(
            account: account, engine: engine, snapshot: stored.snapshot, operations: stored.operations)
        } catch {
          completion(.failure(ResponseError(code: .internalError, message: "account \(account): \(error)")))
          return
        }
        self.history(of: account, after: 0, limit: nil, wanted: { _ in true }) { result in
          completion(
            result.map { events in
              AccountsExportRequest.Response(
                account: account, exportedAt: System.wallClockSeconds(), state: snapshot.json,
                history: events.filter { $0.kind.isStreamed }.map { AnalyticsEventInfo($0) },
                donations: events.filter { !$0.kind.isStreamed })
            })
        }
      }
    }
  }

  /// Makes `account` from an export (it must hold nothing yet); drops any copy of it this node holds.
  func importAccount(
    _ account: String, from export: JSONObject, completion: @escaping (Result<Int, ResponseError>) -> Void
  ) {
    let method = AccountsImportRequest.method
    let snapshot: AccountSnapshot
    var entries: [HistoryEvent] = []
    do throws(HostedError) {
      guard let state = export["state"] else { throw HostedError("params.export.state is missing") }
      snapshot = try AccountSnapshot(json: state)
      let reader = try? ResultReader(.object(export), path: "params.export")
      guard let reader else { throw HostedError("params.export must be an object") }
      do throws(ResultDecodingError) {
        entries += try reader.decodeArray("history", of: AnalyticsEventInfo.self).map { $0.event }
        if reader.optionalValue("donations") != nil {
          for (index, item) in try reader.array("donations").enumerated() {
            let donation = try ResultReader(item, path: "params.export.donations[\(index)]")
            entries.append(
              HistoryEvent(
                cursor: try donation.int64("cursor"), kind: .donation, at: try donation.double("at"),
                eventID: try donation.string("event")))
          }
        }
      } catch {
        throw HostedError(error.message)
      }
    } catch {
      completion(.failure(.invalidParams("\(method): \(error.message)")))
      return
    }
    // New cursors, in the export's order.
    entries.sort { $0.cursor < $1.cursor }
    var batch = HistoryBatch()
    for (index, entry) in entries.enumerated() {
      var entry = entry
      entry.cursor = Int64(index + 1)
      batch.append(entry)
    }
    let chunks = batch.encodedChunks.map {
      HostedStore.HistoryChunk(count: $0.count, firstAt: $0.oldestAt, lastAt: $0.newestAt, bytes: $0.bytes)
    }
    var imported = snapshot
    imported.cursor = 0
    store.importAccount(account, snapshot: imported, history: chunks) { [weak self] result in
      switch result {
      case .success:
        // A copy held here (an empty account someone signed in to) is read again on its next request.
        if let self, self.tenants[account] != nil, self.node.isIdle(account) {
          self.node.committing(account)
          self.perform(self.node.committed(account, success: false))
        }
        completion(.success(entries.count))
      case .failure(let error):
        completion(
          .failure(
            error.message.contains("already holds")
              ? .invalidParams("\(method): params.account: \(error.message)")
              : .unavailable(method: method, retryAfter: 1, error.message)))
      }
    }
  }

  // MARK: - The fleet's analytics stream (the admin's, every account's events)

  /// An admin's `analytics/subscribe` without an account: every account's events in the fleet's order, replayed
  /// from `delivered` and then followed (at least once: after a reconnect, resume from the last cursor received).
  final class FleetSubscriber {
    let id: String
    unowned let session: Session
    var delivered: Int64
    var reading = false

    init(id: String, session: Session, delivered: Int64) {
      self.id = id
      self.session = session
      self.delivered = delivered
    }
  }

  /// The fleet's events after `cursor` (positions in the fleet's order), at most `limit`.
  func fleetEvents(
    after cursor: Int64, limit: Int, completion: @escaping (Result<[AnalyticsEventInfo], ResponseError>) -> Void
  ) {
    store.fleetHistory(after: cursor, limit: max(1, limit / 4)) { result in
      switch result {
      case .failure(let error):
        completion(.failure(.unavailable(method: AnalyticsReadRequest.method, retryAfter: 1, error.message)))
      case .success(let chunks):
        var events: [AnalyticsEventInfo] = []
        for chunk in chunks {
          guard let decoded = HistoryBatch.decode(chunk.bytes, first: chunk.cursor) else { continue }
          for entry in decoded where entry.kind.isStreamed {
            var entry = entry
            entry.cursor = chunk.seq + (entry.cursor - chunk.cursor)
            guard entry.cursor > cursor else { continue }
            events.append(AnalyticsEventInfo(entry, account: chunk.account))
            if events.count == limit { return completion(.success(events)) }
          }
        }
        completion(.success(events))
      }
    }
  }

  func fleetHead(_ done: @escaping (Int64?) -> Void) { store.fleetHistoryHead { done(try? $0.get()) } }

  func subscribeFleet(session: Session, after: Int64?, head: Int64) -> String {
    let id = services.subscriptionIDs.next()
    // Answered after a PostgreSQL read: the session may have closed meanwhile (the subscriber holds it unowned).
    guard !session.isGone else { return id }
    fleetSubscribers[id] = FleetSubscriber(id: id, session: session, delivered: after ?? head)
    session.subscriptions.insert(id)
    armFleetPump()
    return id
  }

  func unsubscribeFleet(_ id: String, session: Session) -> Bool {
    guard let subscriber = fleetSubscribers[id], subscriber.session === session else { return false }
    fleetSubscribers[id] = nil
    session.subscriptions.remove(id)
    session.outbound.subscriptionEnded(id)
    return true
  }

  func armFleetPump() {
    guard fleetTimer == nil else { return }
    let timer = loop.makeTimer()
    timer.keepsLoopAlive = false
    timer.start(afterMilliseconds: 200, repeatEvery: 200) { [unowned self] in self.pumpFleet() }
    fleetTimer = timer
  }

  /// Reads the next page for every fleet subscriber that has room (below its high-water mark).
  func pumpFleet() {
    guard !fleetSubscribers.isEmpty else {
      fleetTimer?.close()
      fleetTimer = nil
      return
    }
    for subscriber in fleetSubscribers.values where !subscriber.reading {
      let session = subscriber.session
      guard !session.outbound.closing else { continue }
      let owed = session.outbound.stagedBytes + session.outbound.queuedBytes + session.stream.pendingWriteBytes
      guard owed < services.configuration.outgoingHighWater else { continue }
      subscriber.reading = true
      fleetEvents(after: subscriber.delivered, limit: 256) { [weak self, weak subscriber] result in
        guard let self, let subscriber, self.fleetSubscribers[subscriber.id] === subscriber else { return }
        subscriber.reading = false
        guard case .success(let events) = result else { return }
        for event in events {
          let note = AnalyticsEventNotification(subscription: subscriber.id, event: event)
          self.services.stage(.notification(StagedNotification(notification: note, shouldDisplay: nil)), on: session)
          subscriber.delivered = event.event.cursor
        }
        if !events.isEmpty { self.services.requestEndOfTurn() }
      }
    }
  }
}
