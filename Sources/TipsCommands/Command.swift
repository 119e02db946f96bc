import TipsSystem

/// One `tipsd` subcommand (the shape of swift-argument-parser's `ParsableCommand`, by hand): its name, a one-line
/// abstract for the overview, its usage, the options it reads through ``Arguments``, and what it does.
public protocol Command {
  /// The words after `tipsd`: `serve`, `strings export`.
  static var name: String { get }
  /// One line for `tipsd --help`.
  static var abstract: String { get }
  /// The synopsis after `usage: ` (`tipsd call [--socket PATH] METHOD [PARAMS-JSON]`); more lines for more forms.
  static var usage: String { get }
  /// What `--help` says between the usage and the options (may be empty).
  static var discussion: String { get }
  /// Every option, in the order `--help` lists them.
  static var options: [Option<Self>] { get }
  /// Reads the arguments after the command's name; a ``UsageError`` names what is wrong.
  init(parsing arguments: [String], environment: [String: String]) throws(UsageError)
  /// Does the work; returns the exit status.
  func run() -> Int32
}

extension Command {
  public static var discussion: String { "" }

  /// `--help`: the usage, the discussion and the options.
  public static var help: String {
    var text = "usage: " + usage.split(separator: "\n").joined(separator: "\n       ") + "\n"
    text += "\n" + abstract + "\n"
    if !discussion.isEmpty { text += "\n" + discussion + "\n" }
    let listed = options
    if !listed.isEmpty {
      text += "\n"
      if let first = listed.first, !first.names.isEmpty { text += "OPTIONS\n" }
      text += HelpText.options(listed)
    }
    return text
  }

  /// What a refused command line prints on stderr: the problem, the usage, and where the options are.
  static func usageError(_ message: String) -> String {
    "tipsd \(name): \(message)\nusage: " + usage.split(separator: "\n").joined(separator: "\n       ")
      + "\n(tipsd \(name) --help lists the options)\n"
  }
}

/// Lays out options for `--help`: the label in a 25-column field, the help beside it, continuation lines indented.
enum HelpText {
  static let labelWidth = 25

  static func options<Target>(_ options: [Option<Target>]) -> String {
    var text = ""
    for (index, option) in options.enumerated() {
      guard !option.names.isEmpty else {
        text += (index == 0 ? "" : "\n") + option.help + "\n"
        continue
      }
      let label = option.label
      let lines = option.help.split(separator: "\n", omittingEmptySubsequences: false)
      let pad = label.count < labelWidth ? String(repeating: " ", count: labelWidth - label.count) : "  "
      text += "  \(label)\(pad)\(lines.first ?? "")\n"
      let indent = String(repeating: " ", count: labelWidth + 2)
      for line in lines.dropFirst() { text += indent + line + "\n" }
    }
    return text
  }
}

/// Output for people: results on stdout, problems on stderr.
enum Console {
  /// Writes `text` to stderr as it is (unbuffered).
  static func error(_ text: String) {
    try? System.writeAll(2, Array(text.utf8), what: "write to stderr")
  }
}
