import Foundation
import Testing
import TipsJSON
import TipsLogging
import TipsRecords
import TipsSync
import TipsTestSupport
import TipsTransport

@testable import TipsHosted

/// The hosted store against a real PostgreSQL, on the embedded loop.
@Suite struct HostedStoreTests {
  final class Harness {
    let postgres: PostgresServer
    let loop = EmbeddedEventLoop()
    let store: HostedStore
    var notices: [HostedStore.Notice] = []

    /// `setBased`: turns of several accounts go in one set-based statement (the default, which the protocol suites
    /// run too); false: one `tipsd.commit` call an account (`--commit-per-account`).
    init(postgres: PostgresServer, node: String = "node-a", setBased: Bool = true, pipeline: Int = 1) throws {
      self.postgres = postgres
      var configuration = HostedStore.Configuration(server: try SyncServer(postgres.url), node: node)
      configuration.setBasedCommit = setBased
      configuration.commitPipeline = pipeline
      store = HostedStore(
        loop: loop, configuration: configuration, logger: Logger(level: .error, handler: DiscardingLogHandler()))
      store.onNotice = { [unowned self] in self.notices.append($0) }
      store.start()
    }

    @discardableResult
    func spin(until condition: () -> Bool) -> Bool {
      waitUntil {
        loop.run()
        // Retries wait on timers: let the loop's manual time follow the real one roughly.
        loop.advance(by: 5)
        return condition()
      }
    }

    func await<T>(_ call: (@escaping (Result<T, HostedError>) -> Void) -> Void) throws -> T {
      var result: Result<T, HostedError>?
      call { result = $0 }
      guard spin(until: { result != nil }), let result else { throw TestFailure("no answer") }
      return try result.get()
    }
  }

  @Test func commitsLoadsPullsAndErasesAccounts() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try Harness(postgres: postgres)
    defer { harness.store.stop() }
    // The listener too: a notification sent before it listens is never heard.
    #expect(harness.spin { harness.store.isWritable && harness.store.isReadable && harness.store.isListening })

    let chunk = HostedStore.HistoryChunk(count: 2, firstAt: 10, lastAt: 11, bytes: [1, 2, 3, 0xff])
    let answers = try harness.await { completion in
      harness.store.commit(
        [
          HostedStore.AccountChanges(
            account: "bob",
            operations: [
              PendingOperation(seq: 1, payload: #"{"a":1}"#), PendingOperation(seq: 2, payload: #"{"b":"x\"y"}"#),
            ], history: [chunk]),
          HostedStore.AccountChanges(
            account: "alice", operations: [PendingOperation(seq: 5, payload: "{}")], history: [chunk, chunk]),
        ], completion: completion)
    }
    #expect(answers["bob"] == HostedStore.Committed(lastCursor: 2, historyFirst: [1]))
    #expect(answers["alice"] == HostedStore.Committed(lastCursor: 1, historyFirst: [1, 3]))
    // Both accounts in one set-based call (schema 12), which nothing made fail.
    #expect(harness.store.commitCounts == (0, 1))
    #expect(harness.spin { harness.notices.count >= 2 })
    #expect(Set(harness.notices) == [.operations(account: "alice", cursor: 1), .operations(account: "bob", cursor: 2)])

    // A repeated push stores nothing twice.
    let again = try harness.await { completion in
      harness.store.commit(
        [
          HostedStore.AccountChanges(
            account: "bob",
            operations: [PendingOperation(seq: 2, payload: #"{"b":"x\"y"}"#), PendingOperation(seq: 3, payload: "{}")],
            history: [])
        ],
        completion: completion)
    }
    #expect(again["bob"]?.lastCursor == 3)

    let bob = try harness.await { harness.store.load("bob", completion: $0) }
    #expect(bob.exists && bob.snapshot == nil && bob.historyCursor == 2)
    #expect(bob.operations.map(\.cursor) == [1, 2, 3])
    #expect(bob.operations.map(\.payload) == [#"{"a":1}"#, #"{"b":"x\"y"}"#, "{}"])
    #expect(bob.operations.allSatisfy { $0.device == "node-a" })
    let nobody = try harness.await { harness.store.load("nobody", completion: $0) }
    #expect(!nobody.exists && nobody.operations.isEmpty)

    let snapshot = AccountSnapshot(cursor: 2, meta: ["epoch": "0"], rows: [], donations: [:])
    try harness.await { harness.store.writeSnapshot(account: "bob", snapshot, completion: $0) }
    // An older snapshot never replaces a newer one.
    try harness.await {
      harness.store.writeSnapshot(
        account: "bob", AccountSnapshot(cursor: 1, meta: [:], rows: [], donations: [:]), completion: $0)
    }
    let resumed = try harness.await { harness.store.load("bob", completion: $0) }
    #expect(resumed.snapshot == snapshot)
    #expect(resumed.operations.map(\.cursor) == [3])

    let pulled = try harness.await { harness.store.pull("bob", after: 1, limit: 10, completion: $0) }
    #expect(pulled.map(\.cursor) == [2, 3])
    let history = try harness.await { harness.store.history("alice", after: 0, limit: 10, completion: $0) }
    #expect(
      history == [
        HostedStore.StoredHistory(cursor: 1, count: 2, bytes: chunk.bytes),
        HostedStore.StoredHistory(cursor: 3, count: 2, bytes: chunk.bytes),
      ])
    let later = try harness.await { harness.store.history("alice", after: 2, limit: 10, completion: $0) }
    #expect(later.map(\.cursor) == [3])
    let listed = try harness.await { harness.store.listAccounts(after: nil, limit: 10, completion: $0) }
    #expect(listed.map(\.account) == ["alice", "bob"])
    let page = try harness.await { harness.store.listAccounts(after: "alice", limit: 10, completion: $0) }
    #expect(page.map(\.account) == ["bob"])

    harness.notices = []
    try harness.await { harness.store.deleteAccount("bob", erasureDays: 30, completion: $0) }
    #expect(harness.spin { harness.notices.contains(.deleted(account: "bob")) })
    for table in ["ops", "history", "snapshots"] {
      #expect(try postgres.query("SELECT count(*) FROM tipsd.\(table) WHERE account = 'bob'") == "0\n", "\(table)")
    }
    // Its row is marked (schema 16), and no listing names it.
    #expect(try postgres.query("SELECT erased FROM tipsd.accounts WHERE account = 'bob'") == "t\n")
    let left = try harness.await { harness.store.listAccounts(after: nil, limit: 10, completion: $0) }
    #expect(left.map(\.account) == ["alice"])
    #expect(try postgres.query("SELECT count(*) FROM tipsd.ops WHERE account = 'alice'") == "1\n")
  }

  /// Erasure is final for `--erasure-days`: a push or a history append in flight (another node's, a device's) stores
  /// nothing and says so (-1), a load says the account is erased, and the tombstone lists; an import lifts it; a
  /// fallen tombstone is pruned.
  @Test func anErasedAccountStaysErased() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try Harness(postgres: postgres)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isWritable && harness.store.isReadable })
    let chunk = HostedStore.HistoryChunk(count: 1, firstAt: 10, lastAt: 10, bytes: [1])
    _ = try harness.await { completion in
      harness.store.commit(
        [
          HostedStore.AccountChanges(
            account: "eve", operations: [PendingOperation(seq: 1, payload: "{}")], history: [chunk])
        ],
        completion: completion)
    }
    try harness.await { harness.store.deleteAccount("eve", erasureDays: 30, completion: $0) }
    let late = try harness.await { completion in
      harness.store.commit(
        [
          HostedStore.AccountChanges(
            account: "eve", operations: [PendingOperation(seq: 2, payload: "{}")], history: [chunk]),
          HostedStore.AccountChanges(
            account: "zoe", operations: [PendingOperation(seq: 1, payload: "{}")], history: []),
        ], completion: completion)
    }
    #expect(late["eve"] == HostedStore.Committed(lastCursor: -1, historyFirst: [-1]))
    #expect(late["eve"]?.erased == true)
    // The other account of the same commit is stored as usual.
    #expect(late["zoe"]?.lastCursor == 1 && late["zoe"]?.erased == false)
    for table in ["ops", "history", "idempotency"] {
      #expect(try postgres.query("SELECT count(*) FROM tipsd.\(table) WHERE account = 'eve'") == "0\n", "\(table)")
    }
    // Its row stays while the tombstone stands, marked erased with its cursors at 0 (schema 16), and no listing
    // names it.
    #expect(try postgres.query("SELECT erased, last_cursor FROM tipsd.accounts WHERE account = 'eve'") == "t|0\n")
    let listed = try harness.await { harness.store.listAccounts(after: nil, limit: 10, completion: $0) }
    #expect(listed.map(\.account) == ["zoe"])
    // A device syncing straight to PostgreSQL pushes nothing either.
    #expect(try postgres.query("SELECT tipsd.push('eve', 'phone', 'c', '{9}'::bigint[], '{\"{}\"}'::text[])") == "-1\n")
    let loaded = try harness.await { harness.store.load("eve", completion: $0) }
    #expect(loaded.erased && !loaded.exists)
    let erased = try harness.await { harness.store.erasedAccounts(completion: $0) }
    #expect(erased.map(\.account) == ["eve"])
    #expect(abs((erased.first?.until ?? 0) - (Date().timeIntervalSince1970 + 30 * 86_400)) < 600)

    try harness.await {
      harness.store.importAccount(
        "eve", snapshot: AccountSnapshot(cursor: 0, meta: [:], rows: [], donations: [:]), history: [],
        completion: $0)
    }
    #expect(try harness.await { harness.store.load("eve", completion: $0) }.erased == false)
    #expect(try postgres.query("SELECT erased FROM tipsd.accounts WHERE account = 'eve'") == "f\n")

    try harness.await { harness.store.deleteAccount("zoe", erasureDays: 30, completion: $0) }
    try postgres.query("UPDATE tipsd.erased SET until = now() - interval '1 second' WHERE account = 'zoe'")
    #expect(try harness.await { harness.store.pruneErased(completion: $0) } == 1)
    #expect(try postgres.query("SELECT count(*) FROM tipsd.erased") == "0\n")
    // The fallen tombstone's marked row went with it.
    #expect(try postgres.query("SELECT count(*) FROM tipsd.accounts WHERE account = 'zoe'") == "0\n")
  }

  /// A turn without idempotency keys goes through the set-based statement without the keys' CTEs, a turn with keys
  /// through the full one: both store every account's operations and history, the second its replies too.
  @Test func setBasedTurnsWithAndWithoutKeysStoreTheSame() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try Harness(postgres: postgres)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isWritable })
    let chunk = HostedStore.HistoryChunk(count: 1, firstAt: 5, lastAt: 5, bytes: [1, 2, 3])
    func turn(_ seq: Int64, keys: Bool) throws -> [String: HostedStore.Committed] {
      try harness.await { completion in
        harness.store.commit(
          ["x", "y"].map { account in
            HostedStore.AccountChanges(
              account: account, operations: [PendingOperation(seq: seq, payload: "{\"n\":\(seq)}")],
              history: [chunk],
              replies: keys ? [IdempotentReply(key: "k\(seq)", result: Array("\"\(account)\"".utf8), at: 1)] : [])
          }, completion: completion)
      }
    }
    let plain = try turn(1, keys: false)
    #expect(plain["x"]?.lastCursor == 1 && plain["y"]?.lastCursor == 1 && plain["x"]?.historyFirst == [1])
    let keyed = try turn(2, keys: true)
    #expect(keyed["x"]?.lastCursor == 2 && keyed["y"]?.lastCursor == 2 && keyed["y"]?.historyFirst == [2])
    #expect(harness.store.commitCounts == (0, 2))
    #expect(
      try postgres.query("SELECT account, cursor, op FROM tipsd.ops ORDER BY account, cursor")
        == "x|1|{\"n\":1}\nx|2|{\"n\":2}\ny|1|{\"n\":1}\ny|2|{\"n\":2}\n")
    #expect(
      try postgres.query("SELECT account, cursor, encode(entries, 'hex') FROM tipsd.history ORDER BY account, cursor")
        == "x|1|010203\nx|2|010203\ny|1|010203\ny|2|010203\n")
    #expect(
      try postgres.query("SELECT account, key, reply FROM tipsd.idempotency ORDER BY account")
        == "x|k2|\"x\"\ny|k2|\"y\"\n")
  }

  /// One account's failing statement loses that account's part alone (#42): the other accounts of the commit are
  /// stored; the store keeps working. When PostgreSQL goes away commits fail at once, and the store reconnects by
  /// itself.
  @Test func aFailedAccountStoresNothingOfItsOwnAndTheStoreReconnects() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try Harness(postgres: postgres)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isWritable })
    // A payload PostgreSQL refuses (a NUL byte cannot be stored in text) fails b's statement only.
    let mixed = try harness.await { completion in
      harness.store.commit(
        [
          HostedStore.AccountChanges(
            account: "a", operations: [PendingOperation(seq: 1, payload: "{}")], history: [],
            replies: [IdempotentReply(key: "k", result: Array("1".utf8), at: 1)]),
          HostedStore.AccountChanges(
            account: "b", operations: [PendingOperation(seq: 1, payload: "bad\u{0}payload")], history: [],
            replies: [IdempotentReply(key: "k", result: Array("2".utf8), at: 1)]),
          HostedStore.AccountChanges(account: "c", operations: [PendingOperation(seq: 1, payload: "{}")], history: []),
        ], completion: completion)
    }
    #expect(mixed["a"]?.lastCursor == 1 && mixed["a"]?.refused == nil)
    #expect(mixed["c"]?.lastCursor == 1 && mixed["c"]?.refused == nil)
    #expect(mixed["b"]?.refused != nil)
    // The set-based call failed as a whole; each account was then committed alone.
    #expect(harness.store.commitCounts == (1, 0))
    #expect(try postgres.query("SELECT account FROM tipsd.ops ORDER BY account") == "a\nc\n")
    #expect(try postgres.query("SELECT account, reply FROM tipsd.idempotency") == "a|1\n")

    try postgres.stop()
    #expect(harness.spin { !harness.store.isWritable })
    var refused: Result<[String: HostedStore.Committed], HostedError>?
    harness.store.commit([
      HostedStore.AccountChanges(account: "a", operations: [PendingOperation(seq: 1, payload: "{}")], history: [])
    ]) {
      refused = $0
    }
    #expect(harness.spin { refused != nil })
    if case .failure(let error) = refused {
      #expect(error.message.contains("PostgreSQL is unavailable"))
    } else {
      Issue.record("a commit succeeded while PostgreSQL was down")
    }
    try postgres.start()
    #expect(harness.spin { harness.store.isWritable })
    let answers = try harness.await { completion in
      harness.store.commit(
        [HostedStore.AccountChanges(account: "a", operations: [PendingOperation(seq: 2, payload: "{}")], history: [])],
        completion: completion)
    }
    #expect(answers["a"]?.lastCursor == 2)
  }

  /// With --commit-per-account a turn's accounts go one `tipsd.commit` call each, in one transaction, with the same
  /// answers.
  @Test func theDefaultCommitsEachAccountByItsOwnCall() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try Harness(postgres: postgres, setBased: false)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isWritable })
    let chunk = HostedStore.HistoryChunk(count: 2, firstAt: 10, lastAt: 11, bytes: [1])
    let answers = try harness.await { completion in
      harness.store.commit(
        [
          HostedStore.AccountChanges(
            account: "bob",
            operations: [PendingOperation(seq: 1, payload: "{}"), PendingOperation(seq: 2, payload: "{}")],
            history: [chunk]),
          HostedStore.AccountChanges(
            account: "alice", operations: [PendingOperation(seq: 5, payload: "{}")], history: [chunk, chunk]),
        ], completion: completion)
    }
    #expect(answers["bob"] == HostedStore.Committed(lastCursor: 2, historyFirst: [1]))
    #expect(answers["alice"] == HostedStore.Committed(lastCursor: 1, historyFirst: [1, 3]))
    #expect(harness.store.commitCounts == (0, 0))
  }

  /// An idempotency key another node committed first refuses only that account's part of this node's commit, with
  /// the first reply, and stores nothing of it; the other accounts are stored (#42).
  @Test func aKeyCommittedByAnotherNodeRefusesThatAccountAlone() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let first = try Harness(postgres: postgres, node: "node-a")
    defer { first.store.stop() }
    let second = try Harness(postgres: postgres, node: "node-b")
    defer { second.store.stop() }
    #expect(first.spin { first.store.isWritable } && second.spin { second.store.isWritable })
    func reply(_ key: String, _ result: String) -> IdempotentReply {
      IdempotentReply(key: key, result: Array(result.utf8), at: 1)
    }
    // Each harness runs its own loop: while the other one spun, this one's links may have been read again (a busy
    // machine), so each is seen writable again just before it commits.
    #expect(first.spin { first.store.isWritable })
    let won = try first.await { completion in
      first.store.commit(
        [
          HostedStore.AccountChanges(
            account: "alice", operations: [PendingOperation(seq: 1, payload: "{}")], history: [],
            replies: [reply("k", "\"first\"")])
        ], completion: completion)
    }
    #expect(won["alice"]?.refused == nil)
    #expect(second.spin { second.store.isWritable })
    let lost = try second.await { completion in
      second.store.commit(
        [
          HostedStore.AccountChanges(
            account: "alice", operations: [PendingOperation(seq: 1, payload: "{}")],
            history: [HostedStore.HistoryChunk(count: 1, firstAt: 1, lastAt: 1, bytes: [1])],
            replies: [reply("j", "\"new\""), reply("k", "\"second\"")]),
          HostedStore.AccountChanges(
            account: "bob", operations: [PendingOperation(seq: 1, payload: "{}")], history: [],
            replies: [reply("k", "\"bob\"")]),
        ], completion: completion)
    }
    #expect(lost["alice"]?.refused != nil)
    // The set-based statement fails on a key stored before (#47), and each account is then committed alone
    // (`tipsd.commit`): alice refused with the first reply, bob stored.
    #expect(second.store.commitCounts == (1, 0))
    #expect(lost["alice"]?.firstReplies == ["k": Array("\"first\"".utf8)])
    #expect(lost["bob"]?.refused == nil && lost["bob"]?.lastCursor == 1)
    // Nothing of alice's part on node-b: no operation, no history, not even its new key j.
    #expect(try postgres.query("SELECT account, device FROM tipsd.ops ORDER BY 1, 2") == "alice|node-a\nbob|node-b\n")
    #expect(try postgres.query("SELECT count(*) FROM tipsd.history") == "0\n")
    #expect(
      try postgres.query("SELECT account, key, reply FROM tipsd.idempotency ORDER BY 1, 2")
        == "alice|k|\"first\"\nbob|k|\"bob\"\n")
    let looked = try second.await { second.store.reply(of: "alice", key: "k", since: 0, completion: $0) }
    #expect(looked?.result == Array("\"first\"".utf8))
    #expect(try second.await { second.store.reply(of: "alice", key: "j", since: 0, completion: $0) } == nil)
  }

  /// A database migrated by an earlier tipsd (schema 1, sync only) is migrated to this build's schema and keeps its
  /// operations; its functions are replaced by the current ones (erasure checked).
  @Test func aVersionOneDatabaseIsMigrated() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    try postgres.query(Self.versionOneSchema)
    #expect(try postgres.query("SELECT version FROM tipsd.schema_version") == "1\n")
    try postgres.query("SELECT tipsd.push('alice', 'phone', 'c', '{7}'::bigint[], '{\"{}\"}'::text[])")
    let harness = try Harness(postgres: postgres)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isReadable && harness.store.isWritable })
    let alice = try harness.await { harness.store.load("alice", completion: $0) }
    #expect(alice.operations.map(\.device) == ["phone"])
    #expect(try postgres.query("SELECT version FROM tipsd.schema_version") == "\(PGSchema.version)\n")
    try harness.await { harness.store.deleteAccount("alice", erasureDays: 1, completion: $0) }
    #expect(
      try postgres.query("SELECT tipsd.push('alice', 'phone', 'c', '{8}'::bigint[], '{\"{}\"}'::text[])") == "-1\n")
  }

  /// What tipsd wrote as schema 1 (sync only), as it was released: the fixture of the migration test.
  static let versionOneSchema = """
    BEGIN;
    CREATE SCHEMA tipsd;
    CREATE TABLE tipsd.schema_version (version integer NOT NULL);
    INSERT INTO tipsd.schema_version VALUES (1);
    CREATE TABLE tipsd.accounts (
      account text PRIMARY KEY, last_cursor bigint NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now());
    CREATE TABLE tipsd.ops (
      account text NOT NULL, cursor bigint NOT NULL, device text NOT NULL, seq bigint NOT NULL, op text NOT NULL,
      committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (account, cursor), UNIQUE (account, device, seq));
    CREATE FUNCTION tipsd.push(p_account text, p_device text, p_channel text, p_seqs bigint[], p_ops text[])
      RETURNS bigint LANGUAGE plpgsql AS $push$
    DECLARE
      last bigint;
      added integer := 0;
      i integer;
    BEGIN
      INSERT INTO tipsd.accounts (account) VALUES (p_account) ON CONFLICT (account) DO NOTHING;
      SELECT last_cursor INTO last FROM tipsd.accounts WHERE account = p_account FOR UPDATE;
      FOR i IN 1 .. coalesce(array_length(p_seqs, 1), 0) LOOP
        INSERT INTO tipsd.ops (account, cursor, device, seq, op)
          VALUES (p_account, last + 1, p_device, p_seqs[i], p_ops[i]) ON CONFLICT (account, device, seq) DO NOTHING;
        IF FOUND THEN
          last := last + 1;
          added := added + 1;
        END IF;
      END LOOP;
      IF added > 0 THEN
        UPDATE tipsd.accounts SET last_cursor = last WHERE account = p_account;
        PERFORM pg_notify(p_channel, last::text);
      END IF;
      RETURN last;
    END
    $push$;
    COMMIT;
    """

  /// Every account's history has one order across the fleet: positions dense and in commit order.
  @Test func historyHasOneOrderAcrossAccounts() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try Harness(postgres: postgres)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isWritable && harness.store.isReadable })
    func chunk(_ count: Int) -> HostedStore.HistoryChunk {
      HostedStore.HistoryChunk(count: count, firstAt: 1, lastAt: 2, bytes: [UInt8(count)])
    }
    _ = try harness.await { completion in
      harness.store.commit(
        [
          HostedStore.AccountChanges(account: "zed", operations: [], history: [chunk(2)]),
          HostedStore.AccountChanges(
            account: "amy", operations: [PendingOperation(seq: 1, payload: "{}")], history: [chunk(1)]),
        ], completion: completion)
    }
    _ = try harness.await { completion in
      harness.store.commit(
        [HostedStore.AccountChanges(account: "zed", operations: [], history: [chunk(3)])], completion: completion)
    }
    let all = try harness.await { harness.store.fleetHistory(after: 0, limit: 10, completion: $0) }
    // Accounts in sorted order within a commit, commits in order; each chunk's positions follow the previous one's.
    #expect(all.map(\.account) == ["amy", "zed", "zed"])
    #expect(all.map(\.seq) == [1, 2, 4])
    #expect(all.map(\.cursor) == [1, 1, 3])
    let later = try harness.await { harness.store.fleetHistory(after: 3, limit: 10, completion: $0) }
    #expect(later.map(\.seq) == [4])
    #expect(try harness.await { harness.store.fleetHistoryHead(completion: $0) } == 6)
  }

  /// Two nodes' commits never wait for each other on a fleet-wide row (issue #36): a commit held open in PostgreSQL
  /// (another node's, in flight) does not hold up this node's; the admin's stream read from a cursor meanwhile gets
  /// what is committed, and the held chunk, committed later, comes after it: every chunk once, positions dense.
  @Test func commitsOfTwoNodesDoNotWaitForEachOtherAndTheFleetOrderHasNoGaps() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let first = try Harness(postgres: postgres, node: "node-a")
    defer { first.store.stop() }
    let second = try Harness(postgres: postgres, node: "node-b")
    defer { second.store.stop() }
    #expect(first.spin { first.store.isWritable && first.store.isReadable })
    #expect(second.spin { second.store.isWritable && second.store.isReadable })
    func chunk(_ count: Int) -> HostedStore.HistoryChunk {
      HostedStore.HistoryChunk(count: count, firstAt: 1, lastAt: 2, bytes: [UInt8(count)])
    }
    // Another node's commit, appending history, held open (its COMMIT not yet sent).
    let held = try postgres.session(
      "BEGIN; SELECT tipsd.append_history('held', 2, 1, 2, '\\x02'::bytea);")
    defer { held.release() }
    #expect(
      waitUntil {
        (try? postgres.query("SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND granted")) != "0\n"
      })
    // Both nodes commit history of other accounts meanwhile, without waiting for it (the old schema's fleet row lock
    // made every one of these wait until the held commit ended: the answer never came).
    for round in 0..<3 {
      for harness in [first, second] {
        _ = try harness.await { completion in
          harness.store.commit(
            [
              HostedStore.AccountChanges(
                account: "\(harness.store.configuration.node)-\(round)", operations: [], history: [chunk(1)])
            ],
            completion: completion)
        }
      }
    }
    // The admin reads the stream: the six committed chunks, positions 1–6, nothing of the held one.
    let before = try first.await { first.store.fleetHistory(after: 0, limit: 100, completion: $0) }
    #expect(before.map(\.seq) == [1, 2, 3, 4, 5, 6])
    #expect(!before.contains { $0.account == "held" })
    // The held commit ends; the stream resumed from the last cursor read gets it next, after the ones already read.
    held.send("COMMIT;")
    #expect(
      waitUntil { (try? postgres.query("SELECT count(*) FROM tipsd.history WHERE account = 'held'")) == "1\n" })
    let after = try second.await { second.store.fleetHistory(after: 6, limit: 100, completion: $0) }
    #expect(after.map(\.account) == ["held"])
    #expect(after.map(\.seq) == [7])
    #expect(try second.await { second.store.fleetHistoryHead(completion: $0) } == 8)

    // Both nodes committing at once, many turns each, while the admin reads from its cursor: every chunk exactly
    // once, in positions without a gap, each account's chunks in cursor order.
    var pending = 0
    for turn in 0..<40 {
      for harness in [first, second] {
        pending += 1
        harness.store.commit(
          [
            HostedStore.AccountChanges(account: "shared-\(turn % 3)", operations: [], history: [chunk(1 + turn % 2)]),
            HostedStore.AccountChanges(
              account: "\(harness.store.configuration.node)-own", operations: [], history: [chunk(1)]),
          ]
        ) { result in
          if case .success = result { pending -= 1 }
        }
      }
    }
    var read: [HostedStore.FleetHistory] = []
    var cursor: Int64 = 8
    #expect(
      first.spin {
        second.loop.run()
        var page: [HostedStore.FleetHistory]?
        first.store.fleetHistory(after: cursor, limit: 7) { page = try? $0.get() }
        while page == nil { first.loop.run() }
        for item in page ?? [] {
          read.append(item)
          cursor = item.seq + Int64(item.count) - 1
        }
        return pending == 0 && read.count == 160
      })
    var next: Int64 = 9
    for item in read {
      #expect(item.seq == next)
      next += Int64(item.count)
    }
    var cursors: [String: Int64] = [:]
    for item in read {
      #expect(item.cursor > cursors[item.account, default: 0])
      cursors[item.account] = item.cursor
    }
  }

  @Test func byteaRoundTripsAndNoticesParse() {
    let bytes: [UInt8] = [0, 1, 0x7f, 0x80, 0xfe, 0xff]
    #expect(Hex.bytea(bytes) == "\\x00017f80feff")
    #expect(Hex.decodeBytea(Hex.bytea(bytes)) == bytes)
    #expect(Hex.decodeBytea("\\x0") == nil && Hex.decodeBytea("00") == nil && Hex.decodeBytea("\\xzz") == nil)
    #expect(HostedStore.notice("42 alice@example.com") == .operations(account: "alice@example.com", cursor: 42))
    #expect(HostedStore.notice("deleted auth0|abc") == .deleted(account: "auth0|abc"))
    #expect(HostedStore.notice("catalog 00ff00ff00ff00ff") == .catalog(version: "00ff00ff00ff00ff"))
    #expect(HostedStore.notice("42") == nil && HostedStore.notice("x alice") == nil && HostedStore.notice("7 ") == nil)
    // A commit's accounts in one notification, a line each; a bad line is skipped, not the others.
    #expect(
      HostedStore.notices("3 a\nx b\n5 c") == [
        .operations(account: "a", cursor: 3), .operations(account: "c", cursor: 5),
      ])
    #expect(HostedStore.notices("deleted bob") == [.deleted(account: "bob")] && HostedStore.notices("") == [])
    // Read as bytes: multi-byte names, a name holding a space, empty lines and a trailing newline.
    #expect(
      HostedStore.notices("12 zoë/ünï\n\n4 a b\ncatalog v2\n") == [
        .operations(account: "zoë/ünï", cursor: 12), .operations(account: "a b", cursor: 4), .catalog(version: "v2"),
      ])
  }
}

/// `tipsd.commit`'s answer read into a ``HostedStore/Committed`` (no PostgreSQL needed).
@Suite struct CommitAnswerTests {
  let change = HostedStore.AccountChanges(
    account: "a", operations: [PendingOperation(seq: 1, payload: "{}")],
    history: [
      HostedStore.HistoryChunk(count: 1, firstAt: 1, lastAt: 1, bytes: [1]),
      HostedStore.HistoryChunk(count: 2, firstAt: 1, lastAt: 1, bytes: [1]),
    ])

  @Test func storedErasedAndRefusedAnswers() {
    let stored = HostedStore.answer([["7", "{3,4}", nil, "f", nil, nil]], change)
    #expect(stored == HostedStore.Committed(lastCursor: 7, historyFirst: [3, 4]))
    let erased = HostedStore.answer([[nil, nil, nil, "t", nil, nil]], change)
    #expect(erased.erased && erased.lastCursor == -1 && erased.historyFirst == [-1, -1] && erased.refused == nil)
    let refused = HostedStore.answer([[nil, nil, nil, "f", #"{"k" : "{\"count\":1}", "gone" : null}"#, nil]], change)
    #expect(refused.refused?.contains("gone, k") == true)
    #expect(refused.firstReplies == ["k": Array(#"{"count":1}"#.utf8)])
    #expect(refused.lastCursor == nil && !refused.erased)
  }

  /// `device_clashes` has one entry per device push with operations (0: stored); the clashes are mapped back to the
  /// pushes' places in ``HostedStore/AccountChanges/devices`` (#42).
  @Test func deviceClashesMapToTheirPushes() {
    let pushes = HostedStore.AccountChanges(
      account: "a", operations: [], history: [],
      devices: [
        HostedStore.DeviceOperations(device: "device:a", operations: [PendingOperation(seq: 1, payload: "{}")]),
        HostedStore.DeviceOperations(device: "device:b", operations: []),
        HostedStore.DeviceOperations(
          device: "device:c",
          operations: [PendingOperation(seq: 3, payload: "{}"), PendingOperation(seq: 4, payload: "{}")]),
      ])
    let answer = HostedStore.answer([[nil, nil, "9", "f", nil, "{0,4}"]], pushes)
    #expect(answer.devicesLastCursor == 9 && answer.deviceClashes == [2: 4] && answer.refused == nil)
    // A set-based commit's row: the account's name, then the same columns (read in place).
    let row: [String?] = ["a", nil, nil, "9", "f", nil, "{0,4}"]
    #expect(HostedStore.answer(row.dropFirst(), pushes) == answer)
    #expect(HostedStore.answer(nil, pushes) == HostedStore.Committed(lastCursor: nil, historyFirst: []))
  }

  /// A transaction's accounts are sorted by their UTF-8 bytes (the lock order every node shares).
  @Test func accountsSortByTheirBytes() {
    let names = ["b", "a", "", "ab", "a\u{0}", "é", "e", "z", "ä", "🎉", "Z", "app/x", "app-x", "abc", "ab"]
    for a in names {
      for b in names {
        #expect(HostedStore.precedes(a, b) == a.utf8.lexicographicallyPrecedes(b.utf8), "\(a) \(b)")
      }
    }
  }

  /// PostgreSQL's `bigint[]` text, read byte by byte: items that are not 64-bit integers are left out.
  @Test func integerArraysAreRead() {
    #expect(HostedStore.integers(nil) == [] && HostedStore.integers("{}") == [])
    #expect(HostedStore.integers("{7}") == [7] && HostedStore.integers("{3,4}") == [3, 4])
    #expect(
      HostedStore.integers("{-5,NULL,9223372036854775807,-9223372036854775808,0}")
        == [-5, Int64.max, Int64.min, 0])
    #expect(HostedStore.integers("{9223372036854775808,99999999999999999999,1,-9223372036854775809}") == [1])
    #expect(HostedStore.integers("{1-2,--3,4}") == [4])
  }
}
