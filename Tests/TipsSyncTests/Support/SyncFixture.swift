import Foundation
import Testing
import TipsEngine
import TipsJSON
import TipsTestSupport

/// The catalog every device of the convergence tests serves: rules over counts, windows, filters and parameters, both
/// display budgets, a tip with variants (records keyed `tipId\u{1F}variant`) and a `"sync": "local"` tip.
enum SyncFixture {
  static let catalog: JSONValue = [
    "displayFrequency": "immediate",
    "parameters": [
      ["id": "loggedIn", "default": false],
      ["id": "level", "default": 0],
    ],
    "tips": [
      ["id": "count.tip", "title": "Count", "rules": [["event": "e1", "count": ["gte": 3]]]],
      [
        "id": "window.tip", "title": "Window", "rules": [["event": "e2", "within": ["hours": 1], "count": ["gte": 1]]],
        "options": ["maxDisplayCount": 4],
      ],
      [
        "id": "param.tip", "title": "Param",
        "rules": [["parameter": "loggedIn", "eq": true], ["parameter": "level", "gte": 2]],
        "options": ["maxDisplayDuration": 60],
      ],
      [
        "id": "where.tip", "title": "Where",
        "rules": [
          ["event": "e3", "where": ["region": "north"], "count": ["gte": 2]],
          ["event": "e3", "largestGroupBy": "region", "count": ["gte": 2]],
        ],
      ],
      [
        "id": "variant.tip", "title": "Variant", "rules": [["event": "e1", "count": ["gte": 1]]],
        "options": ["maxDisplayCount": 3],
        "variants": ["friendly": ["title": "Friendly"], "terse": ["title": "Terse"]],
      ],
      ["id": "local.tip", "title": "Local", "sync": "local"],
    ],
  ]

  static let events = ["e1", "e2", "e3"]
  /// e1 keeps few donations, so merged histories are trimmed.
  static let limits = ["e1": 6]
  static let syncedTips = ["count.tip", "window.tip", "param.tip", "where.tip", "variant.tip"]
  static let tips = syncedTips + ["local.tip"]
  static let localTip = "local.tip"

  static func tipDefinitions() throws -> [TipDefinition] {
    try (catalog["tips"]?.arrayValue ?? []).enumerated().map { index, json in
      try TipDefinition(json: json, path: "tips[\(index)]")
    }
  }

  static func parameterDefinitions() -> [ParameterDefinition] {
    (catalog["parameters"]?.arrayValue ?? []).map {
      ParameterDefinition(id: $0["id"]?.stringValue ?? "", defaultValue: $0["default"] ?? .null)
    }
  }

  /// Writes the catalog to `directory/catalog.json`.
  static func writeCatalog(in directory: String) throws -> String {
    let path = directory + "/catalog.json"
    try Data(catalog.serialized()).write(to: URL(fileURLWithPath: path))
    return path
  }
}

/// The sync suites' seeded generator (SplitMix64, from TipsTestSupport), so a failing run can be repeated
/// (`TIPSD_SYNC_SEED`).
struct SeededGenerator: RandomNumberGenerator {
  private var generator: SplitMix64

  init(seed: UInt64) { generator = SplitMix64(seed: seed) }

  mutating func next() -> UInt64 { generator.next() }

  /// The base seed of a suite's runs: `TIPSD_SYNC_SEED` if set, else a fresh one (see ``RunSeed``).
  static func seed() -> UInt64 {
    if let text = ProcessInfo.processInfo.environment["TIPSD_SYNC_SEED"], let seed = UInt64(text) { return seed }
    return UInt64.random(in: 1...UInt64(UInt32.max))
  }
}

/// One randomised run's seed (its suite's base seed plus the run's offset). It is printed when the run starts and
/// written into every failure the run records, with the `TIPSD_SYNC_SEED` value that repeats it, so a failure
/// report alone is enough to replay the run.
struct RunSeed: CustomStringConvertible {
  /// The value of `TIPSD_SYNC_SEED` that repeats the run.
  let base: UInt64
  /// The run's own seed.
  let value: UInt64

  init(base: UInt64, offset: UInt64 = 0) {
    self.base = base
    value = base &+ offset
  }

  var description: String { "seed \(value); TIPSD_SYNC_SEED=\(base) repeats it" }

  /// Prints the seed and runs `body` with it; an error it throws is recorded with the seed. (Its expectations, and
  /// its `#require`s, name the seed in their own comments.)
  func run(_ name: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: (RunSeed) throws -> Void) {
    print("\(name): \(self)")
    do {
      try body(self)
    } catch is ExpectationFailedError {
      // A failed #require: already recorded, with its own comment.
    } catch {
      Issue.record(error, "\(self)", sourceLocation: sourceLocation)
    }
  }
}

/// The state two devices must agree on after converging, from their datastores: donations, lifetime counts,
/// parameters and every synced tip record (the `"sync": "local"` tip's and device-local settings excluded).
struct ComparableState: Equatable, CustomStringConvertible {
  var donations: [String: [Donation]]
  var lifetimes: [String: Int]
  var parameters: [String: JSONValue]
  var records: [String: TipRecord]

  init(_ snapshot: EngineSnapshot) {
    donations = snapshot.donations
    var lifetimes: [String: Int] = [:]
    for (event, list) in snapshot.donations { lifetimes[event] = list.count }
    for (event, count) in snapshot.lifetimeCounts { lifetimes[event] = count }
    self.lifetimes = lifetimes
    parameters = snapshot.parameters
    records = snapshot.tipRecords.filter { Engine.tipID(ofRecordKey: $0.key) != SyncFixture.localTip }
  }

  var description: String {
    var lines: [String] = []
    for event in donations.keys.sorted() {
      let list = donations[event] ?? []
      lines.append(
        "  \(event): \(list.count) kept, lifetime \(lifetimes[event] ?? 0): "
          + list.map { "\($0.at)\($0.info.map { JSONValue.object($0).jsonString } ?? "")" }.joined(separator: " "))
    }
    for (event, count) in lifetimes.sorted(by: { $0.key < $1.key }) where donations[event] == nil {
      lines.append("  \(event): lifetime \(count)")
    }
    for (id, value) in parameters.sorted(by: { $0.key < $1.key }) { lines.append("  parameter \(id) = \(value)") }
    for (key, record) in records.sorted(by: { $0.key < $1.key }) {
      lines.append(
        "  record \(key.replacingOccurrences(of: "\u{1F}", with: "/")): \(record.invalidationReason?.rawValue ?? "-") "
          + "at \(record.invalidatedAt.map { String($0) } ?? "-") count \(record.displayCount) "
          + "duration \(record.displayedDuration) first \(record.firstDisplayedAt.map { String($0) } ?? "-") "
          + "last \(record.lastDisplayedAt.map { String($0) } ?? "-")")
    }
    return lines.joined(separator: "\n")
  }
}
