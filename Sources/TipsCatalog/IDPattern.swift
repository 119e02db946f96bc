/// The naming convention tip and template ids must follow (`tipsd lint --id-pattern`).
public enum IDPattern: Sendable, Hashable, CustomStringConvertible {
  /// Seed 000's `feature.purpose`: lowercase and dotted, at least two segments, each `[a-z][a-z0-9-]*`
  /// (`filter.tip`, `advanced-search.tip`, `trail.new.north-ridge`).
  case featurePurpose
  /// Any id (only the engine's own rules: not empty, no U+001F).
  case any
  /// A regular expression (Swift `Regex` syntax, like PCRE) the whole id must match.
  case regex(String)

  /// The keyword `feature.purpose` or `any`, else a regular expression; an expression that does not compile is an
  /// error.
  public init(parsing text: String) throws(CatalogError) {
    switch text {
    case "feature.purpose": self = .featurePurpose
    case "any": self = .any
    default:
      guard (try? Regex(text)) != nil else {
        throw CatalogError(file: "--id-pattern", message: "not a regular expression (or feature.purpose, any)")
      }
      self = .regex(text)
    }
  }

  /// Whether `id` follows the pattern.
  public func matches(_ id: String) -> Bool {
    switch self {
    case .any: return true
    case .featurePurpose: return Self.isFeaturePurpose(id)
    case .regex(let pattern):
      guard let regex = try? Regex(pattern) else { return false }
      return (try? regex.wholeMatch(in: id)) != nil
    }
  }

  /// `feature.purpose`, `any`, or the expression.
  public var description: String {
    switch self {
    case .featurePurpose: "feature.purpose"
    case .any: "any"
    case .regex(let pattern): pattern
    }
  }

  static func isFeaturePurpose(_ id: String) -> Bool {
    let segments = id.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard segments.count >= 2 else { return false }
    for segment in segments {
      guard let first = segment.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else { return false }
      for byte in segment.dropFirst() {
        let ok =
          (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
          || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
          || byte == UInt8(ascii: "-")
        guard ok else { return false }
      }
    }
    return true
  }
}
