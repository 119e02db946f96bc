/// Why a command line was refused (exit status 2, the command's usage on stderr), or that `--help` asked for the
/// command's help (exit status 0, the help on stdout).
public enum UsageError: Error, Equatable, CustomStringConvertible {
  /// What is wrong, naming the argument: `--socket needs a value`, `unknown option "--sokcet"`.
  case invalid(String)
  /// `--help` or `-h`.
  case helpRequested

  public var description: String {
    switch self {
    case .invalid(let message): message
    case .helpRequested: "--help"
    }
  }
}

/// The value given to an option, with the option's name for errors; every option reads its value through these, so
/// a malformed value is refused the same way everywhere.
public struct OptionValue {
  /// The option as written (`--timeout`).
  public let flag: String
  /// The value as written.
  public let text: String

  /// `--flag: problem`.
  public func invalid(_ problem: String) -> UsageError { .invalid("\(flag): \(problem)") }

  /// A finite number.
  public func number() throws(UsageError) -> Double {
    guard let number = Double(text), number.isFinite else { throw invalid("\"\(text)\" is not a number") }
    return number
  }

  /// A number greater than 0 (`what` names its unit in the error: "seconds").
  public func positiveNumber(of what: String) throws(UsageError) -> Double {
    let number = try number()
    guard number > 0 else { throw invalid("must be a positive number of \(what)") }
    return number
  }

  /// An integer greater than 0.
  public func positiveInteger() throws(UsageError) -> Int {
    guard let integer = Int(text), integer > 0 else { throw invalid("\"\(text)\" is not a positive integer") }
    return integer
  }

  /// Any text but the empty string.
  public func nonEmpty() throws(UsageError) -> String {
    guard !text.isEmpty else { throw invalid("must not be empty") }
    return text
  }

  /// One of `cases` by its raw value.
  public func oneOf<E: RawRepresentable & CaseIterable>(_ type: E.Type) throws(UsageError) -> E
  where E.RawValue == String {
    guard let value = E(rawValue: text) else {
      let names = E.allCases.map(\.rawValue)
      let expected = names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
      throw invalid("expected \(expected) (got \"\(text)\")")
    }
    return value
  }
}

/// One option a command accepts: its names, its value's name (none for a switch), its help, and what it sets.
/// Adding an option to a command is one of these in the command's `options` (and the field it sets).
public struct Option<Target>: Sendable {
  /// `["--quiet", "-q"]`; empty for a heading in the help (``section(_:)``).
  public let names: [String]
  /// `PATH`, `SECONDS`; nil for a switch.
  public let valueName: String?
  /// The help text; `\n` starts another line.
  public let help: String
  let apply: @Sendable (inout Target, OptionValue) throws(UsageError) -> Void

  /// A switch: `--json`.
  public static func flag(_ names: String..., help: String, _ set: @escaping @Sendable (inout Target) -> Void) -> Option
  {
    Option(names: names, valueName: nil, help: help) { target, _ throws(UsageError) in set(&target) }
  }

  /// An option with a value: `--socket PATH` (or `--socket=PATH`).
  public static func value(
    _ names: String..., as valueName: String, help: String,
    _ set: @escaping @Sendable (inout Target, OptionValue) throws(UsageError) -> Void
  ) -> Option {
    Option(names: names, valueName: valueName, help: help, apply: set)
  }

  /// A heading in the help, before the options that follow it.
  public static func section(_ title: String) -> Option {
    Option(names: [], valueName: nil, help: title) { _, _ throws(UsageError) in }
  }

  /// The same option on a part of a larger target (shared options: ``DaemonOptions``).
  public func lifted<Whole>(_ path: WritableKeyPath<Whole, Target>) -> Option<Whole> {
    let apply = self.apply
    // A key path is immutable; the ones given here are literals that capture nothing.
    nonisolated(unsafe) let path = path
    return Option<Whole>(names: names, valueName: valueName, help: help) { whole, value throws(UsageError) in
      try apply(&whole[keyPath: path], value)
    }
  }

  /// `--socket PATH`, `-q, --quiet`.
  var label: String {
    let name = names.sorted { $0.count > $1.count }.joined(separator: ", ")
    return valueName.map { "\(name) \($0)" } ?? name
  }
}

/// The one reader of command-line arguments. Every command parses through it, so every command refuses the same
/// things the same way: an unknown option, an option without its value (`--socket` at the end, or followed by
/// another option), a switch given a value (`--json=yes`), a stray argument — each a ``UsageError`` naming it — and
/// every command answers `--help`. `--` ends the options; `--name=value` is `--name value`.
public enum Arguments {
  /// Reads `arguments` into `target`: options through `options`, the rest through `positional` (by default any
  /// positional argument is refused).
  public static func parse<Target>(
    _ arguments: [String], into target: inout Target, options: [Option<Target>],
    positional: (inout Target, String) throws(UsageError) -> Void = { _, argument throws(UsageError) in
      throw .invalid("unexpected argument \"\(argument)\"")
    }
  ) throws(UsageError) {
    var byName: [String: Option<Target>] = [:]
    for option in options {
      for name in option.names { byName[name] = option }
    }
    var remaining = arguments[...]
    var optionsEnded = false
    while let argument = remaining.popFirst() {
      guard !optionsEnded, isOption(argument), !isNegativeNumber(argument) else {
        try positional(&target, argument)
        continue
      }
      if argument == "--" {
        optionsEnded = true
        continue
      }
      if argument == "--help" || argument == "-h" { throw .helpRequested }
      var name = argument
      var inline: String?
      if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
        name = String(argument[..<equals])
        inline = String(argument[argument.index(after: equals)...])
      }
      guard let option = byName[name] else { throw .invalid("unknown option \"\(name)\"") }
      guard option.valueName != nil else {
        if inline != nil { throw .invalid("\(name) takes no value") }
        try option.apply(&target, OptionValue(flag: name, text: ""))
        continue
      }
      if inline == nil, let next = remaining.first, !isOption(next) || isNegativeNumber(next) {
        inline = remaining.removeFirst()
      }
      guard let text = inline else { throw .invalid("\(name) needs a value") }
      try option.apply(&target, OptionValue(flag: name, text: text))
    }
  }

  /// Whether an argument is an option (`--name`, `-x`, `--`) rather than a value (`-` alone is a value: stdin).
  static func isOption(_ argument: String) -> Bool {
    argument.hasPrefix("-") && argument.count > 1
  }

  /// `-1`, `-0.5`: a value, not an option.
  static func isNegativeNumber(_ argument: String) -> Bool {
    argument.hasPrefix("-") && Double(argument) != nil
  }
}
