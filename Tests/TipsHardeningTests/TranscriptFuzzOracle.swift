import TipsJSON
import TipsTranscript

/// The `transcript` fuzz target's oracle (`tipsd test`'s parser and pattern matcher), compiled into
/// Fuzz/harness/TranscriptHarness.swift by Fuzz/build.sh and replayed over the committed seeds and regressions by
/// `FuzzRegressions`. Any text parses or is refused with a line of the text; parsing is deterministic; what parses
/// keeps to the format (no step or directive value spans a line break, lines increase, durations are finite) and,
/// written out again, parses to the same transcript; and every pattern without `$regex:` matches a value built from
/// it (a slow regular expression is the transcript author's, and is not fuzzed).
enum TranscriptFuzzOracle {
  typealias Check = (_ holds: Bool, _ message: () -> String) -> Void

  static let path = "fuzz/case.transcript"

  static func check(_ input: [UInt8], _ check: Check) {
    let text = String(decoding: input, as: UTF8.self)
    let lineCount = input.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
    let transcript: Transcript
    do {
      transcript = try Transcript(text: text, path: path)
    } catch {
      check((1...lineCount).contains(error.line), { "a parse error on line \(error.line) of \(lineCount)" })
      let again = Result { () throws(Transcript.ParseError) in try Transcript(text: text, path: path) }
      if case .failure(let second) = again {
        check(second.description == error.description, { "two parses fail differently" })
      } else {
        check(false, { "a text that failed to parse parses the second time" })
      }
      return
    }
    checkShape(transcript, lineCount: lineCount, check)
    if let again = try? Transcript(text: text, path: path) {
      check(render(again) == render(transcript), { "two parses of the same text differ" })
    } else {
      check(false, { "a text that parsed fails the second time" })
    }
    let written = render(transcript)
    do {
      let reread = try Transcript(text: written, path: path)
      check(render(reread) == written, { "written and read again, the transcript changed:\n\(written)" })
    } catch {
      check(false, { "the transcript, written out, does not parse: \(error)\n\(written)" })
    }
    checkPatterns(transcript, check)
  }

  /// What the format promises of a parsed transcript.
  static func checkShape(_ transcript: Transcript, lineCount: Int, _ check: Check) {
    func oneLine(_ value: String, _ what: String) {
      check(
        !value.unicodeScalars.contains("\n"), { "\(what) spans a line break: \(JSONValue.string(value).jsonString)" })
    }
    transcript.args.forEach { oneLine($0, "an args word") }
    transcript.serveArgs?.forEach { oneLine($0, "a serve-args word") }
    transcript.knownBug.map { oneLine($0, "known-bug") }
    var last = 0
    for step in transcript.steps {
      oneLine(step.client, "a client name")
      check(
        step.client.isEmpty || step.client.first!.isLetter, { "client \(step.client) does not begin with a letter" })
      check(step.line > last && step.line <= lineCount, { "step line \(step.line) after \(last) of \(lineCount)" })
      last = step.line
      switch step.kind {
      case .send(let body):
        oneLine(body, "a message sent")
        check(!body.isEmpty, { "an empty message is sent" })
      case .expect(let patterns):
        check(patterns.first?.line == step.line, { "an expectation does not begin on its step's line" })
        for (index, pattern) in patterns.enumerated() {
          oneLine(pattern.text, "a pattern")
          if index > 0 {
            check(pattern.line > last && pattern.line <= lineCount, { "pattern line \(pattern.line) after \(last)" })
          }
          last = pattern.line
        }
      case .advance(let seconds):
        check(seconds.isFinite && seconds >= 0, { "== advance by \(seconds) seconds" })
      case .nothing, .eof, .exit: break
      }
    }
  }

  /// The transcript as text, each step on its own line number (blank lines between), the directives on free lines.
  static func render(_ transcript: Transcript) -> String {
    var lines: [Int: String] = [:]
    for step in transcript.steps {
      let client = step.client
      switch step.kind {
      case .send(let body): lines[step.line] = "\(client)--> \(body)"
      case .expect(let patterns): for pattern in patterns { lines[pattern.line] = "\(client)<-- \(pattern.text)" }
      case .nothing: lines[step.line] = "\(client)<-- nothing"
      case .eof: lines[step.line] = "\(client)<-- eof"
      case .exit(let status): lines[step.line] = "\(client)<-- exit \(status)"
      case .advance(let seconds): lines[step.line] = "\(client)== advance \(seconds)"
      }
    }
    var directives = ["#! match: \(transcript.partial ? "partial" : "exact")"]
    if !transcript.args.isEmpty { directives.append("#! args: \(transcript.args.joined(separator: " "))") }
    if let serveArgs = transcript.serveArgs { directives.append("#! serve-args: \(serveArgs.joined(separator: " "))") }
    if let knownBug = transcript.knownBug { directives.append("#! known-bug: \(knownBug)") }
    var free = 1
    for directive in directives {
      while lines[free] != nil { free += 1 }
      lines[free] = directive
    }
    let last = lines.keys.max() ?? 0
    return (1...max(1, last)).map { lines[$0] ?? "" }.joined(separator: "\n") + "\n"
  }

  /// Every pattern that can be satisfied by construction is: exact and partial matching of the value built from it;
  /// what the patterns capture substitutes into the messages sent, and a name not captured is one they use.
  static func checkPatterns(_ transcript: Transcript, _ check: Check) {
    var bindings: [String: JSONValue] = [:]
    for step in transcript.steps {
      guard case .expect(let patterns) = step.kind else { continue }
      for pattern in patterns {
        guard let json = try? JSONParser.parse(Array(pattern.text.utf8), maxDepth: 64), let value = example(of: json)
        else { continue }
        for partial in [false, true] {
          var captured: [String: JSONValue] = [:]
          let problem = PatternMatcher(partial: partial).match(json, value, &captured)
          check(problem == nil, { "\(pattern.text) does not match \(value.jsonString): \(problem ?? "")" })
          bindings.merge(captured) { old, _ in old }
        }
      }
    }
    for case .send(let body) in transcript.steps.map(\.kind) {
      do {
        _ = try Substitution.apply(body, bindings)
      } catch {
        check(body.contains("${\(error.name)}"), { "Substitution names \(error.name), which \(body) does not use" })
      }
    }
  }

  /// A value the pattern matches, or nil when none is built: `$regex:`, an unknown `$` word, or an object pattern
  /// naming one member twice (`a` and `a?`).
  static func example(of pattern: JSONValue) -> JSONValue? {
    switch pattern {
    case .string(let text) where text.hasPrefix("$"):
      if text.hasPrefix("$$") { return .string(String(text.dropFirst())) }
      if text.hasPrefix("$capture:") { return .string("captured " + text) }
      switch text {
      case "$any", "$string": return "text"
      case "$number", "$integer": return 7
      case "$boolean": return true
      case "$object": return .object(JSONObject())
      case "$array": return .array([])
      default: return nil
      }
    case .array(let items):
      let rest = items.first == .string("$unordered") ? Array(items.dropFirst()) : items
      var values: [JSONValue] = []
      for item in rest {
        guard let value = example(of: item) else { return nil }
        values.append(value)
      }
      return .array(values)
    case .object(let members):
      var object = JSONObject()
      for (key, member) in members.members {
        let plain = key.hasSuffix("?") ? String(key.dropLast()) : key
        guard object[plain] == nil, let value = example(of: member) else { return nil }
        object[plain] = value
      }
      return .object(object)
    default:
      return pattern
    }
  }
}
