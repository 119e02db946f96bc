import TipsEngine
import TipsJSON

// Rule checks on the catalog's JSON as written (so tips that fail to decode for another reason, and templates
// whose strings hold placeholders, are checked too): rules that can never hold, and events against `events`.

extension Linter {
  /// Calls `body` for each rule object under a `rules` array, with its path and whether it sits under a `not`.
  static func forEachRule(
    in rules: JSONValue?, path: String, negated: Bool = false,
    _ body: (_ path: String, _ rule: JSONObject, _ negated: Bool) -> Void
  ) {
    guard case .array(let list)? = rules else { return }
    for (index, element) in list.enumerated() {
      forEachRule(element, path: "\(path)[\(index)]", negated: negated, body)
    }
  }

  static func forEachRule(
    _ rule: JSONValue, path: String, negated: Bool,
    _ body: (_ path: String, _ rule: JSONObject, _ negated: Bool) -> Void
  ) {
    guard case .object(let object) = rule else { return }
    body(path, object, negated)
    for key in ["allOf", "anyOf"] {
      if let list = object[key] { forEachRule(in: list, path: "\(path).\(key)", negated: negated, body) }
    }
    if let inner = object["not"] { forEachRule(inner, path: "\(path).not", negated: !negated, body) }
  }

  /// The conjunctions a rules list holds: the list itself with nested `allOf` flattened into it, and each `anyOf`
  /// branch as one of its own (recursively). Rules under `not` belong to none.
  static func conjunctions(in rules: JSONValue?, path: String) -> [[(path: String, rule: JSONObject)]] {
    guard case .array(let list)? = rules else { return [] }
    var others: [[(path: String, rule: JSONObject)]] = []
    func collect(_ elements: [(String, JSONValue)], into conjunction: inout [(path: String, rule: JSONObject)]) {
      for (path, value) in elements {
        guard case .object(let object) = value else { continue }
        if case .array(let members)? = object["allOf"] {
          collect(members.enumerated().map { ("\(path).allOf[\($0.offset)]", $0.element) }, into: &conjunction)
        } else if case .array(let branches)? = object["anyOf"] {
          for (index, branch) in branches.enumerated() {
            var own: [(path: String, rule: JSONObject)] = []
            collect([("\(path).anyOf[\(index)]", branch)], into: &own)
            others.append(own)
          }
        } else if object["not"] == nil {
          conjunction.append((path, object))
        }
      }
    }
    var top: [(path: String, rule: JSONObject)] = []
    collect(list.enumerated().map { ("\(path)[\($0.offset)]", $0.element) }, into: &top)
    return [top] + others
  }

  /// The history an event keeps: its declared `maxDonations`, else the engine's default.
  func historyBound(_ event: String, _ decoder: CatalogDecoder) -> Int {
    decoder.catalog.events?.first { $0.id == event }?.maxDonations ?? options.defaultDonationLimit
  }

  /// Every tip and template element as written, with the path of its `rules`.
  static func ruleOwners(_ decoder: CatalogDecoder) -> [(path: String, rules: JSONValue?)] {
    (decoder.rawTips + decoder.rawTemplates).map { ("\($0.path).rules", $0.json["rules"]) }
  }

  /// Reports rules that can never hold; returns the paths reported, whose decoding errors (the engine rejects a
  /// zero window or a negative count too) are then not reported twice.
  mutating func checkRawRules(_ decoder: CatalogDecoder) -> Set<String> {
    var flagged: Set<String> = []
    var found: [(String, String)] = []
    for owner in Self.ruleOwners(decoder) {
      Self.forEachRule(in: owner.rules, path: owner.path) { path, rule, negated in
        guard case .string(let event)? = rule["event"] else { return }
        if case .object(let within)? = rule["within"], within.count == 1, let (unit, amount) = within.members.first,
          let seconds = amount.doubleValue, seconds <= 0
        {
          found.append(
            ("\(path).within.\(unit)", "a window must be longer than zero: with none, no donation ever counts"))
        }
        guard !negated, let constraint = Self.countConstraint(rule) else { return }
        let countPath = "\(path).count.\(constraint.op.rawValue)"
        let n = constraint.value
        if Bounds(constraint).isEmpty {
          found.append((countPath, "count \(constraint.op.symbol) \(n) can never hold: counts are never negative"))
          return
        }
        let bounded = rule["within"] != nil || rule["where"] != nil || rule["largestGroupBy"] != nil
        let bound = Int64(historyBound(event, decoder))
        let over =
          switch constraint.op {
          case .gte, .eq: n > bound
          case .gt: n >= bound
          case .lt, .lte, .ne: false
          }
        if bounded && over {
          found.append(
            (
              countPath,
              "\"\(event)\" keeps only its newest \(bound) donations (its maxDonations, else the engine's default), so a "
                + "count over a window, a where or a largestGroupBy \(constraint.op.symbol) \(n) can never hold (a plain "
                + "count reads the lifetime count and can)"
            ))
        }
      }
      for conjunction in Self.conjunctions(in: owner.rules, path: owner.path) {
        found += Self.contradictions(conjunction)
      }
    }
    for (path, message) in found {
      flagged.insert(path)
      add(.impossibleRule, path, message)
    }
    return flagged
  }

  /// `count: {op: n}` of an event rule, when it is well formed.
  static func countConstraint(_ rule: JSONObject) -> (op: ComparisonOperator, value: Int64)? {
    guard case .object(let count)? = rule["count"], count.count == 1, let (name, value) = count.members.first,
      let op = ComparisonOperator(rawValue: name), let n = value.intValue
    else { return nil }
    return (op, n)
  }

  /// What the counts of one (event, window, where, largestGroupBy) may be, given the constraints seen so far.
  struct Bounds {
    var low: Int64 = 0
    var high: Int64 = .max
    var excluded: Set<Int64> = []

    init() {}

    init(_ constraint: (op: ComparisonOperator, value: Int64)) {
      add(constraint)
    }

    mutating func add(_ constraint: (op: ComparisonOperator, value: Int64)) {
      let n = constraint.value
      switch constraint.op {
      case .gte: low = max(low, n)
      case .gt: low = max(low, n == .max ? n : n + 1)
      case .lte: high = min(high, n)
      case .lt: high = min(high, n == .min ? n : n - 1)
      case .eq:
        low = max(low, n)
        high = min(high, n)
      case .ne: excluded.insert(n)
      }
    }

    /// Whether no count satisfies every constraint.
    var isEmpty: Bool {
      guard low <= high else { return true }
      let inside = excluded.filter { $0 >= low && $0 <= high }.count
      return high - low < Int64(inside)
    }
  }

  /// Contradictions in one conjunction: constraints on the same counted thing that no count meets together.
  static func contradictions(_ conjunction: [(path: String, rule: JSONObject)]) -> [(String, String)] {
    struct Key: Hashable {
      var event: String
      var within: Double?
      var matching: JSONValue?
      var groupBy: JSONValue?
    }
    var seen: [Key: [(path: String, constraint: (op: ComparisonOperator, value: Int64))]] = [:]
    var reported: Set<Key> = []
    var found: [(String, String)] = []
    for (path, rule) in conjunction {
      guard case .string(let event)? = rule["event"], let constraint = countConstraint(rule),
        !Bounds(constraint).isEmpty
      else { continue }
      var within: Double?
      if case .object(let window)? = rule["within"], window.count == 1, let (unit, amount) = window.members.first,
        let length = amount.doubleValue
      {
        within = length * (["minutes": 60, "hours": 3_600, "days": 86_400, "weeks": 604_800][unit] ?? 1)
      }
      let key = Key(event: event, within: within, matching: rule["where"], groupBy: rule["largestGroupBy"])
      guard !reported.contains(key) else { continue }
      let earlier = seen[key] ?? []
      var bounds = Bounds(constraint)
      for other in earlier { bounds.add(other.constraint) }
      if bounds.isEmpty {
        reported.insert(key)
        let describe = "\(constraint.op.symbol) \(constraint.value)"
        if let partner = earlier.first(where: {
          var pair = Bounds(constraint); pair.add($0.constraint); return pair.isEmpty
        }) {
          found.append(
            (
              "\(path).count",
              "contradicts \(partner.path): no count of \"\(event)\" is both \(partner.constraint.op.symbol) "
                + "\(partner.constraint.value) and \(describe), so the rules can never hold together"
            ))
        } else {
          let paths = earlier.map { $0.path }.joined(separator: ", ")
          found.append(
            ("\(path).count", "contradicts \(paths): no count of \"\(event)\" meets all of them and \(describe)"))
        }
        continue
      }
      seen[key, default: []].append((path, constraint))
    }
    return found
  }

  // MARK: - Events

  /// Undeclared events (with a suggestion for a near miss), events used by no rule, and — for a catalog without an
  /// `events` list — one warning that nothing is checked.
  mutating func checkEvents(_ decoder: CatalogDecoder) {
    var usages: [(path: String, event: String, pattern: [TemplateText.Piece]?)] = []
    for owner in Self.ruleOwners(decoder) {
      Self.forEachRule(in: owner.rules, path: owner.path) { path, rule, _ in
        guard case .string(let event)? = rule["event"], !event.isEmpty else { return }
        let isTemplate = path.hasPrefix("templates[")
        var pattern: [TemplateText.Piece]?
        if isTemplate, let pieces = TemplateText.parse(event), pieces.contains(where: \.isPlaceholder) {
          pattern = pieces
        }
        usages.append(("\(path).event", event, pattern))
      }
    }
    // A tip's goal (what metrics/get measures it by) is an event too.
    for (index, tip) in decoder.catalog.tips.enumerated() {
      guard let goal = tip.goal, decoder.tipPaths.indices.contains(index) else { continue }
      usages.append(("\(decoder.tipPaths[index]).goal.event", goal.eventID, nil))
    }
    guard let declared = decoder.catalog.events else {
      if !usages.isEmpty {
        let count = Set(usages.map { $0.event }).count
        add(
          .eventsUndeclared, "$",
          "the catalog declares no \"events\", so the \(count) event id\(count == 1 ? "" : "s") its rules read "
            + "\(count == 1 ? "is" : "are") not checked for typos; list them in \"events\"")
      }
      return
    }
    let ids = declared.map { $0.id }
    var used: Set<String> = []
    for usage in usages {
      if let pattern = usage.pattern {
        let matching = ids.filter { TemplateText.matches(pattern[...], Substring($0)) }
        used.formUnion(matching)
        if matching.isEmpty {
          add(.undeclaredEvent, usage.path, "no declared event matches the event pattern \"\(usage.event)\"")
        }
        continue
      }
      used.insert(usage.event)
      guard !ids.contains(usage.event) else { continue }
      var message = "event \"\(usage.event)\" is not declared in \"events\""
      if let suggestion = Self.nearest(usage.event, among: ids) { message += " (did you mean \"\(suggestion)\"?)" }
      add(.undeclaredEvent, usage.path, message)
    }
    for (index, event) in declared.enumerated() where !used.contains(event.id) {
      let path = decoder.eventPaths.indices.contains(index) ? "\(decoder.eventPaths[index]).id" : "events"
      add(.unusedEvent, path, "event \"\(event.id)\" is declared but no rule, goal or template reads it")
    }
  }

  /// The candidate closest to `word` within an edit distance of 2 (Damerau–Levenshtein, adjacent transpositions
  /// count one), the first in order on a tie.
  static func nearest(_ word: String, among candidates: [String]) -> String? {
    var best: (candidate: String, distance: Int)?
    for candidate in candidates {
      let distance = editDistance(Array(word.unicodeScalars), Array(candidate.unicodeScalars))
      if distance <= 2, distance < (best?.distance ?? .max) { best = (candidate, distance) }
    }
    return best?.candidate
  }

  /// Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions.
  static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { table[i][0] = i }
    for j in 0...b.count { table[0][j] = j }
    for i in 1...a.count {
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
        }
      }
    }
    return table[a.count][b.count]
  }
}

/// "Did you mean": the lint checks' near-miss finder, for the daemon's `--strict-events` errors too.
public enum DidYouMean {
  /// The candidate closest to `word` within an edit distance of 2 (adjacent transpositions count one); nil if none.
  public static func nearest(_ word: String, among candidates: [String]) -> String? {
    Linter.nearest(word, among: candidates)
  }
}
