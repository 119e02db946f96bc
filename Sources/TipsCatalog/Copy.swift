import TipsJSON

/// One copy string of a tip or template, as translators' message files name it after the tip id:
/// `title`, `message`, `actions.<actionId>`, `variants.<name>.title|message|actions.<actionId>`.
public enum CopyMember: Sendable, Hashable {
  case title
  case message
  case action(String)
  case variantTitle(String)
  case variantMessage(String)
  case variantAction(variant: String, action: String)

  /// The key suffix after the tip id: `title`, `actions.learn-more`, `variants.friendly.title`.
  public var suffix: String {
    switch self {
    case .title: "title"
    case .message: "message"
    case .action(let id): "actions.\(id)"
    case .variantTitle(let name): "variants.\(name).title"
    case .variantMessage(let name): "variants.\(name).message"
    case .variantAction(let name, let id): "variants.\(name).actions.\(id)"
    }
  }
}

/// Reading, writing and listing copy in a tip's (or template's) JSON object, the shape `TipDefinition.json` and
/// catalog files share. Working on JSON lets tips and templates (whose copy holds placeholders) share one path.
enum Copy {
  /// One copy string of a definition: what it is and where its source-locale text sits (relative JSON path).
  struct Slot: Sendable, Hashable {
    var member: CopyMember
    /// `title`, `actions[0].title`, `variants.friendly.title`.
    var sourcePath: String
  }

  /// Every copy string of a definition in catalog order: title, message, actions, then each variant's title,
  /// message (its own) and actions (its own). A holdout variant has no copy.
  static func slots(of object: JSONObject) -> [Slot] {
    var slots = [Slot(member: .title, sourcePath: "title")]
    if case .string = object["message"] { slots.append(Slot(member: .message, sourcePath: "message")) }
    for (index, id) in actionIDs(object["actions"]).enumerated() {
      slots.append(Slot(member: .action(id), sourcePath: "actions[\(index)].title"))
    }
    if case .object(let variants)? = object["variants"] {
      for (name, value) in variants {
        guard case .object(let variant) = value, variant["holdout"] != true else { continue }
        let base = "variants.\(name)"
        slots.append(Slot(member: .variantTitle(name), sourcePath: "\(base).title"))
        if case .string = variant["message"] {
          slots.append(Slot(member: .variantMessage(name), sourcePath: "\(base).message"))
        }
        for (index, id) in actionIDs(variant["actions"]).enumerated() {
          slots.append(
            Slot(member: .variantAction(variant: name, action: id), sourcePath: "\(base).actions[\(index)].title"))
        }
      }
    }
    return slots
  }

  static func actionIDs(_ value: JSONValue?) -> [String] {
    guard case .array(let actions)? = value else { return [] }
    return actions.compactMap { $0["id"]?.stringValue }
  }

  /// Resolves a key suffix (after the tip id) to a member of `object`, or says why it names nothing.
  static func member(forSuffix suffix: String, in object: JSONObject) -> Result<CopyMember, Unresolved> {
    switch suffix {
    case "title": return .success(.title)
    case "message":
      guard case .string = object["message"] else { return .failure(.noMessage) }
      return .success(.message)
    default: break
    }
    if suffix.hasPrefix("actions.") {
      let id = String(suffix.dropFirst("actions.".count))
      return actionIDs(object["actions"]).contains(id) ? .success(.action(id)) : .failure(.unknownAction(id))
    }
    guard suffix.hasPrefix("variants.") else { return .failure(.unknownMember) }
    let rest = suffix.dropFirst("variants.".count)
    guard case .object(let variants)? = object["variants"] else { return .failure(.unknownVariant) }
    // Variant names may hold dots: the longest declared name that prefixes the rest.
    let names = variants.keys.filter { rest.hasPrefix($0 + ".") }.sorted { $0.count > $1.count }
    guard let name = names.first, case .object(let variant)? = variants[name] else { return .failure(.unknownVariant) }
    guard variant["holdout"] != true else { return .failure(.holdout(name)) }
    let member = rest.dropFirst(name.count + 1)
    switch member {
    case "title": return .success(.variantTitle(name))
    case "message":
      guard case .string = variant["message"] else { return .failure(.noMessage) }
      return .success(.variantMessage(name))
    default:
      guard member.hasPrefix("actions.") else { return .failure(.unknownMember) }
      let id = String(member.dropFirst("actions.".count))
      return actionIDs(variant["actions"]).contains(id)
        ? .success(.variantAction(variant: name, action: id)) : .failure(.unknownAction(id))
    }
  }

  /// Why a message key names nothing in the catalog.
  enum Unresolved: Error, Sendable, Hashable {
    case unknownTip
    case noMessage
    case unknownAction(String)
    case unknownVariant
    case unknownMember
    case holdout(String)

    var explanation: String {
      switch self {
      case .unknownTip: "names no tip or template of the catalog"
      case .noMessage: "is a message, and the tip (or variant) has none in its source copy"
      case .unknownAction(let id): "names action \"\(id)\", which the tip (or variant) does not have"
      case .unknownVariant: "names a variant the tip does not declare"
      case .unknownMember: "is not title, message, actions.<id> or variants.<name>.…"
      case .holdout(let name): "names variant \"\(name)\", a holdout, which has no copy"
      }
    }
  }

  /// The copy of `member` in `locale`: the definition's own text for the source locale (`locale` nil), else its
  /// `localizations` entry (the variant's for variant members).
  static func value(_ object: JSONObject, _ member: CopyMember, locale: String?) -> String? {
    switch member {
    case .title, .message, .action:
      return ownOrLocalized(object, member, locale: locale)
    case .variantTitle(let name), .variantMessage(let name), .variantAction(let name, _):
      guard case .object(let variant)? = object["variants"]?[name] else { return nil }
      return ownOrLocalized(variant, member, locale: locale)
    }
  }

  private static func ownOrLocalized(_ object: JSONObject, _ member: CopyMember, locale: String?) -> String? {
    guard let locale else {
      switch member {
      case .title, .variantTitle: return object["title"]?.stringValue
      case .message, .variantMessage: return object["message"]?.stringValue
      case .action(let id), .variantAction(_, let id):
        guard case .array(let actions)? = object["actions"] else { return nil }
        return actions.first { $0["id"]?.stringValue == id }?["title"]?.stringValue
      }
    }
    guard case .object(let copy)? = object["localizations"]?[locale] else { return nil }
    switch member {
    case .title, .variantTitle: return copy["title"]?.stringValue
    case .message, .variantMessage: return copy["message"]?.stringValue
    case .action(let id), .variantAction(_, let id): return copy["actions"]?[id]?.stringValue
    }
  }

  /// Sets the copy of `member`: the definition's own text when `locale` is nil (and the inline localization of
  /// `sourceLocale`, when there is one, so both agree), else its `localizations[locale]` entry.
  static func set(
    _ object: inout JSONObject, _ member: CopyMember, locale: String?, sourceLocale: String, to text: String
  ) {
    switch member {
    case .title, .message, .action:
      setOwnOrLocalized(&object, member, locale: locale, sourceLocale: sourceLocale, to: text)
    case .variantTitle(let name), .variantMessage(let name), .variantAction(let name, _):
      guard case .object(var variants)? = object["variants"], case .object(var variant)? = variants[name] else {
        return
      }
      setOwnOrLocalized(&variant, member, locale: locale, sourceLocale: sourceLocale, to: text)
      variants[name] = .object(variant)
      object["variants"] = .object(variants)
    }
  }

  private static func setOwnOrLocalized(
    _ object: inout JSONObject, _ member: CopyMember, locale: String?, sourceLocale: String, to text: String
  ) {
    guard let locale else {
      switch member {
      case .title, .variantTitle: object["title"] = .string(text)
      case .message, .variantMessage: object["message"] = .string(text)
      case .action(let id), .variantAction(_, let id):
        guard case .array(var actions)? = object["actions"] else { return }
        for index in actions.indices where actions[index]["id"]?.stringValue == id {
          if case .object(var action) = actions[index] {
            action["title"] = .string(text)
            actions[index] = .object(action)
          }
        }
        object["actions"] = .array(actions)
      }
      if case .object? = object["localizations"]?[sourceLocale] {
        setOwnOrLocalized(&object, member, locale: sourceLocale, sourceLocale: sourceLocale, to: text)
      }
      return
    }
    var localizations = object["localizations"]?.objectValue ?? JSONObject()
    var copy = localizations[locale]?.objectValue ?? JSONObject()
    switch member {
    case .title, .variantTitle: copy["title"] = .string(text)
    case .message, .variantMessage: copy["message"] = .string(text)
    case .action(let id), .variantAction(_, let id):
      var actions = copy["actions"]?.objectValue ?? JSONObject()
      actions[id] = .string(text)
      copy["actions"] = .object(actions)
    }
    localizations[locale] = .object(copy)
    object["localizations"] = .object(localizations)
  }
}
