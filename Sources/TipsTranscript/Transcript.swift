public import TipsJSON

/// A parsed transcript: a conversation with a fresh daemon, one step per line (the format of `tipsd test` and of
/// `protocol/conformance/`; documented in `protocol/transcripts.md`).
///
/// ```text
/// # comment
/// #! args: --catalog app.json          extra `tipsd serve` flags for this file
/// #! match: partial                    only the members a pattern writes are compared
/// --> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{…}}
/// <-- {"jsonrpc":"2.0","id":1,"result":"$object"}
/// inspector--> {…}                     a second client, named "inspector"
/// inspector<-- nothing
/// == advance 1d                        clock/advance on the virtual clock (its reply is checked and consumed)
/// ```
public struct Transcript: Sendable {
  /// The file's name without its directory and `.transcript` extension.
  public var name: String
  /// The path it was read from (for messages).
  public var path: String
  /// `#! args:` — flags added to the defaults.
  public var args: [String] = []
  /// `#! serve-args:` — flags replacing the defaults.
  public var serveArgs: [String]?
  /// `#! known-bug:` — the file states the correct behaviour of a known bug: a failure is reported as skipped.
  public var knownBug: String?
  /// `#! match: partial` — object patterns compare only the members they write.
  public var partial = false
  public var steps: [Step] = []

  /// One step.
  public struct Step: Sendable {
    public enum Kind: Sendable {
      /// Send this text as one message (it need not be JSON: a transcript may test parse errors).
      case send(String)
      /// The next `patterns.count` messages must match these patterns, in any order (pattern text, line).
      case expect([(text: String, line: Int)])
      /// Nothing more arrives now.
      case nothing
      /// The daemon closes this client's connection.
      case eof
      /// The daemon stops with this exit status (the default client is the daemon's stdio).
      case exit(Int32)
      /// `clock/advance` by this many seconds; the reply must be a result.
      case advance(Double)
    }
    public var client: String
    public var kind: Kind
    public var line: Int
  }

  /// A problem in a transcript's text, with its line.
  public struct ParseError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var line: Int
    public var message: String
    public var description: String { "\(path):\(line): \(message)" }
  }

  /// Parses transcript text; `path` names it in messages.
  public init(text: String, path: String) throws(ParseError) {
    self.path = path
    self.name = Self.name(forPath: path)
    var number = 0
    // Lines end at LF or CRLF: "\r\n" is one Character, which a split on "\n" alone never breaks.
    for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
      number += 1
      let line = raw.trimmingWhitespace()
      if line.isEmpty { continue }
      if line.hasPrefix("#!") {
        try directive(String(line.dropFirst(2)), line: number)
        continue
      }
      if line.hasPrefix("#") { continue }
      try step(line, number: number)
    }
  }

  private mutating func directive(_ text: String, line: Int) throws(ParseError) {
    guard let colon = text.firstIndex(of: ":") else {
      throw ParseError(path: path, line: line, message: "a directive is `#! key: value`")
    }
    let key = text[..<colon].trimmingWhitespace()
    let value = text[text.index(after: colon)...].trimmingWhitespace()
    let words = value.split(separator: " ").map(String.init)
    switch key {
    case "args": args += words
    case "serve-args": serveArgs = words
    case "known-bug": knownBug = value
    case "match":
      guard value == "partial" || value == "exact" else {
        throw ParseError(path: path, line: line, message: "#! match: expected partial or exact, got \"\(value)\"")
      }
      partial = value == "partial"
    case "transports", "framings": break  // for the socket suites; one in-process connection here
    default:
      throw ParseError(
        path: path, line: line,
        message: "unknown directive \"\(key)\" (expected args, serve-args, match, known-bug, transports, framings)")
    }
  }

  private mutating func step(_ line: String, number: Int) throws(ParseError) {
    // An optional client name, then -->, <-- or ==.
    var name = Substring(line)
    var client = ""
    var rest = Substring(line)
    var marker = ""
    while let first = name.first,
      first.isLetter || first.isNumber || first == "_" || first == "-" && !name.hasPrefix("-->")
    {
      name.removeFirst()
    }
    for candidate in ["-->", "<--", "=="] where name.hasPrefix(candidate) {
      marker = candidate
      client = String(line[line.startIndex..<name.startIndex])
      rest = name.dropFirst(candidate.count)
      break
    }
    guard !marker.isEmpty, client.isEmpty || client.first!.isLetter else {
      throw ParseError(
        path: path, line: number,
        message: "a line must start with -->, <--, == (optionally after a client name, e.g. inspector-->), # or #!")
    }
    let body = rest.trimmingWhitespace()
    switch marker {
    case "-->":
      guard !body.isEmpty else { throw ParseError(path: path, line: number, message: "--> needs a message") }
      steps.append(Step(client: client, kind: .send(body), line: number))
    case "<--":
      switch body {
      case "nothing": steps.append(Step(client: client, kind: .nothing, line: number))
      case "eof": steps.append(Step(client: client, kind: .eof, line: number))
      case _ where body.hasPrefix("exit "):
        guard let status = Int32(body.dropFirst(5).trimmingWhitespace()) else {
          throw ParseError(path: path, line: number, message: "<-- exit needs a status, e.g. <-- exit 0")
        }
        steps.append(Step(client: client, kind: .exit(status), line: number))
      default:
        do {
          _ = try JSONParser.parse(Array(Substitution.placeholderFilled(body).utf8))
        } catch {
          throw ParseError(path: path, line: number, message: "<-- line is not JSON: \(error)")
        }
        if let last = steps.last, last.client == client, case .expect(var patterns) = last.kind {
          patterns.append((body, number))
          steps[steps.count - 1].kind = .expect(patterns)
        } else {
          steps.append(Step(client: client, kind: .expect([(body, number)]), line: number))
        }
      }
    default:
      guard client.isEmpty else {
        throw ParseError(path: path, line: number, message: "== steps take no client name (the runner sends them)")
      }
      let words = body.split(separator: " ")
      guard words.count == 2, words[0] == "advance", let seconds = Self.duration(String(words[1])) else {
        throw ParseError(
          path: path, line: number, message: "expected `== advance DURATION` (seconds, or 90s, 30m, 2h, 1d)")
      }
      steps.append(Step(client: client, kind: .advance(seconds), line: number))
    }
  }

  /// `90`, `90s`, `30m`, `2h`, `1d` in seconds.
  static func duration(_ text: String) -> Double? {
    let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    if let unit = text.last, let scale = units[unit], let value = Double(text.dropLast()), value >= 0 {
      return value * scale
    }
    guard let value = Double(text), value >= 0, value.isFinite else { return nil }
    return value
  }

  /// A transcript's name: its file name without directory and `.transcript`.
  public static func name(forPath path: String) -> String {
    var name = path.split(separator: "/").last.map(String.init) ?? path
    if name.hasSuffix(".transcript") { name.removeLast(".transcript".count) }
    return name
  }

  /// Client names in order of first use ("" is the default client).
  public var clients: [String] {
    var seen: [String] = []
    for step in steps where !seen.contains(step.client) { seen.append(step.client) }
    return seen
  }
}

/// `${NAME}` substitution of captured values.
public enum Substitution {
  /// `text` with every `${NAME}` replaced by the JSON of `bindings[NAME]`; throws the first name not captured.
  public static func apply(_ text: String, _ bindings: [String: JSONValue]) throws(Unbound) -> String {
    var out = ""
    var rest = Substring(text)
    while let start = rest.firstRange(of: "${") {
      out += rest[..<start.lowerBound]
      let after = rest[start.upperBound...]
      guard let end = after.firstIndex(of: "}") else {
        out += rest[start.lowerBound...]
        return out
      }
      let name = String(after[..<end])
      guard let value = bindings[name] else { throw Unbound(name: name) }
      out += value.jsonString
      rest = after[after.index(after: end)...]
    }
    return out + rest
  }

  /// A name used before it was captured.
  public struct Unbound: Error, Sendable {
    public var name: String
  }

  /// `text` with every `${NAME}` replaced by `0` (to check the rest is JSON).
  static func placeholderFilled(_ text: String) -> String {
    var out = ""
    var rest = Substring(text)
    while let start = rest.firstRange(of: "${"), let end = rest[start.upperBound...].firstIndex(of: "}") {
      out += rest[..<start.lowerBound] + "0"
      rest = rest[rest.index(after: end)...]
    }
    return out + rest
  }
}

extension StringProtocol {
  func trimmingWhitespace() -> String {
    var view = Substring(self)
    while let first = view.first, first == " " || first == "\t" || first == "\r" { view.removeFirst() }
    while let last = view.last, last == " " || last == "\t" || last == "\r" { view.removeLast() }
    return String(view)
  }
}
