public import TipsEngine

/// What changed between two catalogs (`catalogs/diff`, `catalogs/publish`'s dry run, `tipsd catalog diff`): tips
/// added and removed, and per tip kept, whether its rules, its copy (title, message, image, actions, localizations)
/// or its variants changed, or something else (options, presentation, schedule, goal, metadata…). Groups, templates
/// and parameters are compared by id.
public struct CatalogDiff: Sendable, Equatable {
  /// One tip present in both catalogs with a different definition.
  public struct TipChange: Sendable, Equatable {
    public var id: String
    public var rules: Bool
    public var copy: Bool
    public var variants: Bool
    /// Anything beyond rules, copy and variants.
    public var other: Bool

    public init(id: String, rules: Bool, copy: Bool, variants: Bool, other: Bool) {
      self.id = id
      self.rules = rules
      self.copy = copy
      self.variants = variants
      self.other = other
    }
  }

  public var added: [String] = []
  public var removed: [String] = []
  public var changed: [TipChange] = []
  /// Groups, templates and parameters added, removed or changed, as `kind id` (`group compass`).
  public var others: [String] = []
  /// Whether the display frequency changed.
  public var displayFrequency = false

  public var isEmpty: Bool {
    added.isEmpty && removed.isEmpty && changed.isEmpty && others.isEmpty && !displayFrequency
  }

  public init(from old: Catalog, to new: Catalog) {
    var oldTips: [String: TipDefinition] = [:]
    for tip in old.tips { oldTips[tip.id] = tip }
    let newIDs = Set(new.tips.map(\.id))
    removed = old.tips.map(\.id).filter { !newIDs.contains($0) }.sorted()
    for tip in new.tips {
      guard let before = oldTips[tip.id] else {
        added.append(tip.id)
        continue
      }
      guard before != tip else { continue }
      let rules = before.rules != tip.rules
      let copy =
        before.title != tip.title || before.message != tip.message || before.image != tip.image
        || before.actions != tip.actions || before.localizations != tip.localizations
      let variants = before.variants != tip.variants
      var rest = before
      rest.rules = tip.rules
      rest.title = tip.title
      rest.message = tip.message
      rest.image = tip.image
      rest.actions = tip.actions
      rest.localizations = tip.localizations
      rest.variants = tip.variants
      changed.append(TipChange(id: tip.id, rules: rules, copy: copy, variants: variants, other: rest != tip))
    }
    added.sort()
    changed.sort { $0.id < $1.id }
    func compare<T: Equatable>(_ kind: String, _ old: [T], _ new: [T], id: (T) -> String) {
      var before: [String: T] = [:]
      for item in old { before[id(item)] = item }
      var after: [String: T] = [:]
      for item in new { after[id(item)] = item }
      for key in Set(before.keys).union(after.keys).sorted() where before[key] != after[key] {
        others.append("\(kind) \(key)")
      }
    }
    compare("group", old.groups, new.groups) { $0.id }
    compare("template", old.templates, new.templates) { $0.id }
    compare("parameter", old.parameters, new.parameters) { $0.id }
    displayFrequency = old.displayFrequency != new.displayFrequency
  }
}
