import TipsJSON

/// A tip's rules compiled into a flat, trivially copyable program, so evaluation does no dictionary lookups and no
/// reference counting.
///
/// Each rule is a subtree laid out in pre-order: a leaf is one op; `all`/`any`/`not` are one op followed by their
/// children, with `end` the index one past the subtree. The top level is a sequence of subtrees (AND). Event logs
/// and parameter slots are referenced unretained: the engine never drops either once created, so they outlive every
/// program.
struct RuleProgram {
  enum Kind: UInt8 {
    /// A plain count: O(1).
    case count
    /// A count inside a window: O(log n).
    case window
    /// A count with `where` or `largestGroupBy` (and maybe a window): a scan, memoised per event and instant.
    case filtered
    case parameter
    /// A rule on another tip's record (`extra` indexes `tipRules`).
    case tip
    case all
    case any
    case not
  }

  struct Op {
    var kind: Kind
    var op: ComparisonOperator = .eq
    /// The count to compare with (leaves), or one past the subtree (combinators).
    var value: Int = 0
    var within: Double = 0
    var log: Unmanaged<EventLog>?
    var parameter: Unmanaged<ParameterSlot>?
    /// Index into `filters` (filtered counts) or `constants` (parameter rules).
    var extra: Int = 0
  }

  var ops: [Op] = []
  var filters: [FilterKey] = []
  var constants: [JSONValue] = []
  var tipRules: [TipRule] = []

  /// Whether every top-level rule holds. `records` finds another registered tip's record (tips that follow tips).
  func holds(now: Timestamp, records: (String) -> TipRecord?) -> Bool {
    ops.withUnsafeBufferPointer { ops in
      var index = 0
      while index < ops.count {
        if !evaluate(ops, index, now: now, records) { return false }
        index = Self.end(ops, index)
      }
      return true
    }
  }

  private static func end(_ ops: UnsafeBufferPointer<Op>, _ index: Int) -> Int {
    switch ops[index].kind {
    case .all, .any, .not: ops[index].value
    default: index + 1
    }
  }

  private func evaluate(
    _ ops: UnsafeBufferPointer<Op>, _ index: Int, now: Timestamp, _ records: (String) -> TipRecord?
  ) -> Bool {
    let op = ops[index]
    switch op.kind {
    case .count:
      return op.op.compare(op.log!._withUnsafeGuaranteedRef { $0.plainCount(now: now) }, op.value)
    case .window:
      let count = op.log!._withUnsafeGuaranteedRef { $0.count - $0.windowStart(within: op.within, now: now) }
      return op.op.compare(count, op.value)
    case .filtered:
      let key = filters[op.extra]
      return op.op.compare(op.log!._withUnsafeGuaranteedRef { $0.measure(key, now: now) }, op.value)
    case .parameter:
      return op.op.compare(op.parameter!._withUnsafeGuaranteedRef { $0.value }, constants[op.extra])
    case .tip:
      let rule = tipRules[op.extra]
      return rule.holds(records(rule.tipID), now: now)
    case .all, .any:
      let wantAll = op.kind == .all
      var child = index + 1
      while child < op.value {
        let holds = evaluate(ops, child, now: now, records)
        if holds != wantAll { return holds }
        child = Self.end(ops, child)
      }
      return wantAll
    case .not:
      return !evaluate(ops, index + 1, now: now, records)
    }
  }
}

/// What a tip's rules read, collected while compiling (each entry once).
struct Dependencies {
  var events: [EventLog] = []
  var parameters: [ParameterSlot] = []
  var windows: [WindowKey] = []
  /// Tips whose records the rules read (tips that follow tips), and the `for` durations of each.
  var tips: [String] = []
  var follows: [FollowKey] = []

  mutating func add(_ log: EventLog) {
    if !events.contains(where: { $0 === log }) { events.append(log) }
  }

  mutating func add(_ parameter: ParameterSlot) {
    if !parameters.contains(where: { $0 === parameter }) { parameters.append(parameter) }
  }

  mutating func add(_ window: WindowKey) {
    if !windows.contains(window) { windows.append(window) }
  }

  mutating func add(tip: String) {
    if !tips.contains(tip) { tips.append(tip) }
  }

  mutating func add(_ follow: FollowKey) {
    if !follows.contains(follow) { follows.append(follow) }
  }
}

/// A rule "tip T invalidated for at least D": it becomes true on its own at T's invalidation + D. The engine watches
/// each (dependent tip, T, D) and caches whether D had elapsed when it last looked.
struct FollowKey: Hashable {
  var slot: Int
  var tip: String
  var duration: Double
}

/// A parameter the engine knows of: defined, read by a rule, or restored from the store before being defined.
final class ParameterSlot {
  let id: String
  var definition: ParameterDefinition?
  /// The value set (or restored); nil means the default.
  var stored: JSONValue?
  /// Registered tips (slot numbers, ascending) whose rules read this parameter.
  var dependents: [Int] = []

  init(id: String) {
    self.id = id
  }

  /// The current value: null while undefined, else the stored value or the default.
  var value: JSONValue {
    guard let definition else { return .null }
    return stored ?? definition.defaultValue
  }

  /// Whether the stored value is durable (the parameter is not declared transient).
  var isPersisted: Bool { !(definition?.transient ?? false) }
}

extension ComparisonOperator {
  /// Compares two counts.
  func compare(_ lhs: Int, _ rhs: Int) -> Bool {
    switch self {
    case .eq: lhs == rhs
    case .ne: lhs != rhs
    case .lt: lhs < rhs
    case .lte: lhs <= rhs
    case .gt: lhs > rhs
    case .gte: lhs >= rhs
    }
  }

  /// Compares a parameter value with a rule constant: `eq`/`ne` by JSON equality (numbers by value); orderings
  /// numerically for two numbers, lexicographically for two strings, and false for anything else.
  func compare(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
    switch self {
    case .eq: return lhs == rhs
    case .ne: return lhs != rhs
    case .lt, .lte, .gt, .gte:
      guard let order = Self.order(lhs, rhs) else { return false }
      switch self {
      case .lt: return order < 0
      case .lte: return order <= 0
      case .gt: return order > 0
      default: return order >= 0
      }
    }
  }

  /// -1, 0 or 1 for comparable values (two numbers, two strings), nil otherwise.
  private static func order(_ lhs: JSONValue, _ rhs: JSONValue) -> Int? {
    switch (lhs, rhs) {
    case (.int(let a), .int(let b)):
      return a < b ? -1 : (a == b ? 0 : 1)
    case (.string(let a), .string(let b)):
      return a < b ? -1 : (a == b ? 0 : 1)
    default:
      guard lhs.isNumber, rhs.isNumber, let a = lhs.doubleValue, let b = rhs.doubleValue else { return nil }
      return a < b ? -1 : (a == b ? 0 : 1)
    }
  }
}

/// A registered tip and everything derived from it.
///
/// The hot fields are `@exclusivity(unchecked)`: the engine has a single owner thread and never passes them inout
/// across calls that touch them again, so the dynamic exclusivity checks (a large share of a donation's cost) buy
/// nothing here.
final class TipSlot {
  /// Position in registration order.
  let index: Int
  /// The definition, held in a box that engines given the same ``DefinitionShelf`` share (a hosted node's accounts
  /// hold one copy of each catalog tip, not one each: a definition inline was ~500 bytes a tip and account).
  private var box: DefinitionBox
  var definition: TipDefinition {
    get { box.value }
    set { setDefinition(DefinitionBox(newValue)) }
  }

  /// Replaces the definition with a (possibly shared) box.
  func setDefinition(_ box: DefinitionBox) {
    self.box = box
    ignoresFrequency = box.value.options.ignoresDisplayFrequency
  }
  @exclusivity(unchecked) var rules = RuleProgram()
  /// Ids of the groups that list this tip.
  @exclusivity(unchecked) var groups: [String] = [] {
    didSet { inGroups = !groups.isEmpty }
  }
  /// `!groups.isEmpty`, cached for the hot path.
  @exclusivity(unchecked) var inGroups = false
  @exclusivity(unchecked) var record: TipRecord
  /// The A/B variant this install sees (nil for a tip without variants); its record is kept under ``recordKey``.
  var variant: String?
  /// Where the record lives in the store: the tip id, or `tipId\u{1F}variant` for a variant's own record.
  var recordKey: String
  /// Cached value of the rules (all hold).
  @exclusivity(unchecked) var rulesHold = false
  /// Status after invalidation, frequency and testing overrides.
  @exclusivity(unchecked) var status: TipStatus = .pending
  /// Available and not hidden by an override: what groups look at.
  @exclusivity(unchecked) var eligible = false
  @exclusivity(unchecked) var shouldDisplay = false
  /// Member of the cooldown-sensitive set (see ``Engine``).
  @exclusivity(unchecked) var sensitive = false
  /// The last reported state; nil before the first report.
  @exclusivity(unchecked) var reported: (status: TipStatus, shouldDisplay: Bool)?
  /// Deduplication mark of the current settle pass.
  @exclusivity(unchecked) var mark = 0

  /// Copied from the definition's options (read on every evaluation).
  @exclusivity(unchecked) var ignoresFrequency: Bool
  /// The definition's schedule (read from the shared box: a copy in every slot cost 32 bytes a tip and account).
  var schedule: TipSchedule? { box.value.schedule }
  /// Whether the tip's schedule (if any) was open when its status was last computed.
  @exclusivity(unchecked) var scheduleOpen = true
  /// The variant shown is a holdout: the tip never displays for this install.
  @exclusivity(unchecked) var holdout = false
  /// A holdout whose tip would be displayable now (its counterfactual exposure is open, see ``Engine``).
  @exclusivity(unchecked) var exposed = false
  /// The definition's id.
  var id: String { box.value.id }

  init(index: Int, definition box: DefinitionBox, record: TipRecord) {
    let definition = box.value
    self.index = index
    self.box = box
    self.record = record
    self.recordKey = definition.id
    self.ignoresFrequency = definition.options.ignoresDisplayFrequency
  }

  var state: TipState { TipState(id: id, status: status, shouldDisplay: shouldDisplay, variant: variant) }
}

/// A registered group.
final class GroupState {
  var definition: TipGroupDefinition
  /// Registration position (kept when the group is replaced).
  let position: Int
  var current: String?
  /// Whether its schedule (if any) was open when last looked at.
  var open = true

  init(definition: TipGroupDefinition, position: Int) {
    self.definition = definition
    self.position = position
  }
}

/// Which testing override applies to a tip (trivially copyable: it is computed for every tip evaluated).
enum OverrideEffect: UInt8, Equatable {
  case none, show, hide, showAll, hideAll

  var shows: Bool { self == .show || self == .showAll }
  var hides: Bool { self == .hide || self == .hideAll }

  /// The override's name (`show`, `hide`, `showAll`, `hideAll`).
  var name: String {
    switch self {
    case .none: "none"
    case .show: "show"
    case .hide: "hide"
    case .showAll: "showAll"
    case .hideAll: "hideAll"
    }
  }
}
