import CSQLite
import TipsEngine
import TipsJSON

/// The donations of one event written in one commit, packed in one row of `donation_chunks` (schema 5).
///
/// Each row also carries the event's lifetime count after it (`end_seq`: its donations are numbered
/// `end_seq - count + 1 ... end_seq`) and the number of the event's oldest donation still kept after that commit
/// (`first_visible`). A load reads both from the event's newest chunk: donations numbered below `first_visible`
/// are dropped, and `end_seq` is the lifetime count. So bounding the history writes nothing by itself: a turn
/// costs one row insert per event. Chunks wholly below the bound are deleted in batches (``deadChunkBatch`` of
/// them at a time), the newest never (it holds the numbers).
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

/// The open batch's donations, one ``PendingChunk`` per event in first-seen order.
///
/// A donation of the event the previous one named (a pipelined client's usual run) finds its chunk without hashing
/// the event id: hashing it, several times per donation, was a fifth of a pipelined donation's store work.
struct PendingChunks {
  /// The events, in first-seen order, and their chunks (same positions).
  private(set) var events: [String] = []
  private(set) var chunks: [PendingChunk] = []
  private var positions: [String: Int] = [:]
  /// The event the last donation named, and its position.
  private var last: (event: String, position: Int)?

  var isEmpty: Bool { events.isEmpty }

  /// Packs a donation into its event's chunk.
  mutating func append(_ donation: Donation, event: String, keep: Int) {
    let position: Int
    if let last, last.event == event {
      position = last.position
    } else if let found = positions[event] {
      position = found
    } else {
      position = events.count
      positions[event] = position
      events.append(event)
      chunks.append(PendingChunk())
    }
    last = (event, position)
    DonationChunk.append(donation, to: &chunks[position].bytes)
    chunks[position].count += 1
    chunks[position].keep = keep
  }

  /// Drops the event's pending donations (the batch writes them another way).
  mutating func remove(_ event: String) {
    guard let position = positions[event] else { return }
    events.remove(at: position)
    chunks.remove(at: position)
    positions = Dictionary(uniqueKeysWithValues: events.enumerated().map { ($1, $0) })
    last = nil
  }

  mutating func removeAll() {
    events.removeAll(keepingCapacity: true)
    chunks.removeAll(keepingCapacity: true)
    positions.removeAll(keepingCapacity: true)
    last = nil
  }
}

/// How many chunks wholly past the bound an event may keep before they are deleted (together, in one commit).
let deadChunkBatch = 32
