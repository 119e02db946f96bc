import Testing

@testable import TipsCommands

/// The one argument reader: every edge refused the same way, naming the argument.
@Suite struct ArgumentsTests {
  struct Target {
    var socket = "default"
    var timeout = 10.0
    var json = false
    var ids: [String] = []
    var files: [String] = []
  }

  static let options: [Option<Target>] = [
    .value("--socket", as: "PATH", help: "a path") { $0.socket = $1.text },
    .value("--timeout", as: "SECONDS", help: "a number") { target, value throws(UsageError) in
      target.timeout = try value.number()
    },
    .flag("--json", "-j", help: "a switch") { $0.json = true },
    .value("--id", as: "ID", help: "repeatable") { $0.ids.append($1.text) },
  ]

  func parse(_ arguments: [String], positionals: Bool = false) throws(UsageError) -> Target {
    var target = Target()
    if positionals {
      try Arguments.parse(arguments, into: &target, options: Self.options) { target, file throws(UsageError) in
        target.files.append(file)
      }
    } else {
      try Arguments.parse(arguments, into: &target, options: Self.options)
    }
    return target
  }

  @Test func optionsInAnyOrderBothSpellingsAndRepeats() throws {
    let target = try parse(
      ["--json", "--socket", "/s", "--timeout=2.5", "--id", "a", "--id=b", "x"], positionals: true)
    #expect(target.socket == "/s" && target.timeout == 2.5 && target.json && target.ids == ["a", "b"])
    #expect(target.files == ["x"])
    #expect(try parse(["-j"]).json)
    // A value may look like anything but an option: a negative number, a lone dash, text with an equals sign.
    #expect(try parse(["--timeout", "-1"]).timeout == -1)
    #expect(try parse(["--socket", "-"]).socket == "-")
    #expect(try parse(["--socket", "a=b"]).socket == "a=b")
    #expect(try parse(["--socket="]).socket == "")
    // A negative number is an argument, never an option.
    #expect(try parse(["-5", "--json"], positionals: true).files == ["-5"])
  }

  @Test(arguments: [
    (["--socket"], "--socket needs a value"),
    (["--socket", "--json"], "--socket needs a value"),
    (["--socket", "-j"], "--socket needs a value"),
    (["--timeout", "abc"], "--timeout: \"abc\" is not a number"),
    (["--timeout", "inf"], "--timeout: \"inf\" is not a number"),
    (["--tiemout", "1"], "unknown option \"--tiemout\""),
    (["--tiemout=1"], "unknown option \"--tiemout\""),
    (["-x"], "unknown option \"-x\""),
    (["--json=yes"], "--json takes no value"),
    (["stray"], "unexpected argument \"stray\""),
  ])
  func refusals(arguments: [String], message: String) {
    #expect(throws: UsageError.invalid(message)) { try parse(arguments) }
  }

  @Test func helpAnywhereAndTheEndOfOptions() throws {
    #expect(throws: UsageError.helpRequested) { try parse(["--help"]) }
    #expect(throws: UsageError.helpRequested) { try parse(["--json", "-h"]) }
    // After `--` everything is an argument, even what looks like an option.
    let target = try parse(["--json", "--", "--help", "-j"], positionals: true)
    #expect(target.files == ["--help", "-j"])
    // An option's value is taken before it is looked at: `--socket --help` is a missing value, not help.
    #expect(throws: UsageError.invalid("--socket needs a value")) { try parse(["--socket", "--help"]) }
  }

  @Test func valuesAreCheckedTheSameWayEverywhere() {
    let value = OptionValue(flag: "--n", text: "0")
    #expect(throws: UsageError.invalid("--n: \"0\" is not a positive integer")) { try value.positiveInteger() }
    #expect(throws: UsageError.invalid("--n: must be a positive number of seconds")) {
      try value.positiveNumber(of: "seconds")
    }
    #expect(throws: UsageError.invalid("--n: must not be empty")) { try OptionValue(flag: "--n", text: "").nonEmpty() }
    enum Color: String, CaseIterable { case red, green, blue }
    #expect(throws: UsageError.invalid("--n: expected red, green or blue (got \"0\")")) { try value.oneOf(Color.self) }
  }

  @Test func helpListsEveryOptionBesideItsHelp() {
    let text = HelpText.options(
      Self.options + [.section("MORE"), .flag("--a-very-long-option-name", help: "x\ny") { _ in }])
    #expect(text.contains("  --socket PATH            a path\n"))
    #expect(text.contains("  --json, -j               a switch\n"))
    #expect(text.contains("\nMORE\n  --a-very-long-option-name  x\n                           y\n"))
  }
}
