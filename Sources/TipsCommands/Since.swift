/// `--since`/`--until`'s WHEN: seconds since the epoch, or a span back from the daemon's clock (`90s`, `30m`, `24h`,
/// `7d`, `2w`). Read when the command line is (a malformed one is a usage error), resolved once the daemon says what
/// time it is.
enum Since: Equatable {
  case instant(Double)
  case ago(seconds: Double)

  init?(_ text: String) {
    if let seconds = Double(text), seconds.isFinite {
      self = .instant(seconds)
      return
    }
    guard let unit = text.last, let amount = Double(text.dropLast()), amount.isFinite, amount >= 0 else { return nil }
    let scale: Double
    switch unit {
    case "s": scale = 1
    case "m": scale = 60
    case "h": scale = 3_600
    case "d": scale = 86_400
    case "w": scale = 604_800
    default: return nil
    }
    self = .ago(seconds: amount * scale)
  }

  /// The option's value read as a WHEN.
  init(_ value: OptionValue) throws(UsageError) {
    guard let parsed = Since(value.text) else {
      throw value.invalid("\"\(value.text)\": expected seconds since the epoch or a span like 7d, 24h")
    }
    self = parsed
  }

  /// The instant, given the daemon's now.
  func instant(now: Double) -> Double {
    switch self {
    case .instant(let seconds): seconds
    case .ago(let seconds): now - seconds
    }
  }

  static let help = "seconds since the epoch, or a span back from the daemon's clock: 90s, 30m, 24h, 7d, 2w"
}
