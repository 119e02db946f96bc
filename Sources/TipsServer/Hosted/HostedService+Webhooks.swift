import Glibc
import TipsHosted
import TipsJSON
import TipsLogging
import TipsMetrics
import TipsProtocol
import TipsSystem
import TipsTransport
import TipsWebhooks

// Webhooks (#48): the admin's endpoint methods, and delivery from PostgreSQL's outbox by the one node of the fleet
// that holds the lease.

/// Delivers webhook events from PostgreSQL's outbox (``HostedStore``'s version 14 tables) while this node holds the
/// delivery lease: every `pollInterval` it takes or renews the lease (`leaseSeconds`; a node killed mid-delivery
/// lets it lapse and another node takes over, sending what was not recorded delivered again under the same
/// `webhook-id`), then posts each enabled endpoint's oldest undelivered event that is due — one at a time per
/// endpoint, so each endpoint gets an app's events in the order they were created. A 2xx is delivered; anything
/// else (a 3xx included: redirects are not followed) is tried again after ``WebhookBackoff``'s wait, and an endpoint
/// whose oldest undelivered event is a day old is disabled (logged; `webhooks/list` shows why).
///
/// Loop thread only.
final class WebhookDeliverer {
  private let store: HostedStore
  private let loop: any EventLoop
  private let logger: Logger
  let holder: String
  let backoff: WebhookBackoff
  let leaseSeconds: Double
  let pollInterval: Double
  let attemptTimeout: Double
  private var timer: (any LoopTimer)?
  private var sinceLease = Double.infinity
  private(set) var holding = false
  private var polling = false
  private var inFlight: [Int64: WebhookHTTPClient] = [:]
  /// Attempts by result (`delivered`, `failed`, `disabled`), for `tipsd_webhook_deliveries_total`.
  private(set) var results: [String: Int] = ["delivered": 0, "failed": 0, "disabled": 0]
  /// Seconds the oldest undelivered event has waited, as last read (`tipsd_webhook_lag_seconds`).
  private(set) var lag: Double = 0

  init(
    store: HostedStore, loop: any EventLoop, logger: Logger, node: String, retryFirst: Double, leaseSeconds: Double
  ) {
    self.store = store
    self.loop = loop
    self.logger = logger
    holder = "\(node) \(getpid()) \(Int64(System.wallClockSeconds() * 1000))"
    backoff = WebhookBackoff(first: retryFirst)
    self.leaseSeconds = max(leaseSeconds, 1)
    pollInterval = 0.2
    attemptTimeout = 10
  }

  func start() {
    let timer = loop.makeTimer()
    timer.keepsLoopAlive = false
    let every = UInt64(pollInterval * 1000)
    timer.start(afterMilliseconds: every, repeatEvery: every) { [weak self] in self?.tick() }
    self.timer = timer
  }

  func stop() {
    timer?.close()
    timer = nil
    for client in inFlight.values { client.cancel() }
    inFlight = [:]
    if holding { store.releaseWebhookLease(holder: holder) }
    holding = false
  }

  private func tick() {
    guard store.isWritable else { return }
    sinceLease += pollInterval
    // The lease is renewed at a third of its length; between renewals the node polls while it holds it.
    if sinceLease >= leaseSeconds / 3 {
      sinceLease = 0
      store.takeWebhookLease(holder: holder, seconds: leaseSeconds) { [weak self] result in
        guard let self else { return }
        let held = (try? result.get()) ?? false
        if held != self.holding {
          self.logger.info(held ? "webhooks: this node delivers" : "webhooks: another node delivers")
        }
        self.holding = held
        if held { self.poll() }
      }
      return
    }
    if holding { poll() }
  }

  private func poll() {
    guard !polling else { return }
    polling = true
    store.dueWebhookDeliveries(skipping: Array(inFlight.keys), limit: 64) { [weak self] result in
      guard let self else { return }
      self.polling = false
      guard case .success(let answer) = result else { return }
      self.lag = answer.lag
      guard self.holding else { return }
      for due in answer.due where self.inFlight[due.endpoint] == nil { self.deliver(due) }
    }
  }

  private func deliver(_ due: HostedStore.DueDelivery) {
    guard case .success(let url) = WebhookURL.parse(due.url), let secret = WebhookSecret(due.secret) else {
      return record(due, delivered: false, result: "the endpoint's URL or secret is not valid", giveUp: true)
    }
    let client = WebhookHTTPClient(loop: loop)
    inFlight[due.endpoint] = client
    let body = Array(due.payload.utf8)
    let id = "evt_\(due.event)"
    let timestamp = Int64(System.wallClockSeconds())
    let signature = WebhookSigner.signature(secret: secret, id: id, timestamp: timestamp, body: body)
    client.post(
      url: url,
      headers: [("webhook-id", id), ("webhook-timestamp", String(timestamp)), ("webhook-signature", signature)],
      body: body, timeout: attemptTimeout
    ) { [weak self] outcome in
      self?.record(due, delivered: outcome.delivered, result: outcome.summary, giveUp: false)
    }
  }

  private func record(_ due: HostedStore.DueDelivery, delivered: Bool, result: String, giveUp: Bool) {
    var retryIn = 0.0
    var disable: String?
    if !delivered {
      retryIn = backoff.delay(afterFailures: due.attempts + 1)
      let age = System.wallClockSeconds() + retryIn - due.createdAt
      if giveUp || backoff.givesUp(age: age) {
        disable = "undelivered since \(Int(age)) s: \(result)"
      }
    }
    results[delivered ? "delivered" : disable == nil ? "failed" : "disabled", default: 0] += 1
    if let disable {
      // Logged here, and audited (`webhook.disable`) with the disabling in PostgreSQL.
      logger.warning(
        "webhooks: endpoint disabled", [("endpoint", String(due.endpoint)), ("reason", disable)])
    }
    store.recordWebhookAttempt(
      endpoint: due.endpoint, event: due.event, delivered: delivered, result: result, retryIn: retryIn,
      disable: disable
    ) { [weak self] _ in
      guard let self else { return }
      self.inFlight[due.endpoint] = nil
      // The endpoint's next event may be due at once.
      if delivered && self.holding { self.poll() }
    }
  }
}

/// An experiment's webhook event: `experiment.srm` or `experiment.decided`, sent once per key ever.
struct ExperimentEvent: Equatable {
  var type: String
  /// `tip/experiment` (`lift`, or `variant:control`).
  var key: String
  var data: JSONValue

  /// The crossings a fleet report shows: each comparison of a tip (its variants against the control, its exposed arms
  /// against the holdout) whose sample-ratio check is flagged (`experiment.srm`), and each whose always-valid
  /// interval excludes 0 (`experiment.decided`).
  static func crossings(in report: MetricsReport) -> [ExperimentEvent] {
    var events: [ExperimentEvent] = []
    func add(tip: String, experiment: String, srm: SampleRatio?, interval: Interval?, difference: Double?) {
      let key = "\(tip)/\(experiment)"
      var data: JSONObject = ["app": .string("default"), "tip": .string(tip), "experiment": .string(experiment)]
      if let srm, srm.flagged {
        data["pValue"] = .double(srm.pValue)
        events.append(ExperimentEvent(type: "experiment.srm", key: key, data: .object(data)))
      }
      if let interval, interval.low > 0 || interval.high < 0 {
        var decided: JSONObject = ["app": .string("default"), "tip": .string(tip), "experiment": .string(experiment)]
        decided["low"] = .double(interval.low)
        decided["high"] = .double(interval.high)
        if let difference { decided["difference"] = .double(difference) }
        events.append(ExperimentEvent(type: "experiment.decided", key: key, data: .object(decided)))
      }
    }
    for tip in report.tips {
      for comparison in tip.comparisons {
        add(
          tip: tip.tipID, experiment: "\(comparison.variant):\(comparison.against)", srm: comparison.srm,
          interval: comparison.estimate.alwaysValid, difference: comparison.estimate.difference)
      }
      if let lift = tip.lift {
        add(tip: tip.tipID, experiment: "lift", srm: lift.srm, interval: lift.interval, difference: lift.difference)
      }
    }
    return events
  }
}

extension HostedService {
  /// Enqueues the experiment events a fleet report shows, each once ever per (app, tip, experiment) —
  /// PostgreSQL's `tipsd.webhook_once` keeps the first — when `metrics/get` computes the fleet's statistics.
  func noticeExperiments(_ report: MetricsReport) {
    guard let store = store as? HostedStore else { return }
    for event in ExperimentEvent.crossings(in: report) {
      store.enqueueWebhookEvent(once: event.key, app: "default", type: event.type, data: event.data.jsonString) {
        [logger] result in
        if case .failure(let error) = result {
          logger.warning("webhooks: an experiment event was not enqueued", [("error", error.message)])
        }
      }
    }
  }

  /// The PostgreSQL store, for a webhooks method (a node over memory has no outbox).
  func webhookStore(_ method: String) throws(ResponseError) -> HostedStore {
    guard let store = store as? HostedStore else {
      throw .forbidden(method: method, "webhooks need PostgreSQL (this node keeps accounts in memory)")
    }
    return store
  }
}

extension Handlers {
  /// `webhooks/*`: admin only, hosted over PostgreSQL.
  static func registerWebhooks(_ table: inout HandlerTable) {
    table.onAsync(WebhooksCreateRequest.self) { request, context, reply in
      let store: HostedStore
      do throws(ResponseError) { store = try admin(context).webhookStore(context.method) } catch {
        return reply(.failure(error))
      }
      guard let hosted = context.services.hosted, hosted.serves(request.app) else {
        return reply(
          .failure(
            .invalidParams(
              "webhooks/create: params.app: unknown app \"\(request.app)\" (this deployment serves: "
                + "\(context.services.hosted?.appIDs.joined(separator: ", ") ?? "default"))")))
      }
      if case .failure(let error) = WebhookURL.parse(request.url) {
        return reply(.failure(.invalidParams("webhooks/create: url: \(error.message)")))
      }
      let secret: WebhookSecret
      if let text = request.secret {
        guard let parsed = WebhookSecret(text) else {
          return reply(
            .failure(.invalidParams("webhooks/create: secret: must be whsec_ and the base64 of 24 to 64 bytes")))
        }
        secret = parsed
      } else {
        secret = WebhookSecret.generate()
      }
      store.createWebhook(
        app: request.app, url: request.url, events: request.events, secret: secret.description,
        actor: HostedCatalogs.adminActor
      ) {
        reply(
          $0.map {
            WebhooksCreateRequest.Response(
              id: $0.id, app: $0.app, url: $0.url, events: $0.events, secret: secret.description)
          }.mapError { .unavailable(method: WebhooksCreateRequest.method, retryAfter: 1, $0.message) })
      }
    }

    table.onAsync(WebhooksListRequest.self) { request, context, reply in
      let store: HostedStore
      do throws(ResponseError) { store = try admin(context).webhookStore(context.method) } catch {
        return reply(.failure(error))
      }
      store.listWebhooks(app: request.app) {
        reply(
          $0.map { rows in
            WebhooksListRequest.Response(
              webhooks: rows.map {
                .init(
                  id: $0.id, app: $0.app, url: $0.url, events: $0.events, createdAt: $0.createdAt,
                  disabledAt: $0.disabledAt, disabledReason: $0.disabledReason, pending: $0.pending,
                  lastResult: $0.lastResult)
              })
          }.mapError { .unavailable(method: WebhooksListRequest.method, retryAfter: 1, $0.message) })
      }
    }

    table.onAsync(WebhooksDeleteRequest.self) { request, context, reply in
      let store: HostedStore
      do throws(ResponseError) { store = try admin(context).webhookStore(context.method) } catch {
        return reply(.failure(error))
      }
      store.deleteWebhook(app: request.app, id: request.id, actor: HostedCatalogs.adminActor) {
        reply(
          $0.map { WebhooksDeleteRequest.Response(id: request.id, deleted: $0) }
            .mapError { .unavailable(method: WebhooksDeleteRequest.method, retryAfter: 1, $0.message) })
      }
    }

    table.onAsync(WebhooksTestRequest.self) { request, context, reply in
      let store: HostedStore
      do throws(ResponseError) { store = try admin(context).webhookStore(context.method) } catch {
        return reply(.failure(error))
      }
      let data = JSONValue.object(["endpoint": .int(request.id)]).jsonString
      store.testWebhook(app: request.app, id: request.id, data: data, actor: HostedCatalogs.adminActor) { result in
        switch result {
        case .success(let event?): reply(.success(WebhooksTestRequest.Response(event: event)))
        case .success(nil):
          reply(.failure(.invalidParams("webhooks/test: app \(request.app) has no endpoint \(request.id)")))
        case .failure(let error):
          reply(.failure(.unavailable(method: WebhooksTestRequest.method, retryAfter: 1, error.message)))
        }
      }
    }

    table.onAsync(WebhooksReplayRequest.self) { request, context, reply in
      let store: HostedStore
      do throws(ResponseError) { store = try admin(context).webhookStore(context.method) } catch {
        return reply(.failure(error))
      }
      store.replayWebhooks(app: request.app, after: request.after, actor: HostedCatalogs.adminActor) {
        reply(
          $0.map { WebhooksReplayRequest.Response(queued: $0) }
            .mapError { .unavailable(method: WebhooksReplayRequest.method, retryAfter: 1, $0.message) })
      }
    }
  }
}
