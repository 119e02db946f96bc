/// What `Framer.next()` produces.
public enum FramerEvent: Sendable, Equatable {
  /// One complete message payload, without framing.
  case message([UInt8])
  /// A fatal framing error; no further events follow.
  case error(FramingError)
}
