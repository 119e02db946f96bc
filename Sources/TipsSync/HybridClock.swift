#if canImport(Glibc)
  import Glibc
#endif

/// A hybrid logical clock timestamp (Kulkarni et al.): milliseconds of physical time in the high bits and a counter
/// in the low 16, as one `Int64` (a PostgreSQL `bigint`, a JSON integer). Every timestamp a device issues is greater
/// than every one it issued or received before, and stays close to its physical clock; two devices may issue the same
/// value, so orderings that need a strict total order break ties by device id.
public struct HLC: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
  public var rawValue: Int64

  public init(rawValue: Int64) { self.rawValue = rawValue }

  /// Before every timestamp a device issues (no datastore reset yet, no resetEligibility yet).
  public static let zero = HLC(rawValue: 0)

  /// The physical part, in seconds since the epoch.
  public var seconds: Double { Double(rawValue >> 16) / 1000 }

  public static func < (lhs: HLC, rhs: HLC) -> Bool { lhs.rawValue < rhs.rawValue }

  public var description: String { String(rawValue) }
}

/// A device's hybrid logical clock: reads physical time from the engine's (injected) clock, so a virtual clock in
/// tests skews it as it would a real device's.
public struct HybridClock: Sendable, Equatable {
  /// The last timestamp issued or observed.
  public private(set) var last: HLC

  public init(last: HLC = .zero) { self.last = last }

  /// A new timestamp, after everything issued or observed so far: `max(physical, last + 1)`.
  public mutating func next(physicalSeconds: Double) -> HLC {
    let milliseconds = physicalSeconds.isFinite ? max(0, Int64((physicalSeconds * 1000).rounded(.down))) : 0
    let physical = milliseconds << 16
    last = HLC(rawValue: max(physical, last.rawValue + 1))
    return last
  }

  /// Takes in another device's timestamp, so that what this device issues next comes after it.
  public mutating func observe(_ remote: HLC) {
    if remote > last { last = remote }
  }
}
