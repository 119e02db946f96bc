import TipsEngine
import TipsJSON

/// The catalog the daemon serves (`--catalog`): loaded at start, reloaded on SIGHUP, `catalog/reload` and `--watch`.
///
/// A reload applies the difference between the catalog in force and the new one, in one event-loop turn (so one
/// commit): tips it no longer lists are unregistered (subscribers see them stop displaying), new and changed tips
/// are registered (a changed tip keeps its state and its rules are re-evaluated), unchanged tips are not touched.
/// Groups, parameters and the display frequency follow the same rule. A catalog that does not load — bad JSON, a
/// bad definition, a lint error — changes nothing: the catalog in force keeps serving and the errors are reported.
/// Only what a catalog registered is ever removed by a reload; tips clients registered themselves are theirs.
final class CatalogService {
  let path: String
  /// The catalog in force (what the last successful load or reload registered).
  private(set) var current: Catalog

  init(path: String, catalog: Catalog) {
    self.path = path
    self.current = catalog
  }

  /// What a reload did.
  struct Summary: Equatable {
    var added: [String] = []
    var removed: [String] = []
    var changed: [String] = []
    var unchanged: [String] = []
    var groupsChanged: [String] = []
    var groupsRemoved: [String] = []
  }

  /// Applies `next` in place of the catalog in force; returns the engine's mutation (changes to notify, writes to
  /// commit) and what changed. The new catalog was validated when it was decoded, so the engine calls cannot fail
  /// on its content; an engine error here is a bug, reported as such after the calls made so far.
  func apply(_ next: Catalog, to engine: Engine) throws(EngineError) -> (Mutation, Summary) {
    var mutation = Mutation()
    func add(_ step: Mutation) {
      mutation.changes += step.changes
      mutation.writes += step.writes
    }
    var summary = Summary()
    let old = current

    // Parameters first: rules of new and changed tips may read them.
    var oldParameters: [String: ParameterDefinition] = [:]
    for parameter in old.parameters { oldParameters[parameter.id] = parameter }
    let parameters = next.parameters.filter { oldParameters[$0.id] != $0 }
    if !parameters.isEmpty { add(try engine.defineParameters(parameters)) }

    // Groups that go away or change membership are unregistered before the tips they hold.
    var nextGroups: [String: TipGroupDefinition] = [:]
    for group in next.groups { nextGroups[group.id] = group }
    for group in old.groups where nextGroups[group.id] == nil {
      add(try engine.unregisterGroup(group.id))
      summary.groupsRemoved.append(group.id)
    }

    var nextTips: [String: TipDefinition] = [:]
    for tip in next.tips { nextTips[tip.id] = tip }
    var oldTips: [String: TipDefinition] = [:]
    for tip in old.tips { oldTips[tip.id] = tip }
    for tip in old.tips where nextTips[tip.id] == nil { summary.removed.append(tip.id) }
    if !summary.removed.isEmpty { add(engine.unregister(summary.removed)) }

    var register: [TipDefinition] = []
    for tip in next.tips {
      if let before = oldTips[tip.id] {
        if before == tip && engine.definition(of: tip.id) == tip {
          summary.unchanged.append(tip.id)
          continue
        }
        summary.changed.append(tip.id)
      } else {
        summary.added.append(tip.id)
      }
      register.append(tip)
    }
    if !register.isEmpty { add(engine.register(register)) }

    var oldGroups: [String: TipGroupDefinition] = [:]
    for group in old.groups { oldGroups[group.id] = group }
    for group in next.groups where oldGroups[group.id] != group || engine.group(group.id) == nil {
      add(try engine.registerGroup(group))
      summary.groupsChanged.append(group.id)
    }

    if let frequency = next.displayFrequency, frequency != engine.displayFrequency {
      add(engine.configure(displayFrequency: frequency))
    }
    current = next
    return (mutation, summary)
  }
}

extension CatalogService.Summary {
  /// Log metadata: counts, and the ids when few.
  var logMetadata: [(String, String)] {
    func list(_ ids: [String]) -> String {
      ids.isEmpty ? "0" : ids.count <= 8 ? ids.joined(separator: ",") : String(ids.count)
    }
    return [
      ("added", list(added)), ("removed", list(removed)), ("changed", list(changed)),
      ("unchanged", String(unchanged.count)),
    ]
  }
}
