/// Seconds since the Unix epoch. The engine never reads a clock itself: every instant comes from an injected
/// clock (`TipsEngine.EngineClock`), so tests drive time deterministically.
public typealias Timestamp = Double
