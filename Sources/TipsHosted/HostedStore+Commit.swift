import Glibc
import TipsJSON
import TipsRecords
import TipsSync

// The group commit (#42, #47): the waiting turns' accounts in one set-based statement (``PGSchema/commitSet``), or
// one `tipsd.commit` call an account when devices pushed through the node (or with `--commit-per-account`); either
// way one account can never fail another's. The set-based statement fails on anything irregular and a
// `tipsd.commit` call refuses an account whose idempotency key another node committed first (answered with the first
// reply); a statement PostgreSQL refuses (which rolls the whole transaction back) makes the node commit each account
// in its own transaction, so only the failing account's part is lost.

extension HostedStore {
  /// Commits every account's changes in one transaction, accounts in sorted order (two nodes committing overlapping
  /// accounts take their row locks in the same order, so they never deadlock). `completion` gets each account's
  /// result once PostgreSQL has committed: stored, or ``Committed/refused`` (that account's part alone was not
  /// stored). A failure means the outcome is unknown for every account (the connection broke): the caller reloads
  /// them to learn what was stored.
  ///
  /// At most ``Configuration/commitPipeline`` commit transactions are in flight; commits made meanwhile wait, and
  /// when one is answered the waiting ones go in one transaction (an account in several of them has its parts joined
  /// in the order made). So a node with many small turns — 64 clients, each with one donation in flight — pays
  /// PostgreSQL one transaction, one set of statements and one flush to disk and standby for all that arrived during
  /// the previous commit, not one a turn (#47). A commit that fails with its connection
  /// (outcome unknown) fails the waiting ones with it, as it did when they were pipelined behind it on that
  /// connection: none of them was sent, so each caller reads its accounts again as it does for the failed one.
  public func commit(
    _ changes: [AccountChanges], completion: @escaping (Result<[String: Committed], HostedError>) -> Void
  ) {
    guard !changes.isEmpty else {
      completion(.success([:]))
      return
    }
    queuedCommits.append(QueuedCommit(changes: changes, completion: completion))
    sendQueuedCommits()
  }

  /// A commit waiting for a place in the pipeline.
  struct QueuedCommit {
    var changes: [AccountChanges]
    var completion: (Result<[String: Committed], HostedError>) -> Void
  }

  /// Sends the waiting commits while the pipeline has room, each time all of them in one transaction: an account in
  /// several has their parts joined in the order made (its operations, history chunks and replies one after the
  /// other), and each commit is answered its own part (``part(of:ops:chunks:chunkOffset:laterOps:)``). A commit that
  /// carries devices' pushes goes alone (their clash check is `tipsd.commit`'s, an account at a time).
  private func sendQueuedCommits() {
    while commitTransactionsInFlight < max(1, configuration.commitPipeline), !queuedCommits.isEmpty {
      var taken = 0
      var changes: [AccountChanges] = []
      // Where each account is in `changes`, made when a second commit joins the first (a commit's accounts are
      // distinct: one that goes alone needs none), sized then for all that waits.
      var position: [String: Int] = [:]
      for queued in queuedCommits {
        let pushes = queued.changes.contains { $0.devices.contains { !$0.operations.isEmpty } }
        if taken > 0 && pushes { break }
        if taken == 0 {
          changes = queued.changes
        } else {
          if position.isEmpty {
            let waiting = queuedCommits.reduce(0) { $0 + $1.changes.count }
            position.reserveCapacity(waiting)
            changes.reserveCapacity(waiting)
            for (index, change) in changes.enumerated() { position[change.account] = index }
          }
          for change in queued.changes {
            if let at = position[change.account] {
              changes[at].operations += change.operations
              changes[at].history += change.history
              changes[at].replies += change.replies
              changes[at].devices += change.devices
            } else {
              position[change.account] = changes.count
              changes.append(change)
            }
          }
        }
        taken += 1
        if pushes { break }
      }
      let group = Array(queuedCommits.prefix(taken))
      queuedCommits.removeFirst(taken)
      if taken > 1 { mergedCommits += taken - 1 }
      commitTransactionsInFlight += 1
      commitTransaction(changes) { [weak self] result in
        self?.commitTransactionsInFlight -= 1
        switch result {
        case .success(let answers) where group.count > 1:
          for (member, parts) in zip(group, Self.parts(of: answers, for: group)) { member.completion(.success(parts)) }
        default:
          for member in group { member.completion(result) }
        }
        guard let self else { return }
        if case .failure(let error) = result {
          let waiting = self.queuedCommits
          self.queuedCommits.removeAll()
          for member in waiting { member.completion(.failure(error)) }
        }
        self.sendQueuedCommitsAtEndOfTurn()
      }
    }
  }

  /// The waiting commits go at the end of this loop turn, not at once: the requests this turn still handles (their
  /// bytes arrived with the answer) join them in one transaction instead of waiting a round trip for the next.
  /// The handler is installed on the first answer, so it runs after the server's own end of turn, whose commit
  /// (``commit(_:completion:)``) sends them itself when the turn changed something.
  private func sendQueuedCommitsAtEndOfTurn() {
    guard !queuedCommits.isEmpty else { return }
    if !sendsAtEndOfTurn {
      sendsAtEndOfTurn = true
      loop.afterEachTurn { [weak self] in self?.sendQueuedCommits() }
    }
    loop.requestEndOfTurn()
  }

  /// Each commit of a joined transaction answered for its own part of each account.
  static func parts(of answers: [String: Committed], for group: [QueuedCommit]) -> [[String: Committed]] {
    var opsLeft: [String: Int] = [:]
    for member in group {
      for change in member.changes { opsLeft[change.account, default: 0] += change.operations.count }
    }
    var chunksBefore: [String: Int] = [:]
    return group.map { member in
      var parts: [String: Committed] = [:]
      for change in member.changes {
        let account = change.account
        opsLeft[account, default: 0] -= change.operations.count
        guard let answer = answers[account] else { continue }
        parts[account] = part(
          of: answer, ops: change.operations.count, chunks: change.history.count,
          chunkOffset: chunksBefore[account, default: 0], laterOps: opsLeft[account, default: 0])
        chunksBefore[account, default: 0] += change.history.count
      }
      return parts
    }
  }

  /// One commit's part of an account's answer to a joined transaction: its `ops` operations are the ones before the
  /// `laterOps` of the commits after it, its chunks the `chunks` from `chunkOffset`. A refusal or an erasure is every
  /// part's.
  static func part(of answer: Committed, ops: Int, chunks: Int, chunkOffset: Int, laterOps: Int) -> Committed {
    if answer.erased {
      return Committed(lastCursor: ops > 0 || chunks == 0 ? -1 : nil, historyFirst: Array(repeating: -1, count: chunks))
    }
    if answer.refused != nil { return answer }
    var part = Committed(lastCursor: nil, historyFirst: [])
    if ops > 0, let last = answer.lastCursor { part.lastCursor = last - Int64(laterOps) }
    let end = min(chunkOffset + chunks, answer.historyFirst.count)
    if chunkOffset < end { part.historyFirst = Array(answer.historyFirst[chunkOffset..<end]) }
    return part
  }

  /// One transaction of `changes` (accounts distinct).
  private func commitTransaction(
    _ changes: [AccountChanges], completion: @escaping (Result<[String: Committed], HostedError>) -> Void
  ) {
    let sorted = changes.sorted { Self.precedes($0.account, $1.account) }
    // Once PostgreSQL answered, the commit's notifications go out in a transaction of their own (schema 11).
    let completion: (Result<[String: Committed], HostedError>) -> Void = { [weak self] result in
      if case .success(let answers) = result { self?.publish(sorted, answers) }
      completion(result)
    }
    // By default a turn of many accounts goes in one set-based statement (``PGSchema/commitSet``), unless a device
    // pushed through the node (its clash check is `tipsd.commit`'s); `--commit-per-account` turns it off.
    let setBased =
      configuration.setBasedCommit && sorted.count >= Self.setBasedMinimum
      && !sorted.contains { $0.devices.contains { !$0.operations.isEmpty } }
    let statements = setBased ? [setStatement(sorted)] : sorted.map(statement)
    writer.send(statements) { [weak self] result in
      switch result {
      case .success(let results):
        var answers = [String: Committed](minimumCapacity: sorted.count)
        if setBased {
          self?.commitCounts.setBased += 1
          // One row an account, in the order sent: its name, then `tipsd.commit`'s columns.
          let rows = results.first?.rows ?? []
          for (index, change) in sorted.enumerated() {
            let row = index < rows.count && rows[index].first == change.account ? rows[index].dropFirst() : nil
            answers[change.account] = Self.answer(row, change)
          }
        } else {
          for (index, change) in sorted.enumerated() {
            answers[change.account] = Self.answer(index < results.count ? results[index].rows : [], change)
          }
        }
        completion(.success(answers))
      case .failure(let error) where error.rolledBack && sorted.count == 1:
        completion(.success([sorted[0].account: Self.refusal(error)]))
      case .failure(let error) where error.rolledBack:
        // A statement failed and PostgreSQL rolled everything back: each account again, alone, through
        // `tipsd.commit` — only the failing account's part is lost.
        guard let self else { return completion(.failure(error)) }
        self.commitCounts.eachAfterFailure += 1
        self.commitEach(sorted, sorted.map(self.statement), completion: completion)
      case .failure(let error):
        completion(.failure(error))
      }
    }
  }

  /// Whether `a`'s UTF-8 comes before `b`'s byte by byte: the order every node sorts a transaction's accounts in, so
  /// their rows are locked in one order. Compared with `memcmp` (the generic comparison cost a commit some 900
  /// instructions a donation: #47).
  static func precedes(_ a: String, _ b: String) -> Bool {
    var (a, b) = (a, b)
    return a.withUTF8 { x in
      b.withUTF8 { y in
        let common = min(x.count, y.count)
        if common > 0, let left = x.baseAddress, let right = y.baseAddress {
          let order = memcmp(left, right, common)
          if order != 0 { return order < 0 }
        }
        return x.count < y.count
      }
    }
  }

  /// Accounts in a turn from which it is committed by one set-based call (`tipsd.commit_set`).
  public static let setBasedMinimum = 2

  /// `tipsd.commit_set`'s call for a turn's accounts (sorted): each account's operations, history chunks and
  /// idempotent replies (keys in order, each once) as consecutive items of flat arrays, counted per account. The
  /// arrays go in binary (``PGBinary``): no escaping here, no parsing there.
  private func setStatement(_ sorted: [AccountChanges]) -> PGStatement {
    var opCounts: [Int64] = []
    var seqs: [Int64] = []
    var ops: [String] = []
    var chunkCounts: [Int64] = []
    var counts: [Int64] = []
    var firstAts: [Double] = []
    var lastAts: [Double] = []
    var entries: [[UInt8]] = []
    var keyCounts: [Int64] = []
    var keys: [String] = []
    var replies: [String] = []
    var ats: [Double] = []
    opCounts.reserveCapacity(sorted.count)
    chunkCounts.reserveCapacity(sorted.count)
    keyCounts.reserveCapacity(sorted.count)
    for change in sorted {
      opCounts.append(Int64(change.operations.count))
      for operation in change.operations {
        seqs.append(operation.seq)
        ops.append(operation.payload)
      }
      chunkCounts.append(Int64(change.history.count))
      for chunk in change.history {
        counts.append(Int64(chunk.count))
        firstAts.append(chunk.firstAt)
        lastAts.append(chunk.lastAt)
        entries.append(chunk.bytes)
      }
      let kept = Self.orderedReplies(change.replies)
      keyCounts.append(Int64(kept.count))
      for reply in kept {
        keys.append(reply.key)
        replies.append(String(decoding: reply.result, as: UTF8.self))
        ats.append(reply.at)
      }
    }
    var values: [PGStatement.Value] = [
      .binary(PGBinary.textArray(sorted.map(\.account))), .text(configuration.node),
      .binary(PGBinary.int4Array(opCounts)), .binary(PGBinary.int8Array(seqs)), .binary(PGBinary.textArray(ops)),
      .binary(PGBinary.int4Array(chunkCounts)), .binary(PGBinary.int4Array(counts)),
      .binary(PGBinary.float8Array(firstAts)), .binary(PGBinary.float8Array(lastAts)),
      .binary(PGBinary.byteaArray(entries)), .binary(PGBinary.int4Array(keyCounts)),
    ]
    // A turn without idempotency keys (most) goes through the statement without the keys' CTEs.
    guard !keys.isEmpty else { return .prepared(Statement.commitSetWithoutKeys, values: values) }
    values += [
      .binary(PGBinary.textArray(keys)), .binary(PGBinary.textArray(replies)), .binary(PGBinary.float8Array(ats)),
    ]
    return .prepared(Statement.commitSet, values: values)
  }

  /// An account's idempotent replies as stored: each key once (its first reply), keys in order (two nodes inserting
  /// the same keys of one account never wait for each other in a cycle).
  static func orderedReplies(_ replies: [IdempotentReply]) -> [IdempotentReply] {
    var seen: Set<String> = []
    return replies.filter { seen.insert($0.key).inserted }
      .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
  }

  /// Each account's statement in its own transaction (pipelined: one round trip); an account whose statement fails
  /// is refused, the others are stored.
  private func commitEach(
    _ sorted: [AccountChanges], _ statements: [PGStatement],
    completion: @escaping (Result<[String: Committed], HostedError>) -> Void
  ) {
    var answers: [String: Committed] = [:]
    var unknown: HostedError?
    var left = sorted.count
    for (change, statement) in zip(sorted, statements) {
      writer.send([statement]) { result in
        switch result {
        case .success(let results): answers[change.account] = Self.answer(results.first?.rows ?? [], change)
        case .failure(let error) where error.rolledBack: answers[change.account] = Self.refusal(error)
        case .failure(let error): unknown = unknown ?? error
        }
        left -= 1
        guard left == 0 else { return }
        if let unknown { completion(.failure(unknown)) } else { completion(.success(answers)) }
      }
    }
  }

  /// Tells the fleet (`tipsd_fleet`: `cursor account`) and each account's own channel (its devices syncing through
  /// PostgreSQL: `cursor`) where the accounts this commit stored operations for now stand: the notifications
  /// `tipsd.push` sends from a device's transaction, sent here after the commit (schema 11) in one short transaction
  /// with `synchronous_commit` off, so PostgreSQL's notification lock is held for an instant rather than through
  /// the commit's flush to the standby, and no commit of any node waits on it. A notification lost with a broken
  /// connection is what a listener that was away already handles: the next notification of the account, or a
  /// catch-up, pulls from its cursor.
  func publish(_ changes: [AccountChanges], _ answers: [String: Committed]) {
    var standings: [(account: String, cursor: Int64)] = []
    for change in changes where !change.operations.isEmpty || change.devices.contains(where: { !$0.operations.isEmpty })
    {
      guard let answer = answers[change.account], answer.refused == nil, !answer.erased else { continue }
      let cursor = max(answer.lastCursor ?? 0, answer.devicesLastCursor ?? 0)
      if cursor > 0 { standings.append((change.account, cursor)) }
    }
    notify(standings)
  }

  /// Sends the notifications of where each account now stands: its own channel's (`cursor`) and the fleet's
  /// (`cursor account`), in one transaction of their own (``Statement/publish``) — ``publish(_:_:)``'s after a
  /// commit, ``announce(account:cursor:)``'s after a reload.
  func notify(_ standings: [(account: String, cursor: Int64)]) {
    // Built as the statement's binary arrays directly: every commit makes a notification an account.
    var channels = PGBinary.TextArrayWriter()
    var payloads = PGBinary.TextArrayWriter()
    // The fleet's notices go in as few notifications as fit, a line an account (an account name never holds a
    // newline: TipsAuth's `Subject`, which admins' account names are held to as well): every node's listener
    // receives and PostgreSQL delivers each fleet notification once per node (#47).
    var fleet: [UInt8] = []
    func sendFleet() {
      guard !fleet.isEmpty else { return }
      channels.append(PGSchema.fleetChannel.utf8)
      payloads.append(fleet)
      fleet.removeAll(keepingCapacity: true)
    }
    for (account, cursor) in standings {
      channels.appendItem { PGSchema.appendChannel(account: account, to: &$0) }
      payloads.appendItem { PGSchema.appendDecimal(cursor, to: &$0) }
      if fleet.count + PGSchema.decimalCount(cursor) + account.utf8.count + 2 > Self.fleetPayloadBytes { sendFleet() }
      if !fleet.isEmpty { fleet.append(UInt8(ascii: "\n")) }
      PGSchema.appendDecimal(cursor, to: &fleet)
      fleet.append(UInt8(ascii: " "))
      fleet.append(contentsOf: account.utf8)
    }
    sendFleet()
    guard channels.count > 0 else { return }
    writer.send([.prepared(Statement.publish, values: [.binary(channels.bytes), .binary(payloads.bytes)])]) { _ in }
  }

  /// The most a fleet notification's payload holds (PostgreSQL refuses 8,000 bytes or more).
  static let fleetPayloadBytes = 7_900

  private static func refusal(_ error: HostedError) -> Committed {
    Committed(lastCursor: nil, historyFirst: [], refused: "PostgreSQL refused the account's changes: \(error.message)")
  }

  /// `tipsd.commit`'s call for one account's changes.
  private func statement(_ change: AccountChanges) -> PGStatement {
    // Each key once, in order (`tipsd.commit` counts the keys it inserted).
    let replies = Self.orderedReplies(change.replies)
    let devices = change.devices.filter { !$0.operations.isEmpty }
    return .prepared(
      Statement.commit,
      [
        change.account, configuration.node, PGSchema.channel(account: change.account),
        PGSchema.integerArray(change.operations.map(\.seq)), PGSchema.textArray(change.operations.map(\.payload)),
        PGSchema.integerArray(change.history.map { Int64($0.count) }),
        Self.doubleArray(change.history.map(\.firstAt)), Self.doubleArray(change.history.map(\.lastAt)),
        PGSchema.textArray(change.history.map { Hex.bytea($0.bytes) }),
        PGSchema.textArray(replies.map(\.key)),
        PGSchema.textArray(replies.map { String(decoding: $0.result, as: UTF8.self) }),
        Self.doubleArray(replies.map(\.at)),
        PGSchema.textArray(devices.map(\.device)),
        PGSchema.integerArray(devices.map { Int64($0.operations.count) }),
        PGSchema.integerArray(devices.flatMap { $0.operations.map(\.seq) }),
        PGSchema.textArray(devices.flatMap { $0.operations.map(\.payload) }),
      ])
  }

  /// One account's answer from `tipsd.commit`'s row `(last_cursor, history_firsts, devices_last, erased,
  /// conflicts, device_clashes)`.
  static func answer(_ rows: [[String?]], _ change: AccountChanges) -> Committed {
    answer(rows.first?[...], change)
  }

  /// ``answer(_:_:)`` from the row's columns (a set-based commit's row after its account's name: no copy made).
  static func answer(_ columns: ArraySlice<String?>?, _ change: AccountChanges) -> Committed {
    var answer = Committed(lastCursor: nil, historyFirst: [])
    guard let columns, columns.count == 6 else { return answer }
    let row = { (index: Int) in columns[columns.startIndex + index] }
    if row(3) == "t" {
      // Erased: -1 wherever something would have been stored.
      let devices = change.devices.contains { !$0.operations.isEmpty }
      answer.lastCursor = !change.operations.isEmpty || (change.history.isEmpty && !devices) ? -1 : nil
      answer.historyFirst = change.history.map { _ in -1 }
      answer.devicesLastCursor = devices ? -1 : nil
      return answer
    }
    if let text = row(4) {
      var keys: [String] = []
      if case .object(let conflicts)? = try? JSONParser.parse(text) {
        for (key, reply) in conflicts {
          keys.append(key)
          if case .string(let result) = reply { answer.firstReplies[key] = Array(result.utf8) }
        }
      }
      answer.refused = "idempotency key \(keys.sorted().joined(separator: ", ")) was used on another node first"
      return answer
    }
    answer.lastCursor = row(0).flatMap { Int64($0) }
    answer.historyFirst = Self.integers(row(1))
    answer.devicesLastCursor = row(2).flatMap { Int64($0) }
    guard !change.devices.isEmpty else { return answer }
    // One clash per pushed device (the statement leaves out those with no operations), 0 for none.
    let clashes = Self.integers(row(5))
    let pushed = change.devices.indices.filter { !change.devices[$0].operations.isEmpty }
    for (index, seq) in zip(pushed, clashes) where seq > 0 { answer.deviceClashes[index] = seq }
    return answer
  }

  /// A PostgreSQL `bigint[]` in text form (`{1,2}`; nil: none); an item that is not an integer (`NULL`) is left
  /// out. Read byte by byte (every commit reads one an account: #47).
  static func integers(_ text: String?) -> [Int64] {
    guard var text, text.utf8.count > 2 else { return [] }
    return text.withUTF8 { bytes in
      var values: [Int64] = []
      var magnitude: UInt64 = 0
      var negative = false
      var digits = 0
      var valid = true
      for byte in bytes.dropFirst() {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
          let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
          let (sum, carry) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
          if overflow || carry { valid = false }
          magnitude = sum
          digits += 1
        case UInt8(ascii: "-") where digits == 0 && !negative:
          negative = true
        case UInt8(ascii: ","), UInt8(ascii: "}"):
          if valid && digits > 0,
            let value = negative ? Int64(exactly: 0 - Int128(magnitude)) : Int64(exactly: magnitude)
          {
            values.append(value)
          }
          (magnitude, negative, digits, valid) = (0, false, 0, true)
        default:
          valid = false
        }
      }
      return values
    }
  }

  /// A PostgreSQL array literal of doubles.
  static func doubleArray(_ items: [Double]) -> String {
    "{" + items.map { "\($0)" }.joined(separator: ",") + "}"
  }
}
