/// The outcome of running one transcript.
public struct TranscriptResult: Sendable {
  public enum Status: Sendable, Equatable {
    case passed
    /// A step did not go as written.
    case failed
    /// The transcript itself is malformed (or its daemon could not start).
    case error
    /// A `known-bug` file that still fails.
    case skipped
  }

  /// One thing that went wrong, at a transcript line.
  public struct Failure: Sendable {
    public var line: Int
    public var message: String
    /// Expected vs received, as a unified diff (empty when there is nothing to compare).
    public var diff: String

    public init(line: Int, message: String, diff: String = "") {
      self.line = line
      self.message = message
      self.diff = diff
    }
  }

  public var name: String
  public var path: String
  public var status: Status
  public var failure: Failure?
  public var steps: Int
  public var seconds: Double
  /// The daemon's log, for a failure's details.
  public var log: String

  public init(
    name: String, path: String, status: Status, failure: Failure? = nil, steps: Int = 0, seconds: Double = 0,
    log: String = ""
  ) {
    self.name = name
    self.path = path
    self.status = status
    self.failure = failure
    self.steps = steps
    self.seconds = seconds
    self.log = log
  }

  /// `path:line: message` for a failure.
  public var headline: String {
    guard let failure else { return path }
    return "\(path):\(failure.line): \(failure.message)"
  }
}

/// JUnit XML (the dialect CI systems render: `testsuites` / `testsuite` / `testcase` with `failure`, `error` and
/// `skipped`).
public enum JUnitReport {
  public static func xml(_ results: [TranscriptResult], suite: String = "tipsd test") -> String {
    let failures = results.filter { $0.status == .failed }.count
    let errors = results.filter { $0.status == .error }.count
    let skipped = results.filter { $0.status == .skipped }.count
    let time = results.reduce(0) { $0 + $1.seconds }
    var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    let counts =
      "tests=\"\(results.count)\" failures=\"\(failures)\" errors=\"\(errors)\" skipped=\"\(skipped)\" time=\"\(format(time))\""
    out += "<testsuites \(counts)>\n"
    out += "  <testsuite name=\"\(escape(suite))\" \(counts)>\n"
    for result in results {
      out +=
        "    <testcase classname=\"\(escape(suite))\" name=\"\(escape(result.name))\" file=\"\(escape(result.path))\" time=\"\(format(result.seconds))\""
      guard let failure = result.failure, result.status != .passed else {
        out += "/>\n"
        continue
      }
      out += ">\n"
      let tag = result.status == .failed ? "failure" : result.status == .error ? "error" : "skipped"
      let message = escape("\(result.path):\(failure.line): \(failure.message)")
      var body = failure.diff
      if result.status != .skipped && !result.log.isEmpty {
        body += (body.isEmpty ? "" : "\n") + "--- daemon log ---\n" + result.log
      }
      out +=
        "      <\(tag) message=\"\(message)\" type=\"\(tag == "error" ? "transcript" : "mismatch")\">\(escape(body))</\(tag)>\n"
      out += "    </testcase>\n"
    }
    out += "  </testsuite>\n</testsuites>\n"
    return out
  }

  static func format(_ seconds: Double) -> String {
    let millis = Int((seconds * 1000).rounded())
    let fraction = String(millis % 1000)
    return "\(millis / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
  }

  /// XML text and attribute escaping; characters XML 1.0 cannot carry become U+FFFD.
  static func escape(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "\n", "\t", "\r": out.unicodeScalars.append(scalar)
      case _ where scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value): out += "\u{FFFD}"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}

/// A line-based unified diff (longest common subsequence), for expected-vs-received failures.
public enum UnifiedDiff {
  public static func diff(expected: [String], received: [String], context: Int = 3) -> String {
    let n = expected.count
    let m = received.count
    var lcs = [[Int]](repeating: [Int](repeating: 0, count: m + 1), count: n + 1)
    for i in stride(from: n - 1, through: 0, by: -1) {
      for j in stride(from: m - 1, through: 0, by: -1) {
        lcs[i][j] = expected[i] == received[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
      }
    }
    var lines: [(Character, String)] = []
    var i = 0
    var j = 0
    while i < n || j < m {
      if i < n && j < m && expected[i] == received[j] {
        lines.append((" ", expected[i]))
        i += 1
        j += 1
      } else if j < m && (i == n || lcs[i][j + 1] > lcs[i + 1][j]) {
        lines.append(("+", received[j]))
        j += 1
      } else {
        lines.append(("-", expected[i]))
        i += 1
      }
    }
    guard lines.contains(where: { $0.0 != " " }) else { return "" }
    // Keep `context` unchanged lines around each change.
    var keep = [Bool](repeating: false, count: lines.count)
    for (index, line) in lines.enumerated() where line.0 != " " {
      for k in max(0, index - context)...min(lines.count - 1, index + context) { keep[k] = true }
    }
    var out = "--- expected\n+++ received\n"
    var skipping = false
    for (index, line) in lines.enumerated() {
      if keep[index] {
        out += "\(line.0)\(line.1)\n"
        skipping = false
      } else if !skipping {
        out += "@@ …\n"
        skipping = true
      }
    }
    return out
  }
}
