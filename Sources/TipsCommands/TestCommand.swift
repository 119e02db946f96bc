import TipsSystem
import TipsTranscript

/// `tipsd test [--junit FILE] [--catalog FILE] [--partial] [--quiet] TRANSCRIPT...`: runs bridge-contract transcripts,
/// each against a fresh in-process daemon (in-memory datastore, virtual clock, the embedded event loop: no sockets,
/// no threads, no waiting), and reports one line per file, a diff for every failure, and optionally JUnit XML.
struct TestCommand: Command {
  static let name = "test"
  static let abstract = "run bridge-contract transcripts against an in-process daemon"
  static let usage = "tipsd test [--junit FILE] [--catalog FILE] [--partial] [--quiet] TRANSCRIPT..."
  static let discussion = """
    Runs each transcript (protocol/transcripts.md) against a fresh in-process daemon
    (--datastore :memory: --clock virtual --clock-start 1000000 --allow-testing, plus the file's `#! args:`).
    Exit status: 0 when every transcript passes (known-bug files may fail), 1 otherwise.
    """
  static let options: [Option<TestCommand>] = [
    .value("--junit", as: "FILE", help: "also write JUnit XML (for CI test reports)") { $0.junit = $1.text },
    .value(
      "--catalog", as: "FILE", help: "register this catalog in every daemon (a file's own `#! args: --catalog` wins)"
    ) {
      $0.runner.catalogPath = $1.text
    },
    .flag("--partial", help: "compare only the members patterns write, in every file (as `#! match: partial`)") {
      $0.runner.partialByDefault = true
    },
    .flag("--quiet", "-q", help: "print only failures and the summary") { $0.quiet = true },
  ]

  var junit: String?
  var runner = TranscriptRunner()
  var quiet = false
  var paths: [String] = []

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    try Arguments.parse(arguments, into: &self, options: Self.options) { command, path throws(UsageError) in
      command.paths.append(path)
    }
    guard !paths.isEmpty else { throw .invalid("no transcripts given") }
  }

  func run() -> Int32 {
    let started = System.monotonicSeconds()
    var results: [TranscriptResult] = []
    for path in paths {
      let result = runner.run(path: path)
      results.append(result)
      report(result)
    }
    let elapsed = System.monotonicSeconds() - started
    let count = { (status: TranscriptResult.Status) in results.filter { $0.status == status }.count }
    print(
      "tipsd test: \(results.count) transcript\(results.count == 1 ? "" : "s"), \(count(.passed)) passed, "
        + "\(count(.failed)) failed, \(count(.error)) errors, \(count(.skipped)) skipped (known bugs) in "
        + "\(Format.fixed(elapsed, 2)) s")
    if let junit {
      do {
        try System.writeFile(junit, Array(JUnitReport.xml(results).utf8))
      } catch {
        Console.error("tipsd test: cannot write \(junit): \(error)\n")
        return 1
      }
    }
    return count(.failed) + count(.error) == 0 ? 0 : 1
  }

  func report(_ result: TranscriptResult) {
    let timing = "\(result.steps) steps, \(Format.fixed(result.seconds * 1000, 2)) ms"
    switch result.status {
    case .passed:
      if !quiet { print("ok    \(result.name) (\(timing))") }
    case .skipped:
      print("skip  \(result.name): known bug — \(result.headline)")
    case .failed, .error:
      print("FAIL  \(result.headline)")
      if let diff = result.failure?.diff, !diff.isEmpty {
        for line in diff.split(separator: "\n", omittingEmptySubsequences: false).dropLast() { print("      \(line)") }
      }
    }
  }
}
