import TipsJSON
import TipsProtocol
import TipsStore

/// One account's replies to changes made with an `idempotencyKey` (issue #34), for `--idempotency-hours`: a repeat
/// of a key is answered with the first reply and changes nothing — whether it comes on another connection, on
/// another node, or after a restart, since each reply is stored in the change's own transaction and read back with
/// the account (the datastore's `idempotency` table, PostgreSQL's `tipsd.idempotency`).
///
/// A reply is remembered as soon as its change is made: a repeat in the same turn, or while its commit is in flight,
/// gets it too (and waits for the same commit). A failed commit reads the account back, replies included, so a key
/// whose change was lost is free again.
///
/// Hosted mode (#42): a key missing from memory is looked up in PostgreSQL before the change runs (another node may
/// have answered it), and a key two nodes commit at once is stored by the first; the other node's commit of that
/// account is taken back alone, its request answered with the first reply and the account read again.
///
/// Loop thread only.
final class IdempotencyMemory {
  /// Each key's result and when it was made.
  private var replies: [String: IdempotentReply] = [:]
  /// Replies made since the last commit, for it.
  private(set) var staged: [IdempotentReply] = []
  /// The request that made each staged reply (hosted mode: when another node committed its key first, that request
  /// is answered with the first reply instead).
  private(set) var stagedRequests: [StagedRequest] = []
  /// Hosted mode: keys missing from memory that PostgreSQL was asked about and did not hold (#42) — the request that
  /// asked may run its change once, without asking again.
  private var checked: Set<String> = []

  struct StagedRequest {
    var key: String
    var session: ObjectIdentifier
    var id: RequestID?
  }

  /// The result a key was answered with, if it was used within the window.
  func result(for key: String) -> [UInt8]? { replies[key]?.result }

  /// A change made with `key` answered `result` (to request `id` of `session`).
  func record(_ reply: IdempotentReply, session: ObjectIdentifier? = nil, id: RequestID? = nil) {
    replies[reply.key] = reply
    staged.append(reply)
    if let session { stagedRequests.append(StagedRequest(key: reply.key, session: session, id: id)) }
  }

  /// The replies for the turn's commit.
  func takeStaged() -> [IdempotentReply] {
    defer {
      staged = []
      stagedRequests = []
    }
    return staged
  }

  /// What storage holds (a load, or a read-back after a failed commit).
  func load(_ stored: [IdempotentReply]) {
    replies = [:]
    for reply in stored { replies[reply.key] = reply }
    staged = []
    stagedRequests = []
    checked = []
  }

  // MARK: Keys missing from memory (hosted mode)

  /// Whether a change with `key` may run without asking PostgreSQL: the key is in memory (answered from it), or
  /// PostgreSQL was asked and did not hold it.
  func isKnown(_ key: String) -> Bool { replies[key] != nil || checked.contains(key) }

  /// A change with `key` runs: PostgreSQL's answer that it held no reply is used up.
  func ran(_ key: String) {
    if !checked.isEmpty { checked.remove(key) }
  }

  /// PostgreSQL's answer for a key missing from memory: its first reply (another node's), or none (nil).
  func checked(_ key: String, stored: IdempotentReply?) {
    if let stored {
      if replies[key] == nil { replies[key] = stored }
      return
    }
    // Bounded: a session that closed before its change ran leaves its key here until the next read-back.
    if checked.count >= 4_096 { checked = [] }
    checked.insert(key)
  }

  /// Replies another node committed (read after its operations were pulled): known from now on.
  func merge(_ stored: [IdempotentReply]) {
    for reply in stored where replies[reply.key] == nil { replies[reply.key] = reply }
  }

  /// The oldest instant of a reply known.
  var oldest: Double? { replies.values.map(\.at).min() }

  /// The newest instant of a reply known.
  var newest: Double? { replies.values.map(\.at).max() }

  /// Forgets replies made before `cutoff`.
  func forget(before cutoff: Double) {
    guard replies.contains(where: { $0.value.at < cutoff }) else { return }
    replies = replies.filter { $0.value.at >= cutoff }
  }

  var count: Int { replies.count }

  // MARK: The key in a request

  /// The longest key accepted, in bytes.
  static let maxKeyBytes = 128

  /// The `idempotencyKey` of a change's params, taken out of them (the handler decodes the rest); nil when absent.
  /// Refused unless a string of 1 to 128 bytes.
  static func take(from params: inout JSONValue?, method: String) throws(ResponseError) -> String? {
    guard case .object(var object)? = params, let value = object["idempotencyKey"] else { return nil }
    guard case .string(let key) = value, !key.isEmpty, key.utf8.count <= maxKeyBytes else {
      throw .invalidParams("\(method): params.idempotencyKey must be a string of 1 to \(maxKeyBytes) bytes")
    }
    object["idempotencyKey"] = nil
    params = .object(object)
    return key
  }

  /// The result of a success reply `message` (`{"jsonrpc":"2.0","id":…,"result":R}`): R's bytes.
  static func result(ofReply message: ArraySlice<UInt8>) -> [UInt8]? {
    // `,"result":` cannot occur inside the encoded id: a string's quotes are escaped there.
    let marker = Array(#","result":"#.utf8)
    guard message.count > marker.count + 1, message.last == UInt8(ascii: "}") else { return nil }
    var index = message.startIndex
    while index + marker.count <= message.endIndex {
      if message[index] == marker[0], Array(message[index..<index + marker.count]) == marker {
        return Array(message[(index + marker.count)..<(message.endIndex - 1)])
      }
      index += 1
    }
    return nil
  }
}
