/// The checks `tipsd lint` runs (the ship-day checklist), each with its severity. The raw value is the name
/// diagnostics carry (`[id-pattern]` in text output, `title=tipsd lint (id-pattern)` for GitHub).
public enum LintCheck: String, Sendable, Hashable, CaseIterable {
  // Errors: the daemon refuses a catalog with any of these.
  /// A catalog or message file cannot be read.
  case io
  /// A file is not valid JSON.
  case json
  /// An object repeats a key (JSON parsers keep one value and silently drop the other).
  case duplicateKey = "duplicate-key"
  /// An element (tip, parameter, event, group, top-level key) does not decode.
  case decode
  /// Two tips, templates, groups, events or parameters share an id, or a template could make a tip's id.
  case duplicateID = "duplicate-id"
  /// A tip or template id does not follow the id pattern (`feature.purpose` by default).
  case idPattern = "id-pattern"
  /// A group, or a rule on another tip's state (tips that follow tips), names a tip the catalog does not have.
  case unknownTip = "unknown-tip"
  /// A rule reads an event missing from the catalog's `events`.
  case undeclaredEvent = "undeclared-event"
  /// A rule can never hold (`count lt 0`, a contradictory `allOf`, a zero window, a threshold above the history).
  case impossibleRule = "impossible-rule"
  /// A template without placeholders, with a stray brace, or that does not instantiate into a valid tip.
  case template
  /// A declared locale lacks a copy string (title, message, action, variant).
  case missingCopy = "missing-copy"
  /// A message file is malformed (not an object, a value that is not a string, a bad file name).
  case messages
  /// Tips that follow tips in a cycle (none of them could ever show; the daemon refuses to register them).
  case followCycle = "follow-cycle"
  /// A schedule that never opens (`until` at or before `from`, or a tip's and its group's that share no instant).
  case schedule
  /// A holdout on a tip with no other variant: every install would be held out and nobody would see the tip.
  case holdout

  // Warnings: logged, not refused.
  /// The catalog declares no `events`, so event ids in rules are not checked.
  case eventsUndeclared = "events-undeclared"
  /// A tip has no rule with `within` (checklist: "at least one rule constrains time").
  case noTimeRule = "no-time-rule"
  /// A tip has no `removal` (checklist: "the tip's removal path is documented").
  case noRemoval = "no-removal"
  /// A tip has no `sync` (checklist: "local-only or synced, and why").
  case noSync = "no-sync"
  /// An action does not invalidate and the tip has no display budget: nothing ever retires it.
  case noInvalidatePath = "no-invalidate-path"
  /// A declared event no rule reads.
  case unusedEvent = "unused-event"
  /// A message file key that names no tip, template, action or variant of the catalog.
  case extraMessageKey = "extra-message-key"
  /// A message file for a locale the catalog does not declare.
  case extraLocale = "extra-locale"
  /// More than two copy variants (seed 000: with more, you wait months for any signal).
  case tooManyVariants = "too-many-variants"
  /// A holdout on a tip without a goal: metrics/get has nothing to compare, so no lift.
  case holdoutWithoutGoal = "holdout-without-goal"

  /// Errors refuse the catalog; warnings are reported and logged.
  public var severity: Diagnostic.Severity {
    switch self {
    case .io, .json, .duplicateKey, .decode, .duplicateID, .idPattern, .unknownTip, .undeclaredEvent, .impossibleRule,
      .template, .missingCopy, .messages, .followCycle, .schedule, .holdout:
      .error
    case .eventsUndeclared, .noTimeRule, .noRemoval, .noSync, .noInvalidatePath, .unusedEvent, .extraMessageKey,
      .extraLocale, .tooManyVariants, .holdoutWithoutGoal:
      .warning
    }
  }
}

/// One finding about a catalog or message file. Messages quote ids, keys and locales, never copy text or other
/// string values from the files (they may hold unreleased copy or a secret pasted by mistake), so a daemon can log
/// them as they are.
public struct Diagnostic: Sendable, Hashable {
  public enum Severity: String, Sendable, Hashable {
    case error, warning
  }

  public var severity: Severity
  /// The check's name (a ``LintCheck`` raw value).
  public var check: String
  /// The file as it was given (`catalog/demo.json`, `catalog/messages/ja.json`).
  public var file: String
  /// The JSON path (`tips[2].rules[0].count`), `$` for the whole document.
  public var path: String
  /// 1-based; nil when the position is unknown (an unreadable file).
  public var line: Int?
  /// 1-based, in Unicode scalars.
  public var column: Int?
  public var message: String

  public init(
    severity: Severity, check: String, file: String, path: String, line: Int? = nil, column: Int? = nil,
    message: String
  ) {
    self.severity = severity
    self.check = check
    self.file = file
    self.path = path
    self.line = line
    self.column = column
    self.message = message
  }

  /// `file:line:col: severity: path: message [check]`, as `tipsd lint` prints it (quotes no copy text, so a daemon
  /// may log it).
  public var textLine: String {
    var position = file
    if let line {
      position += ":\(line)"
      if let column { position += ":\(column)" }
    }
    return "\(position): \(severity.rawValue): \(path): \(message) [\(check)]"
  }

  init(_ check: LintCheck, file: String, path: String, position: SourcePosition?, message: String) {
    self.init(
      severity: check.severity, check: check.rawValue, file: file, path: path, line: position?.line,
      column: position?.column, message: message)
  }
}

/// A catalog or message file that cannot be used, with the file, the JSON path and the problem (never a value from
/// the file).
public struct CatalogError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The file as given.
  public var file: String
  /// The JSON path, when the problem has one.
  public var path: String?
  public var message: String

  public init(file: String, path: String? = nil, message: String) {
    self.file = file
    self.path = path
    self.message = message
  }

  /// `catalog catalog/demo.json: tips[0].title: expected a string, got number`.
  public var description: String {
    if let path { return "catalog \(file): \(path): \(message)" }
    return "catalog \(file): \(message)"
  }
}
