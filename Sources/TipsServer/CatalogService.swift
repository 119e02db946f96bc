import TipsCatalog
import TipsEngine
import TipsJSON
import TipsProtocol
import TipsSystem

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
  /// `--messages DIR`: translators' files merged into the catalog's copy.
  let messagesDirectory: String?
  /// The catalog in force (what the last successful load or reload registered).
  private(set) var current = Catalog()
  /// The ids of the events the catalog declares; nil when it declares none (then nothing is "undeclared").
  private(set) var declaredEvents: Set<String>?

  init(path: String, messagesDirectory: String?) {
    self.path = path
    self.messagesDirectory = messagesDirectory
  }

  /// Reads and checks the catalog and its message files (the checks of `tipsd lint`); the report's catalog is nil
  /// when there is any error.
  func load() -> CatalogReport {
    CatalogLoader.load(path: path, messagesDirectory: messagesDirectory)
  }

  /// The version of the catalog in force: 16 hex digits of FNV-1a (64-bit) over its file's bytes when it was adopted
  /// (`/healthz` reports it, so a fleet's nodes can be seen to serve the same catalog).
  private(set) var version: String?

  /// Makes `catalog` the one in force (after it was registered); `digest`: its version when it did not come from
  /// the file (a published catalog, #48).
  func adopt(_ catalog: Catalog, digest: String? = nil) {
    current = catalog
    if let digest {
      version = digest
    } else if let bytes = try? System.readFile(path) {
      var hash: UInt64 = 0xcbf2_9ce4_8422_2325
      for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
      let hex = String(hash, radix: 16)
      version = String(repeating: "0", count: 16 - hex.count) + hex
    }
    declaredEvents = catalog.events.map { Set($0.map { $0.id }) }
  }

  /// Tips made from templates (`tips/instantiate`), by id: the template and the values, so that a reload can make
  /// them again from a changed template (or unregister them when it is gone).
  private(set) var instances: [String: (template: String, values: JSONObject)] = [:]

  /// `tips/instantiate`: the tip `values` make from template `id` (the caller registers it).
  func instantiate(_ id: String, values: JSONObject) throws(ResponseError) -> TipDefinition {
    guard let template = current.template(id) else {
      let known = current.templates.map { $0.id }
      throw .invalidParams(
        "tips/instantiate: params.template: the catalog has no template \"\(id)\" (it has "
          + (known.isEmpty ? "none" : known.joined(separator: ", ")) + ")")
    }
    let tip: TipDefinition
    do {
      // Content ids (trail 42) need not follow the catalog's feature.purpose convention.
      tip = try template.instantiate(values: values, idPattern: .any)
    } catch {
      throw ResponseError(error, method: InstantiateRequest.method)
    }
    instances[tip.id] = (id, values)
    return tip
  }

  /// The declared event nearest to `id` (a typo's "did you mean").
  func nearestDeclaredEvent(to id: String) -> String? {
    guard let declared = declaredEvents else { return nil }
    return DidYouMean.nearest(id, among: declared.sorted())
  }

  /// What a reload did.
  struct Summary: Equatable {
    var added: [String] = []
    var removed: [String] = []
    var changed: [String] = []
    var unchanged: [String] = []
  }

  /// Applies `next` in place of the catalog in force; returns the engine's mutation (changes to notify, writes to
  /// commit) and what changed. The new catalog was validated when it was decoded, so the engine calls cannot fail
  /// on its content; an engine error here is a bug, reported as such after the calls made so far.
  func apply(_ next: Catalog, to engine: Engine, digest: String? = nil) throws(EngineError) -> (Mutation, Summary) {
    let applied = try change(engine, from: current, to: next)
    adopt(next, digest: digest)
    return applied
  }

  /// Brings `engine` from catalog `old` to `next` (the catalog in force is left as it is: hosted mode applies one
  /// reload to every resident account's engine, then adopts it once).
  func change(_ engine: Engine, from old: Catalog, to next: Catalog) throws(EngineError) -> (Mutation, Summary) {
    var mutation = Mutation()
    func add(_ step: Mutation) {
      mutation.changes += step.changes
      mutation.writes += step.writes
    }
    var summary = Summary()

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
    }

    var oldEvents: [String: EventDeclaration] = [:]
    for event in old.events ?? [] { oldEvents[event.id] = event }
    for event in next.events ?? [] {
      if let limit = event.maxDonations { add(try engine.setDonationLimit(event.id, limit)) }
      // An age the catalog no longer declares is removed (what it trimmed stays gone).
      if event.maxAge != nil || oldEvents[event.id]?.maxAge != nil {
        add(try engine.setDonationMaxAge(event.id, event.maxAge))
      }
      oldEvents[event.id] = nil
    }
    for event in oldEvents.values where event.maxAge != nil { add(try engine.setDonationMaxAge(event.id, nil)) }

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
    // Tips made from templates follow their template: made again when it changed, unregistered when it is gone.
    var gone: [String] = []
    for (tipID, instance) in instances.sorted(by: { $0.key < $1.key }) {
      guard engine.definition(of: tipID) != nil else {
        instances[tipID] = nil
        continue
      }
      guard let template = next.template(instance.template),
        let tip = try? template.instantiate(values: instance.values, idPattern: .any), tip.id == tipID
      else {
        gone.append(tipID)
        instances[tipID] = nil
        continue
      }
      if engine.definition(of: tipID) != tip {
        register.append(tip)
        summary.changed.append(tipID)
      }
    }
    if !gone.isEmpty {
      add(engine.unregister(gone))
      summary.removed += gone
    }
    if !register.isEmpty { add(try engine.register(register)) }

    var oldGroups: [String: TipGroupDefinition] = [:]
    for group in old.groups { oldGroups[group.id] = group }
    for group in next.groups where oldGroups[group.id] != group || engine.group(group.id) == nil {
      add(try engine.registerGroup(group))
    }

    if let frequency = next.displayFrequency, frequency != engine.displayFrequency {
      add(engine.configure(displayFrequency: frequency))
    }
    return (mutation, summary)
  }
}

extension Diagnostic {
  /// The `Diagnostic` object of `catalog/reload`.
  var json: JSONValue {
    var object: JSONObject = [
      "severity": .string(severity.rawValue), "message": .string(message), "check": .string(check),
      "file": .string(file), "path": .string(path),
    ]
    if let line { object["line"] = .int(Int64(line)) }
    if let column { object["column"] = .int(Int64(column)) }
    return .object(object)
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
