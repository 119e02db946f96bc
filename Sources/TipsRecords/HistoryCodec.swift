public import TipsEngine

/// The binary encoding of a chunk of history entries (one `history` row holds the entries one commit recorded: one
/// insert per commit instead of one per entry, which is what keeps recording within 10% of donation throughput).
///
/// Each entry, in cursor order:
///
/// | field | encoding |
/// | --- | --- |
/// | kind | 1 byte (`HistoryEvent.Kind.code`) |
/// | cursor | varint: the difference from the previous entry's cursor (the first: from the row's id − 1) |
/// | at | 8 bytes, IEEE 754 little-endian |
/// | presence | 2 bytes little-endian: bit i set when field i below is present; bit 15 is `shouldDisplay`'s value; bit 9: the event id is the previous entry's of the chunk (not written again) |
/// | 0 tip, 1 event, 2 variant | varint length + UTF-8 |
/// | 3 duration | 8 bytes |
/// | 4 actionId | varint length + UTF-8 |
/// | 5 actionIndex | varint |
/// | 6 reason, 7 status | varint length + UTF-8 |
/// | 8 shouldDisplay | (its value is bit 15) |
///
/// Donations that continue a run (schema 8) are stored in about one byte each instead: a donation of the event the
/// chunk's previous entry donated, whose cursor is the previous one's + 1, is a *continuation*. Consecutive
/// continuations form one run record: the byte ``runTag`` (7, not a kind's code), a count byte (1...255), then per
/// continuation a varint: the zigzag-encoded difference between the IEEE 754 bits of its instant and of the previous
/// entry's (wrapping, so exact for any two instants; donations microseconds apart differ by a few units in the last
/// place, one byte). A turn's goal donations are such runs, and the bytes written per commit are what recording
/// history costs the datastore (its pages in the WAL).
package enum HistoryCodec {
  /// The first byte of a run record of continuations (see above).
  package static let runTag: UInt8 = 7
  /// The most continuations one run record holds (its count is one byte).
  package static let maxRun: UInt8 = 255

  /// The varint a continuation stores: the zigzag-encoded wrapping difference of the two instants' bits.
  @inline(__always)
  package static func instantDelta(_ at: Double, after previous: UInt64) -> UInt64 {
    let difference = Int64(bitPattern: at.bitPattern &- previous)
    return UInt64(bitPattern: (difference << 1) ^ (difference >> 63))
  }

  /// The instant a continuation stores, from the previous entry's bits and the varint.
  @inline(__always)
  package static func instant(delta: UInt64, after previous: UInt64) -> Double {
    let difference = Int64(bitPattern: delta >> 1) ^ -Int64(bitPattern: delta & 1)
    return Double(bitPattern: previous &+ UInt64(bitPattern: difference))
  }

  package static func encode(_ events: ArraySlice<HistoryEvent>) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(events.count * 24)
    var previous = (events.first?.cursor ?? 1) - 1
    for event in events {
      encode(event, after: previous, into: &out)
      previous = event.cursor
    }
    return out
  }

  /// Appends one entry whose cursor follows `previous`.
  package static func encode(_ event: HistoryEvent, after previous: Int64, into out: inout [UInt8]) {
    do {
      out.append(UInt8(event.kind.code))
      appendVarint(&out, UInt64(event.cursor - previous))
      appendDouble(&out, event.at)
      var presence: UInt16 = 0
      if event.tipID != nil { presence |= 1 << 0 }
      if event.eventID != nil { presence |= 1 << 1 }
      if event.variant != nil { presence |= 1 << 2 }
      if event.duration != nil { presence |= 1 << 3 }
      if event.actionID != nil { presence |= 1 << 4 }
      if event.actionIndex != nil { presence |= 1 << 5 }
      if event.reason != nil { presence |= 1 << 6 }
      if event.status != nil { presence |= 1 << 7 }
      if let flag = event.shouldDisplay { presence |= 1 << 8 | (flag ? 1 << 15 : 0) }
      out.append(UInt8(presence & 0xFF))
      out.append(UInt8(presence >> 8))
      if let tip = event.tipID { appendString(&out, tip) }
      if let id = event.eventID { appendString(&out, id) }
      if let variant = event.variant { appendString(&out, variant) }
      if let duration = event.duration { appendDouble(&out, duration) }
      if let action = event.actionID { appendString(&out, action) }
      if let index = event.actionIndex { appendVarint(&out, UInt64(max(0, index))) }
      if let reason = event.reason { appendString(&out, reason) }
      if let status = event.status { appendString(&out, status) }
    }
  }

  /// Appends a donation entry (the hot path: no `HistoryEvent` is built for it): the fixed part is assembled on the
  /// stack and appended at once, then the event id's bytes.
  /// `sameEvent`: the chunk's previous entry was a donation of the same event, so its id is not written again
  /// (presence bit 9): a turn's goal donations cost 12 bytes each instead of 12 plus the id.
  package static func encodeDonation(
    event: String, at: Double, cursorDelta: Int64, sameEvent: Bool = false, into out: inout [UInt8]
  ) {
    var event = event
    event.withUTF8 { name in
      withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { head in
        var n = 0
        func put(_ byte: UInt8) {
          head[n] = byte
          n += 1
        }
        func putVarint(_ value: UInt64) {
          var value = value
          while value >= 0x80 {
            put(UInt8(value & 0x7F) | 0x80)
            value >>= 7
          }
          put(UInt8(value))
        }
        put(UInt8(HistoryEvent.Kind.donation.code))
        putVarint(UInt64(cursorDelta))
        var bits = at.bitPattern
        for _ in 0..<8 {
          put(UInt8(bits & 0xFF))
          bits >>= 8
        }
        if sameEvent {
          put(0)
          put(1 << 1)
          out.append(contentsOf: UnsafeBufferPointer(rebasing: head[0..<n]))
          return
        }
        put(1 << 1)
        put(0)
        putVarint(UInt64(name.count))
        out.append(contentsOf: UnsafeBufferPointer(rebasing: head[0..<n]))
      }
      if !sameEvent { out.append(contentsOf: name) }
    }
  }

  /// Decodes a chunk whose first cursor is `first`; nil when the bytes are not a valid chunk.
  package static func decode(_ bytes: UnsafeRawBufferPointer, first: Int64) -> [HistoryEvent]? {
    var reader = Reader(bytes: bytes)
    var events: [HistoryEvent] = []
    var cursor = first - 1
    var previousEvent: String?
    // The previous entry's instant when it was a donation (what a continuation follows).
    var previousDonationAt: UInt64?
    while !reader.atEnd {
      guard let code = reader.byte() else { return nil }
      if code == runTag {
        guard var previousAt = previousDonationAt, let eventID = previousEvent, let count = reader.byte(), count > 0
        else { return nil }
        for _ in 0..<count {
          guard let delta = reader.varint() else { return nil }
          cursor += 1
          let at = instant(delta: delta, after: previousAt)
          events.append(HistoryEvent(cursor: cursor, kind: .donation, at: at, eventID: eventID))
          previousAt = at.bitPattern
        }
        previousDonationAt = previousAt
        continue
      }
      guard let kind = HistoryEvent.Kind(code: Int(code)), let delta = reader.varint(),
        delta > 0, let at = reader.double(), let low = reader.byte(), let high = reader.byte()
      else { return nil }
      previousDonationAt = kind == .donation ? at.bitPattern : nil
      cursor += Int64(delta)
      let presence = UInt16(low) | UInt16(high) << 8
      var event = HistoryEvent(cursor: cursor, kind: kind, at: at)
      func has(_ bit: UInt16) -> Bool { presence & (1 << bit) != 0 }
      if has(0) { guard let v = reader.string() else { return nil }; event.tipID = v }
      if has(1) { guard let v = reader.string() else { return nil }; event.eventID = v }
      if has(9) {
        guard let v = previousEvent else { return nil }
        event.eventID = v
      }
      previousEvent = event.eventID
      if has(2) { guard let v = reader.string() else { return nil }; event.variant = v }
      if has(3) { guard let v = reader.double() else { return nil }; event.duration = v }
      if has(4) { guard let v = reader.string() else { return nil }; event.actionID = v }
      if has(5) { guard let v = reader.varint(), v <= UInt64(Int.max) else { return nil }; event.actionIndex = Int(v) }
      if has(6) { guard let v = reader.string() else { return nil }; event.reason = v }
      if has(7) { guard let v = reader.string() else { return nil }; event.status = v }
      if has(8) { event.shouldDisplay = presence & (1 << 15) != 0 }
      events.append(event)
    }
    return events
  }

  /// The kinds present, as a bitmask of `1 << code` (stored beside the chunk, so readers skip chunks cheaply).
  package static func kinds(_ events: ArraySlice<HistoryEvent>) -> Int {
    events.reduce(0) { $0 | 1 << $1.kind.code }
  }

  /// Every kind the analytics stream carries, as a mask.
  package static let streamedKinds = HistoryEvent.Kind.allCases.filter(\.isStreamed).reduce(0) { $0 | 1 << $1.code }
  /// The kinds the metrics read (impressions, actions, donations, counterfactual exposures, and eligibility changes:
  /// a variant's trigger is the tip becoming displayable, issue #46).
  package static let metricKinds = [HistoryEvent.Kind.impression, .action, .donation, .exposure, .eligibility].reduce(0)
  {
    $0 | 1 << $1.code
  }

  @inline(__always)
  package static func appendVarint(_ out: inout [UInt8], _ value: UInt64) {
    var value = value
    while value >= 0x80 {
      out.append(UInt8(value & 0x7F) | 0x80)
      value >>= 7
    }
    out.append(UInt8(value))
  }

  package static func appendDouble(_ out: inout [UInt8], _ value: Double) {
    withUnsafeBytes(of: value.bitPattern.littleEndian) { out.append(contentsOf: $0) }
  }

  package static func appendString(_ out: inout [UInt8], _ value: String) {
    var value = value
    value.withUTF8 { bytes in
      appendVarint(&out, UInt64(bytes.count))
      out.append(contentsOf: bytes)
    }
  }

  private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    var atEnd: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8? {
      guard offset < bytes.count else { return nil }
      defer { offset += 1 }
      return bytes[offset]
    }

    mutating func varint() -> UInt64? {
      var value: UInt64 = 0
      var shift: UInt64 = 0
      while shift < 64 {
        guard let b = byte() else { return nil }
        value |= UInt64(b & 0x7F) << shift
        if b & 0x80 == 0 { return value }
        shift += 7
      }
      return nil
    }

    mutating func double() -> Double? {
      guard offset + 8 <= bytes.count else { return nil }
      var bits: UInt64 = 0
      for i in 0..<8 { bits |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
      offset += 8
      return Double(bitPattern: bits)
    }

    mutating func string() -> String? {
      guard let length = varint(), length <= UInt64(bytes.count - offset) else { return nil }
      let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(length))])
      offset += Int(length)
      return String(decoding: slice, as: UTF8.self)
    }
  }
}

/// The history entries of one commit, encoded as they are recorded (a donation entry is appended straight to the
/// bytes, with no `HistoryEvent` built), split into chunks of at most ``HistoryBatch/chunkSize`` entries: what
/// ``Datastore/commit(_:history:)`` stores, one row per chunk.
///
/// A donation continuing a run is the hot path of recording (every goal donation of a busy app): it touches only
/// the open chunk, held apart from the closed ones, and appends two or three bytes.
public struct HistoryBatch: Sendable {
  /// The most entries one stored chunk holds (one row of the datastore's `history`, of `tipsd.history`).
  public static let chunkSize = 256

  package struct Chunk: Sendable {
    package var first: Int64
    package var last: Int64
    package var start: Int
    package var end: Int
    package var oldestAt: Double
    package var newestAt: Double
    package var kinds: Int
    package var count: Int
  }

  /// An eligibility change, for the `history_tips` table.
  package struct TipState: Sendable {
    package var tip: String
    package var status: String
    package var reason: String?
    package var shouldDisplay: Bool
    package var variant: String?
  }

  package private(set) var bytes: [UInt8] = []
  /// The full chunks, then ``open``.
  private var closed: [Chunk] = []
  /// The chunk entries go to (`count == 0`: none yet; the next entry starts it).
  private var open = Chunk(first: 0, last: 0, start: 0, end: 0, oldestAt: 0, newestAt: 0, kinds: 0, count: 0)
  package private(set) var tipStates: [TipState] = []
  /// The event id of the open chunk's last entry (for the repeated-id shortcut of donation entries).
  private var lastDonationEvent: String?
  /// When the open chunk's last entry is a donation: the instant's bits (a continuation may follow it).
  private var lastDonationAt: UInt64?
  /// When the open chunk's last entry is a continuation: the offset of its run record's count byte in ``bytes``.
  private var runCount: Int?
  /// Entries in the batch.
  public private(set) var count = 0

  public init() {}

  public init(_ events: [HistoryEvent]) {
    for event in events { append(event) }
  }

  public var isEmpty: Bool { count == 0 }

  /// The chunks, in cursor order (one `history` row each).
  package var chunks: [Chunk] { open.count == 0 ? closed : closed + [open] }

  /// The newest cursor in the batch, if any.
  public var lastCursor: Int64? { count == 0 ? nil : open.last }

  public mutating func removeAll() {
    bytes.removeAll(keepingCapacity: true)
    closed.removeAll(keepingCapacity: true)
    open.count = 0
    tipStates.removeAll()
    lastDonationEvent = nil
    lastDonationAt = nil
    runCount = nil
    count = 0
  }

  /// Appends an entry; its cursor must be larger than the previous one's.
  public mutating func append(_ event: HistoryEvent) {
    if event.kind == .donation, let eventID = event.eventID, event.tipID == nil, event.variant == nil,
      event.duration == nil, event.actionID == nil, event.actionIndex == nil, event.reason == nil,
      event.status == nil, event.shouldDisplay == nil
    {
      appendDonation(cursor: event.cursor, event: eventID, at: event.at)
      return
    }
    let previous = start(cursor: event.cursor, at: event.at, kind: event.kind)
    HistoryCodec.encode(event, after: previous, into: &bytes)
    open.end = bytes.count
    lastDonationEvent = event.eventID
    lastDonationAt = nil
    runCount = nil
    if event.kind == .eligibility, let tip = event.tipID, let status = event.status {
      tipStates.append(
        TipState(
          tip: tip, status: status, reason: event.reason, shouldDisplay: event.shouldDisplay ?? false,
          variant: event.variant))
    }
  }

  /// Appends a donation entry (`kind == .donation`) without building a `HistoryEvent`.
  public mutating func appendDonation(cursor: Int64, event: String, at: Double) {
    if let previousAt = lastDonationAt, open.count < HistoryBatch.chunkSize, open.last &+ 1 == cursor,
      lastDonationEvent == event
    {
      // The run goes on: a continuation (see HistoryCodec), counted in the open run record or starting one.
      open.last = cursor
      if at < open.oldestAt { open.oldestAt = at }
      if at > open.newestAt { open.newestAt = at }
      open.count += 1
      count += 1
      if let offset = runCount, bytes[offset] < HistoryCodec.maxRun {
        bytes[offset] += 1
      } else {
        bytes.append(HistoryCodec.runTag)
        runCount = bytes.count
        bytes.append(1)
      }
      HistoryCodec.appendVarint(&bytes, HistoryCodec.instantDelta(at, after: previousAt))
      open.end = bytes.count
      lastDonationAt = at.bitPattern
      return
    }
    let fresh = open.count == 0 || open.count >= HistoryBatch.chunkSize
    let previous = start(cursor: cursor, at: at, kind: .donation)
    let same = !fresh && lastDonationEvent == event
    HistoryCodec.encodeDonation(event: event, at: at, cursorDelta: cursor - previous, sameEvent: same, into: &bytes)
    open.end = bytes.count
    lastDonationEvent = event
    lastDonationAt = at.bitPattern
    runCount = nil
  }

  /// Starts an entry in the open chunk (or a new one when it is full); returns the cursor it follows.
  private mutating func start(cursor: Int64, at: Double, kind: HistoryEvent.Kind) -> Int64 {
    if open.count >= HistoryBatch.chunkSize {
      closed.append(open)
      open.count = 0
    }
    if open.count == 0 {
      open = Chunk(
        first: cursor, last: cursor - 1, start: bytes.count, end: bytes.count, oldestAt: at, newestAt: at, kinds: 0,
        count: 0)
    }
    let previous = open.last
    precondition(cursor > previous, "history cursors must increase")
    open.last = cursor
    open.oldestAt = min(open.oldestAt, at)
    open.newestAt = max(open.newestAt, at)
    open.kinds |= 1 << kind.code
    open.count += 1
    count += 1
    return previous
  }

  /// One chunk as stored: its entries' encoding, relative to its first cursor (so it may be stored under another
  /// first cursor: hosted mode's PostgreSQL gives each commit's chunks their cursors).
  public struct EncodedChunk: Sendable {
    public let first: Int64
    public let count: Int
    public let oldestAt: Double
    public let newestAt: Double
    public let bytes: [UInt8]
  }

  /// The chunks, encoded, in cursor order.
  public var encodedChunks: [EncodedChunk] {
    chunks.map {
      EncodedChunk(
        first: $0.first, count: $0.count, oldestAt: $0.oldestAt, newestAt: $0.newestAt,
        bytes: Array(bytes[$0.start..<$0.end]))
    }
  }

  /// The kinds the metrics read (a bit per `HistoryEvent.Kind.code`).
  public static var metricKinds: Int { HistoryCodec.metricKinds }

  /// The oldest cursor in the batch, if any.
  public var firstCursor: Int64? { chunks.first?.first }

  /// Decodes a stored chunk whose first entry has cursor `first`; nil when it is corrupt.
  public static func decode(_ bytes: [UInt8], first: Int64) -> [HistoryEvent]? {
    bytes.withUnsafeBytes { HistoryCodec.decode($0, first: first) }
  }

  /// The entries, decoded (tests, and what a commit stored).
  public var events: [HistoryEvent] {
    var out: [HistoryEvent] = []
    for chunk in chunks {
      let decoded = bytes[chunk.start..<chunk.end].withUnsafeBytes { HistoryCodec.decode($0, first: chunk.first) }
      out += decoded ?? []
    }
    return out
  }
}
