// tipsd-crash-child — the victim of the datastore's SIGKILL crash test (TipsStoreTests/CrashTests.swift).
//
//   tipsd-crash-child PATH
//
// Opens the datastore at PATH, loads it, prints `ready <N>` where N is the number of the next mutation (one past
// the highest mutation found in the store), then applies mutations as fast as it can, forever: mutation k donates
// event `e<k % 7>` with info {"n": k} at instant k (keeping the newest `crashChildKeepNewest` per event), and, when
// k is a multiple of 5, sets parameter `last5` to k; when k is a multiple of 11, records the (k/11 + 1)th display
// of tip `t`. Mutations are applied in groups of 1–20 (one transaction each) and `ack <k>` is written to stdout for
// each only after `commit` returned. The parent kills it with SIGKILL at a random moment and checks that every
// acknowledged mutation is in the store.
import TipsEngine
import TipsJSON
import TipsStore
import TipsSystem

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Donations kept per event; the parent checks the same bound.
let crashChildKeepNewest = 300

/// Writes `text` to stdout in one `write(2)` (unbuffered, so nothing acknowledged waits in a buffer).
func emit(_ text: String) {
  do {
    try System.writeAll(1, Array(text.utf8))
  } catch {
    exit(3)
  }
}

/// The writes of mutation `k`.
func writes(of k: Int) -> [StateWrite] {
  var writes: [StateWrite] = [
    .donation(
      eventID: "e\(k % 7)", Donation(at: Double(k), info: ["n": .int(Int64(k))]), keepNewest: crashChildKeepNewest)
  ]
  if k % 5 == 0 { writes.append(.parameter(id: "last5", value: .int(Int64(k)))) }
  if k % 11 == 0 {
    let record = TipRecord(
      displayCount: k / 11 + 1, displayedDuration: Double(k), firstDisplayedAt: 0, lastDisplayedAt: Double(k))
    writes.append(.tipRecord(id: "t", record))
  }
  return writes
}

func run() -> Int32 {
  guard CommandLine.arguments.count >= 2 else {
    emit("usage: tipsd-crash-child PATH\n")
    return 2
  }
  let path = CommandLine.arguments[1]
  do {
    let store = try Datastore(path: path)
    let snapshot = try store.load()
    var next = 0
    for donations in snapshot.donations.values {
      for donation in donations {
        if case .int(let n)? = donation.info?["n"] { next = max(next, Int(n) + 1) }
      }
    }
    emit("ready \(next)\n")
    var generator = SystemRandomNumberGenerator()
    while true {
      let group = Int.random(in: 1...20, using: &generator)
      var batch: [StateWrite] = []
      for k in next..<(next + group) { batch += writes(of: k) }
      try store.commit(batch)
      var acks = ""
      for k in next..<(next + group) { acks += "ack \(k)\n" }
      emit(acks)
      next += group
    }
  } catch {
    emit("error \(error)\n")
    return 1
  }
}

exit(run())
