public import TipsEngine
import TipsJSON

/// `tipsd lint --simulate`: which tips a real ``Engine`` shows (checklist: "verified that the rules evaluate
/// correctly for a fresh install and for a user who already met the conditions"), on a fixed virtual clock.
///
/// - A fresh install: nothing donated, parameters at their defaults.
/// - An already-qualified user: every event a rule counts with `gte`/`gt` donated, all now, as many times as the
///   largest of those thresholds asks (`gt n` asks n + 1), each donation carrying the values the event's `where`
///   rules ask for (and a value for each `largestGroupBy` key), so one group holds them all. Events counted only
///   with `eq`, `ne`, `lt` or `lte` are not donated; parameters stay at their defaults.
///
/// Templates are not simulated (they are tips only once instantiated). Groups and the display frequency apply, as
/// in the daemon. Schedules and holdouts do not: each tip is looked at as if its schedule (and its groups') were open,
/// for an install shown one of its copies.
public struct Simulation: Sendable, Hashable {
  /// The number of tips simulated.
  public var tipCount: Int
  /// Tips shown on a fresh install, in catalog order.
  public var freshInstall: [String]
  /// Tips shown to an already-qualified user, in catalog order.
  public var alreadyQualified: [String]
  /// Tips shown in neither case (worth a look), in catalog order.
  public var neverShows: [String]

  /// The instant the simulation runs at (2023-11-14T22:13:20Z).
  public static let now: Timestamp = 1_700_000_000

  public init(tipCount: Int, freshInstall: [String], alreadyQualified: [String], neverShows: [String]) {
    self.tipCount = tipCount
    self.freshInstall = freshInstall
    self.alreadyQualified = alreadyQualified
    self.neverShows = neverShows
  }

  /// Runs both cases on fresh engines.
  public static func run(_ catalog: Catalog) throws(EngineError) -> Simulation {
    let ids = catalog.tips.map { $0.id }
    let fresh = try shown(catalog, donations: [])
    let qualified = try shown(catalog, donations: qualifyingDonations(catalog.tips))
    return Simulation(
      tipCount: ids.count, freshInstall: ids.filter { fresh.contains($0) },
      alreadyQualified: ids.filter { qualified.contains($0) },
      neverShows: ids.filter { !fresh.contains($0) && !qualified.contains($0) })
  }

  /// Per event: how many donations, with which associated values.
  static func qualifyingDonations(_ tips: [TipDefinition]) -> [(event: String, count: Int, info: JSONObject)] {
    var order: [String] = []
    var needs: [String: (count: Int, info: JSONObject)] = [:]
    func visit(_ rule: Rule) {
      switch rule {
      case .event(let event):
        let count: Int
        switch event.countOperator {
        case .gte: count = event.countValue
        case .gt: count = event.countValue + 1
        case .eq, .ne, .lt, .lte: count = 0
        }
        guard count > 0 else { return }
        if needs[event.eventID] == nil {
          order.append(event.eventID)
          needs[event.eventID] = (0, JSONObject())
        }
        needs[event.eventID]!.count = max(needs[event.eventID]!.count, count)
        for (key, value) in event.matching ?? [:] where needs[event.eventID]!.info[key] == nil {
          switch value {
          case .string, .int, .double, .bool, .null: needs[event.eventID]!.info[key] = value
          case .array, .object: continue
          }
        }
        if let key = event.largestGroupBy, needs[event.eventID]!.info[key] == nil {
          needs[event.eventID]!.info[key] = "simulated"
        }
      case .parameter, .tip: return
      case .allOf(let rules), .anyOf(let rules): rules.forEach(visit)
      case .not(let inner): visit(inner)
      }
    }
    for tip in tips { tip.rules.forEach(visit) }
    return order.map { ($0, needs[$0]!.count, needs[$0]!.info) }
  }

  static func shown(_ catalog: Catalog, donations: [(event: String, count: Int, info: JSONObject)]) throws(EngineError)
    -> Set<String>
  {
    let engine = Engine(clock: VirtualClock(now: now))
    var catalog = catalog
    for index in catalog.tips.indices {
      catalog.tips[index].schedule = nil
      catalog.tips[index].variants.removeAll { $0.holdout }
    }
    for index in catalog.groups.indices { catalog.groups[index].schedule = nil }
    _ = try catalog.register(in: engine)
    for donation in donations {
      for _ in 0..<donation.count {
        _ = try engine.donate(donation.event, info: donation.info.isEmpty ? nil : donation.info)
      }
    }
    _ = engine.advanceTime()
    return Set(engine.states().filter { $0.shouldDisplay }.map { $0.id })
  }

  /// `fresh install: 1 of 5 show: welcome.tour`, `already qualified: …`, `never shows: …`.
  var textLines: [String] {
    func line(_ label: String, _ ids: [String]) -> String {
      "\(label): \(ids.count) of \(tipCount) show" + (ids.isEmpty ? "" : ": " + ids.joined(separator: ", "))
    }
    return [
      line("fresh install", freshInstall), line("already qualified", alreadyQualified),
      "never shows: " + (neverShows.isEmpty ? "none" : neverShows.joined(separator: ", ")),
    ]
  }

  var json: JSONValue {
    [
      "tips": .int(Int64(tipCount)), "freshInstall": .array(freshInstall.map { .string($0) }),
      "alreadyQualified": .array(alreadyQualified.map { .string($0) }),
      "neverShows": .array(neverShows.map { .string($0) }),
    ]
  }
}
