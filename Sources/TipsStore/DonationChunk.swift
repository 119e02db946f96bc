import CSQLite
import TipsEngine
import TipsJSON

/// The donations of one event written in one commit, packed in one row of `donation_chunks` (schema 5).
///
/// A turn's donations of an event cost one row insert instead of one per donation, and bounding the history
/// deletes whole chunks instead of a row per donation. Donations past the bound in a chunk that also holds newer
/// ones are dropped by counting them in `events.skip` (a load skips that many at the front of the event's oldest
/// chunk) until the whole chunk is past the bound and its row is deleted. `events.dropped` counts every dropped
/// donation, skipped or deleted, so that kept + dropped is the lifetime count.
///
/// Encoding, per donation in order: the instant as the IEEE-754 bits of a Double, 8 bytes little-endian; the
/// length of the associated values' JSON as an unsigned LEB128 varint (0: no associated values); that JSON.
enum DonationChunk {
  /// Appends one donation to `bytes`.
  static func append(_ donation: Donation, to bytes: inout [UInt8]) {
    var bits = donation.at.bitPattern
    for _ in 0..<8 {
      bytes.append(UInt8(truncatingIfNeeded: bits))
      bits >>= 8
    }
    guard let info = donation.info else {
      bytes.append(0)
      return
    }
    let json = JSONValue.object(info).serialized()
    var length = json.count
    while length >= 0x80 {
      bytes.append(UInt8(truncatingIfNeeded: length) | 0x80)
      length >>= 7
    }
    bytes.append(UInt8(length))
    bytes.append(contentsOf: json)
  }

  /// Calls `body` with each donation's instant and associated-values JSON (nil when it has none), in order;
  /// throws on a malformed chunk.
  static func forEach(
    _ bytes: UnsafeRawBufferPointer, event: String,
    _ body: (Double, UnsafeRawBufferPointer?) throws(SQLiteError) -> Void
  ) throws(SQLiteError) {
    var offset = 0
    let count = bytes.count
    while offset < count {
      guard count - offset >= 9 else { throw malformed(event) }
      var bits: UInt64 = 0
      for index in (0..<8).reversed() { bits = bits << 8 | UInt64(bytes[offset + index]) }
      offset += 8
      var length = 0
      var shift = 0
      while true {
        guard offset < count, shift < 63 else { throw malformed(event) }
        let byte = bytes[offset]
        offset += 1
        length |= Int(byte & 0x7F) << shift
        if byte & 0x80 == 0 { break }
        shift += 7
      }
      guard length <= count - offset else { throw malformed(event) }
      let info = length == 0 ? nil : UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
      offset += length
      try body(Double(bitPattern: bits), info)
    }
  }

  static func malformed(_ event: String) -> SQLiteError {
    SQLiteError(corrupt: "a donation chunk of event \(event) is malformed")
  }
}

/// A turn's donations of one event, waiting to be written as one chunk.
struct PendingChunk {
  var bytes: [UInt8] = []
  var count = 0
  /// The bound the last of them asked for.
  var keep = 0
}

/// An event whose history a batch trimmed: the donations dropped in the batch, for `events.dropped` and `skip`.
struct Trimmed {
  let history: EventHistory
  var dropped = 0
}
