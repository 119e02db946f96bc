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
/// Loop thread only.
final class IdempotencyMemory {
  /// Each key's result and when it was made.
  private var replies: [String: IdempotentReply] = [:]
  /// Replies made since the last commit, for it.
  private(set) var staged: [IdempotentReply] = []

  /// The result a key was answered with, if it was used within the window.
  func result(for key: String) -> [UInt8]? { replies[key]?.result }

  /// A change made with `key` answered `result`.
  func record(_ reply: IdempotentReply) {
    replies[reply.key] = reply
    staged.append(reply)
  }

  /// The replies for the turn's commit.
  func takeStaged() -> [IdempotentReply] {
    defer { staged = [] }
    return staged
  }

  /// What storage holds (a load, or a read-back after a failed commit).
  func load(_ stored: [IdempotentReply]) {
    replies = [:]
    for reply in stored { replies[reply.key] = reply }
    staged = []
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
