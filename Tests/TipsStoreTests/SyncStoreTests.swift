import Foundation
import Testing
import TipsEngine
import TipsJSON

@testable import TipsStore

/// The store's side of sync: merged donation histories and lifetime counts, and the sync tables, committed with the
/// engine's writes and surviving a reopen.
@Suite struct SyncStoreTests {
  @Test func replacedHistoriesAndLifetimeCountsReload() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("d.sqlite")
    do {
      let store = try Datastore(path: path)
      try store.commit([
        .donation(eventID: "e", donation(1), keepNewest: 3),
        .donation(eventID: "e", donation(3), keepNewest: 3),
        // Rewritten in order (a merged donation went in between), then appended to and trimmed in the same batch.
        .donations(eventID: "e", [donation(1), donation(2, ["from": "tablet"]), donation(3)], lifetime: 7),
        .donation(eventID: "e", donation(4), keepNewest: 3),
        .lifetime(eventID: "never.donated.here", 5),
      ])
      store.close()
    }
    let store = try Datastore(path: path)
    defer { store.close() }
    let snapshot = try store.load()
    #expect(snapshot.donations["e"] == [donation(2, ["from": "tablet"]), donation(3), donation(4)])
    #expect(snapshot.lifetimeCounts["e"] == 8)
    #expect(snapshot.lifetimeCounts["never.donated.here"] == 5)
    // Trimming after a rewrite deletes the right rows.
    try store.commit([.donation(eventID: "e", donation(5), keepNewest: 3)])
    #expect(try store.load().donations["e"] == [donation(3), donation(4), donation(5)])
  }

  @Test func syncTablesCommitWithTheEngineWritesAndSurviveAReset() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("d.sqlite")
    do {
      let store = try Datastore(path: path)
      try store.commit(
        [.parameter(id: "p", value: 1)],
        sync: [
          .meta(key: "device", value: "phone"), .meta(key: "cursor", value: "12"), .meta(key: "gone", value: "x"),
          .meta(key: "gone", value: nil),
          .state(kind: "lifetime", device: "tablet", key: "e", value: "4"),
          .state(kind: "lifetime", device: "phone", key: "e", value: "1"),
          .state(kind: "lifetime", device: "phone", key: "e", value: nil),
          .outboxAppend(seq: 10, created: 1.5, op: #"{"kind":"reset"}"#),
          .outboxAppend(seq: 11, created: 2.5, op: #"{"kind":"x"}"#),
          .outboxDelete(seq: 10),
        ])
      // A datastore reset clears the engine's tables, not the sync tables.
      try store.commit([.reset])
      store.close()
    }
    let store = try Datastore(path: path)
    defer { store.close() }
    #expect(store.schemaVersion == Datastore.currentSchemaVersion)
    let sync = try store.loadSync()
    #expect(sync.meta == ["device": "phone", "cursor": "12"])
    #expect(sync.state == [SyncStateRow(kind: "lifetime", device: "tablet", key: "e", value: "4")])
    #expect(sync.outbox == [OutboxRow(seq: 11, created: 2.5, op: #"{"kind":"x"}"#)])
    #expect(try store.load().parameters.isEmpty)
    try store.commit([], sync: [.clearState])
    #expect(try store.loadSync().state.isEmpty)
  }
}
