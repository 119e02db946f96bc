// Datastore benchmarks: group commit versus one transaction per mutation, and startup with 1,000,000 stored
// donations. Everything runs on real files in a fresh directory under /tmp, with the default synchronous=NORMAL
// unless the figure's name ends in _fsync (synchronous=FULL).
//
// A mutation here is one donation with small associated values to one of 50 events bounded at 1000, so after the
// first 50,000 every donation also deletes its event's oldest one (the steady state of a long-running app).
import TipsEngine
import TipsJSON
import TipsStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A fresh directory under /tmp.
private func makeBenchDirectory() -> String {
  var template = Array("/tmp/tipsd-store-bench-XXXXXX".utf8CString)
  let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
  precondition(created != nil, "mkdtemp failed")
  return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Removes a datastore and its companions.
private func removeDatastore(_ path: String) {
  for suffix in ["", "-wal", "-shm", ".lock"] { unlink(path + suffix) }
}

/// The write of mutation `k`: one donation with small associated values, bounded like the engine's default.
private func benchDonation(_ k: Int) -> StateWrite {
  .donation(
    eventID: "event.\(k % 50)",
    Donation(at: 1_700_000_000 + Double(k), info: ["n": .int(Int64(k)), "region": "north"]),
    keepNewest: 1000)
}

/// Mutations per second applying `count` donations in transactions of `groupSize`.
private func mutationsPerSecond(path: String, count: Int, groupSize: Int, fsync: Bool = false) throws -> Double {
  removeDatastore(path)
  let store = try Datastore(path: path, options: DatastoreOptions(fsync: fsync))
  defer {
    store.close()
    removeDatastore(path)
  }
  // Warm up: create the events and their counters, fill the page cache.
  try store.commit((0..<200).map(benchDonation))
  var batches: [[StateWrite]] = []
  var k = 200
  while k < 200 + count {
    let end = min(k + groupSize, 200 + count)
    batches.append((k..<end).map(benchDonation))
    k = end
  }
  let start = monotonic()
  for batch in batches { try store.commit(batch) }
  return Double(count) / (monotonic() - start)
}

/// Microseconds per donation committed in groups of `groupSize`, each donation with (or without) its lifecycle
/// history entry (a goal event's donation, issue #13): the store's share of what recording history costs.
private func microsecondsPerDonation(path: String, count: Int, groupSize: Int, history: Bool) throws -> Double {
  removeDatastore(path)
  let store = try Datastore(path: path)
  defer {
    store.close()
    removeDatastore(path)
  }
  func write(_ k: Int) -> StateWrite {
    .donation(eventID: "filter.used", Donation(at: 1_700_000_000 + Double(k)), keepNewest: 1000)
  }
  func entry(_ k: Int) -> HistoryEvent {
    HistoryEvent(cursor: Int64(k + 1), kind: .donation, at: 1_700_000_000 + Double(k), eventID: "filter.used")
  }
  try store.commit((0..<2_000).map(write), history: history ? (0..<2_000).map(entry) : [])
  var batches: [(writes: [StateWrite], history: [HistoryEvent])] = []
  var k = 2_000
  while k < 2_000 + count {
    let end = min(k + groupSize, 2_000 + count)
    batches.append(((k..<end).map(write), history ? (k..<end).map(entry) : []))
    k = end
  }
  let start = monotonic()
  for batch in batches { try store.commit(batch.writes, history: batch.history) }
  return (monotonic() - start) / Double(count) * 1e6
}

/// The store's share of recording history: microseconds per goal donation committed with and without its entry.
func storeHistoryFigures() throws {
  let directory = makeBenchDirectory()
  defer { rmdir(directory) }
  let path = directory + "/history.sqlite"
  var plain: [Double] = []
  var recorded: [Double] = []
  for _ in 0..<5 {
    plain.append(try microsecondsPerDonation(path: path, count: 50_000, groupSize: 64, history: false))
    recorded.append(try microsecondsPerDonation(path: path, count: 50_000, groupSize: 64, history: true))
  }
  let plainUs = plain.sorted()[2]
  let recordedUs = recorded.sorted()[2]
  print("store.goal_donation_us_group_commit: \(format(plainUs, decimals: 2))")
  print("store.goal_donation_with_history_entry_us_group_commit: \(format(recordedUs, decimals: 2))")
  print("store.history_entry_us: \(format(recordedUs - plainUs, decimals: 2))")
}

/// Builds a datastore holding `events` × `perEvent` donations, in one transaction per 100,000 writes.
/// `uniqueInfo`: every donation carries distinct associated values (worst case for the load); otherwise half
/// carry none and most of the rest repeat a few typical objects.
private func buildLargeDatastore(path: String, events: Int, perEvent: Int, uniqueInfo: Bool) throws {
  removeDatastore(path)
  let store = try Datastore(path: path)
  defer { store.close() }
  let regions: [JSONObject] = [
    ["region": "north"], ["region": "south"], ["region": "east", "difficulty": 2], ["region": "west"],
    ["trail": "ridge", "paved": false],
  ]
  let total = events * perEvent
  var batch: [StateWrite] = []
  batch.reserveCapacity(100_000)
  for k in 0..<total {
    let info: JSONObject?
    if uniqueInfo {
      info = ["n": .int(Int64(k)), "region": "north"]
    } else {
      switch k % 10 {
      case 0..<5: info = nil
      case 5..<9: info = regions[k % regions.count]
      default: info = ["n": .int(Int64(k))]
      }
    }
    batch.append(
      .donation(
        eventID: "event.\(k % events)", Donation(at: 1_600_000_000 + Double(k), info: info), keepNewest: perEvent))
    if batch.count == 100_000 {
      try store.commit(batch)
      batch.removeAll(keepingCapacity: true)
    }
  }
  try store.commit(batch)
  try store.commit([.parameter(id: "isLoggedIn", value: true), .displayFrequency(.daily), .cooldown(1_700_000_000)])
}

/// Median milliseconds of `Datastore(path:)` + `load()` over `runs` (the open reads and checks the whole file; the
/// load then hands over what it read).
/// Also returns the median milliseconds until an engine has been restored from the snapshot too (what `tipsd
/// serve` does before it listens).
private func startupMilliseconds(path: String, expected: Int, runs: Int) throws -> (load: Double, ready: Double) {
  var totals: [Double] = []
  var ready: [Double] = []
  for _ in 0..<runs {
    let start = monotonic()
    let store = try Datastore(path: path)
    let snapshot = try store.load()
    let loaded = monotonic()
    let engine = Engine(clock: VirtualClock(now: 2_000_000_000))
    engine.restore(snapshot)
    let restored = monotonic()
    precondition(engine.donationCount("event.0") > 0, "engine restored nothing")
    let count = snapshot.donations.values.reduce(0) { $0 + $1.count }
    precondition(count == expected, "loaded \(count) donations, expected \(expected)")
    store.close()
    totals.append((loaded - start) * 1000)
    ready.append((restored - start) * 1000)
  }
  return (totals.sorted()[totals.count / 2], ready.sorted()[ready.count / 2])
}

private func format(_ value: Double, decimals: Int = 1) -> String {
  var scale = 1.0
  for _ in 0..<decimals { scale *= 10 }
  let rounded = (value * scale).rounded() / scale
  return decimals == 0 ? String(Int(rounded)) : String(rounded)
}

func runStoreBenchmarks() throws {
  let directory = makeBenchDirectory()
  defer { rmdir(directory) }

  // Group commit: what the server does (all writes of an event-loop turn in one transaction).
  let throughputPath = "\(directory)/throughput.sqlite"
  let grouped = try mutationsPerSecond(path: throughputPath, count: 200_000, groupSize: 100)
  let single = try mutationsPerSecond(path: throughputPath, count: 20_000, groupSize: 1)
  print("store.mutations_per_sec_group_commit: \(format(grouped, decimals: 0))")
  print("store.mutations_per_sec_per_mutation_txn: \(format(single, decimals: 0))")
  print("store.group_commit_speedup: \(format(grouped / single, decimals: 2))")
  print("store.group_commit_speedup_target: 10")

  // The same with --fsync (synchronous=FULL: one fsync per commit), where group commit matters most.
  let groupedFsync = try mutationsPerSecond(path: throughputPath, count: 20_000, groupSize: 100, fsync: true)
  let singleFsync = try mutationsPerSecond(path: throughputPath, count: 1_000, groupSize: 1, fsync: true)
  print("store.mutations_per_sec_group_commit_fsync: \(format(groupedFsync, decimals: 0))")
  print("store.mutations_per_sec_per_mutation_txn_fsync: \(format(singleFsync, decimals: 0))")
  print("store.group_commit_speedup_fsync: \(format(groupedFsync / singleFsync, decimals: 2))")

  // Startup with 1,000,000 donations: 1000 events at the default bound of 1000 each.
  let largePath = "\(directory)/large.sqlite"
  let buildStart = monotonic()
  try buildLargeDatastore(path: largePath, events: 1000, perEvent: 1000, uniqueInfo: false)
  let buildSeconds = monotonic() - buildStart
  var info = stat()
  stat(largePath, &info)
  let startup = try startupMilliseconds(path: largePath, expected: 1_000_000, runs: 3)
  print("store.startup_ms_1000000_donations: \(format(startup.load))")
  print("store.startup_with_engine_restore_ms_1000000_donations: \(format(startup.ready))")
  print("store.startup_ms_1000000_donations_target: 1000")
  print("store.file_mb_1000000_donations: \(format(Double(info.st_size) / 1_048_576))")
  print("store.build_s_1000000_donations: \(format(buildSeconds, decimals: 2))")
  removeDatastore(largePath)

  // Worst case: every donation carries distinct associated values, all parsed.
  try buildLargeDatastore(path: largePath, events: 1000, perEvent: 1000, uniqueInfo: true)
  let unique = try startupMilliseconds(path: largePath, expected: 1_000_000, runs: 3)
  print("store.startup_ms_1000000_donations_unique_info: \(format(unique.load))")
  print("store.startup_with_engine_restore_ms_1000000_donations_unique_info: \(format(unique.ready))")
  removeDatastore(largePath)
}
