/// ISO 8601 formatting without Foundation (the engine is pure).
public enum ISO8601 {
  /// `2026-11-30T09:15:02Z`: the instant in UTC, to the second (rounded down).
  public static func string(from timestamp: Timestamp) -> String {
    let seconds = Int64(timestamp.rounded(.down))
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let secondOfDay = seconds - days * 86_400
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    func pad(_ value: Int64, _ width: Int) -> String {
      let text = String(value)
      return String(repeating: "0", count: max(0, width - text.count)) + text
    }
    return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3_600, 2)):"
      + "\(pad(secondOfDay % 3_600 / 60, 2)):\(pad(secondOfDay % 60, 2))Z"
  }
}

extension ISO8601 {
  /// Parses `2027-01-01T00:00:00Z` or with an offset (`+09:00`, `-05:30`): a whole second, in the proleptic Gregorian
  /// calendar. Nil for anything else (fractions of a second included: schedules are to the second).
  public static func timestamp(from text: String) -> Timestamp? {
    let bytes = Array(text.utf8)
    guard bytes.count == 20 || bytes.count == 25 else { return nil }
    func number(_ start: Int, _ length: Int) -> Int64? {
      var value: Int64 = 0
      for byte in bytes[start..<(start + length)] {
        guard byte >= 0x30 && byte <= 0x39 else { return nil }
        value = value * 10 + Int64(byte - 0x30)
      }
      return value
    }
    func at(_ index: Int, _ character: Character) -> Bool { bytes[index] == character.asciiValue! }
    guard at(4, "-"), at(7, "-"), at(10, "T"), at(13, ":"), at(16, ":"), let year = number(0, 4),
      let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2), let minute = number(14, 2),
      let second = number(17, 2), (1...12).contains(month), hour < 24, minute < 60, second < 60
    else { return nil }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    let monthDays: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    guard day >= 1 && day <= monthDays[Int(month) - 1] else { return nil }
    var offset: Int64 = 0
    if bytes.count == 20 {
      guard at(19, "Z") else { return nil }
    } else {
      guard at(19, "+") || at(19, "-"), at(22, ":"), let hours = number(20, 2), let minutes = number(23, 2),
        hours < 24, minutes < 60
      else { return nil }
      offset = (hours * 3_600 + minutes * 60) * (at(19, "-") ? -1 : 1)
    }
    // Days from the civil date (H. Hinnant's algorithm), the inverse of `string(from:)`.
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    let days = era * 146_097 + dayOfEra - 719_468
    return Double(days * 86_400 + hour * 3_600 + minute * 60 + second - offset)
  }
}
