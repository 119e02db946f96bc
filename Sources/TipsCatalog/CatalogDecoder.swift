import TipsEngine
import TipsJSON

/// One problem found while decoding a catalog.
struct CatalogIssue: Sendable {
  var check: LintCheck
  var path: String
  var message: String
}

/// Decodes a catalog element by element, so one broken tip hides nothing else: every problem becomes a
/// ``CatalogIssue``, and ``catalog`` holds what decoded. ``Catalog/init(json:)`` throws the first issue;
/// ``CatalogLoader`` reports them all.
struct CatalogDecoder {
  private(set) var catalog = Catalog()
  private(set) var issues: [CatalogIssue] = []
  /// The JSON path of each tip and template in ``catalog`` (`tips[3]`: the position in the file, which differs from
  /// the position in `catalog.tips` once a tip before it failed).
  private(set) var tipPaths: [String] = []
  private(set) var templatePaths: [String] = []
  /// Every tip and template element of the file, decoded or not: (path, JSON).
  private(set) var rawTips: [(path: String, json: JSONValue)] = []
  private(set) var rawTemplates: [(path: String, json: JSONValue)] = []
  /// The path of each event declaration in `catalog.events`.
  private(set) var eventPaths: [String] = []
  /// The path of each group in `catalog.groups`.
  private(set) var groupPaths: [String] = []

  init(json: JSONValue) {
    guard case .object(let object) = json else {
      issue(.decode, "$", "a catalog must be a JSON object, got \(json.typeName)")
      return
    }
    for (key, _) in object where !Catalog.keys.contains(key) {
      issue(.decode, "$", "unknown key \"\(key)\" (expected \(Catalog.keys.joined(separator: ", ")))")
    }
    if let value = object["$schema"], value.stringValue == nil {
      issue(.decode, "$schema", "expected a string, got \(value.typeName)")
    }
    if let value = object["displayFrequency"], !value.isNull {
      if let name = value.stringValue, let frequency = DisplayFrequency(rawValue: name) {
        catalog.displayFrequency = frequency
      } else {
        issue(.decode, "displayFrequency", "must be one of immediate, hourly, daily, weekly, monthly")
      }
    }
    decodeParameters(object)
    decodeEvents(object)
    decodeLocales(object)
    let tipIDs = decodeTips(object)
    decodeTemplates(object, tipIDs: tipIDs)
    decodeGroups(object, tipIDs: tipIDs)
  }

  private mutating func issue(_ check: LintCheck, _ path: String, _ message: String) {
    issues.append(CatalogIssue(check: check, path: path, message: message))
  }

  private mutating func issue(_ check: LintCheck, _ error: EngineError, at path: String) {
    switch error {
    case .invalidDefinition(let errorPath, let message): issue(check, errorPath, message)
    case .invalidArgument(let argument, let problem): issue(check, path, "\(argument) \(problem)")
    default: issue(check, path, error.description)
    }
  }

  private mutating func list(_ object: JSONObject, _ key: String) -> [JSONValue] {
    guard let value = object[key], !value.isNull else { return [] }
    guard case .array(let array) = value else {
      issue(.decode, key, "must be an array, got \(value.typeName)")
      return []
    }
    return array
  }

  private mutating func decodeParameters(_ object: JSONObject) {
    var seen: [String: String] = [:]
    for (index, element) in list(object, "parameters").enumerated() {
      let path = "parameters[\(index)]"
      do {
        let parameter = try ParameterDefinition(json: element, path: path)
        if let first = seen[parameter.id] {
          issue(.duplicateID, "\(path).id", "duplicate parameter id \"\(parameter.id)\" (first at \(first))")
          continue
        }
        seen[parameter.id] = path
        catalog.parameters.append(parameter)
      } catch {
        issue(.decode, error, at: path)
      }
    }
  }

  private mutating func decodeEvents(_ object: JSONObject) {
    guard let value = object["events"], !value.isNull else { return }
    catalog.events = []
    var seen: [String: String] = [:]
    for (index, element) in list(object, "events").enumerated() {
      let path = "events[\(index)]"
      do {
        let event = try EventDeclaration(json: element, path: path)
        if let first = seen[event.id] {
          issue(.duplicateID, "\(path).id", "duplicate event id \"\(event.id)\" (first at \(first))")
          continue
        }
        seen[event.id] = path
        catalog.events?.append(event)
        eventPaths.append(path)
      } catch {
        issue(.decode, error, at: path)
      }
    }
  }

  private mutating func decodeLocales(_ object: JSONObject) {
    var seen: Set<String> = []
    for (index, element) in list(object, "locales").enumerated() {
      let path = "locales[\(index)]"
      guard case .string(let locale) = element, TipLocalization.isLocaleTag(locale) else {
        issue(.decode, path, "expected a locale tag such as \"ja\" or \"zh-Hans\"")
        continue
      }
      guard seen.insert(locale).inserted else {
        issue(.duplicateID, path, "duplicate locale \"\(locale)\"")
        continue
      }
      catalog.locales.append(locale)
    }
    if let value = object["sourceLocale"], !value.isNull {
      guard case .string(let locale) = value, TipLocalization.isLocaleTag(locale) else {
        issue(.decode, "sourceLocale", "expected a locale tag such as \"en\"")
        return
      }
      catalog.sourceLocale = locale
    }
    if !catalog.locales.isEmpty && !catalog.locales.contains(catalog.sourceLocale) {
      issue(
        .decode, object["sourceLocale"] == nil ? "locales" : "sourceLocale",
        "the source locale \"\(catalog.sourceLocale)\" (the tips' own copy) is not one of locales")
    }
  }

  /// Decodes tips; returns every tip id the file declares (also of tips that failed to decode, so groups naming
  /// them are not reported twice).
  private mutating func decodeTips(_ object: JSONObject) -> [String: String] {
    var ids: [String: String] = [:]
    for (index, element) in list(object, "tips").enumerated() {
      let path = "tips[\(index)]"
      rawTips.append((path, element))
      let rawID = element["id"]?.stringValue
      if let rawID, let first = ids[rawID] {
        issue(.duplicateID, "\(path).id", "duplicate tip id \"\(rawID)\" (first at \(first))")
        continue
      }
      if let rawID, !rawID.isEmpty { ids[rawID] = path }
      do {
        let tip = try TipDefinition(json: element, path: path)
        catalog.tips.append(tip)
        catalog.tipSources[tip.id] = element.objectValue
        tipPaths.append(path)
      } catch {
        issue(.decode, error, at: path)
      }
    }
    return ids
  }

  private mutating func decodeTemplates(_ object: JSONObject, tipIDs: [String: String]) {
    var seen: [String: String] = [:]
    for (index, element) in list(object, "templates").enumerated() {
      let path = "templates[\(index)]"
      rawTemplates.append((path, element))
      let template: TipTemplate
      do {
        template = try TipTemplate(json: element, path: path)
      } catch {
        issue(.template, error, at: path)
        continue
      }
      if let first = seen[template.id] {
        issue(.duplicateID, "\(path).id", "duplicate template id \"\(template.id)\" (first at \(first))")
        continue
      }
      seen[template.id] = path
      let clashes = tipIDs.filter { template.couldMake(id: $0.key) || $0.key == template.id }
      if let clash = clashes.min(by: { $0.value < $1.value }) {
        issue(
          .duplicateID, "\(path).id",
          "template \"\(template.id)\" can make the id of tip \"\(clash.key)\" (\(clash.value)); instantiating it would replace that tip"
        )
        continue
      }
      catalog.templates.append(template)
      templatePaths.append(path)
    }
  }

  private mutating func decodeGroups(_ object: JSONObject, tipIDs: [String: String]) {
    var seen: [String: String] = [:]
    for (index, element) in list(object, "groups").enumerated() {
      let path = "groups[\(index)]"
      let group: TipGroupDefinition
      do {
        group = try TipGroupDefinition(json: element, path: path)
      } catch {
        issue(.decode, error, at: path)
        continue
      }
      if let first = seen[group.id] {
        issue(.duplicateID, "\(path).id", "duplicate group id \"\(group.id)\" (first at \(first))")
        continue
      }
      seen[group.id] = path
      var complete = true
      for (position, tipID) in group.tipIDs.enumerated() where tipIDs[tipID] == nil {
        issue(.unknownTip, "\(path).tips[\(position)]", "no tip \"\(tipID)\" in this catalog")
        complete = false
      }
      if complete {
        catalog.groups.append(group)
        groupPaths.append(path)
      }
    }
  }
}
