import TipsCatalog
import TipsJSON

// Completion, hover, go to definition and code actions, all read from the document's tolerant syntax tree.

extension LanguageServer {
  /// The open document and byte offset a `TextDocumentPositionParams` names (nil document when it is not open).
  func locate(_ params: JSONValue?) throws(ResponseError) -> (OpenDocument, Int)? {
    let uri = try Self.uri(params)
    let position = try Self.position(params?["position"])
    guard let document = documents[uri] else { return nil }
    return (document, document.text.offset(of: position, encoding: encoding))
  }

  // MARK: - Completion

  enum CompletionKind: Int64 {
    case variable = 6, property = 10, value = 12, reference = 18, enumMember = 20, event = 23, `operator` = 24
  }

  func completion(_ params: JSONValue?) throws(ResponseError) -> JSONValue {
    var items: [JSONValue] = []
    if let (document, offset) = try locate(params), document.isCatalogLike {
      items = document.isMessages ? messageCompletion(document, offset) : completionItems(document, offset)
    }
    return ["isIncomplete": false, "items": .array(items)]
  }

  func completionItems(_ document: OpenDocument, _ offset: Int) -> [JSONValue] {
    let tree = document.tree
    func item(_ label: String, _ kind: CompletionKind, _ detail: String?, _ newText: String, _ start: Int, _ end: Int)
      -> JSONValue
    {
      var object: JSONObject = [
        "label": .string(label), "kind": .int(kind.rawValue),
        "textEdit": ["range": json(document, start, end), "newText": .string(newText)],
      ]
      if let detail { object["detail"] = .string(detail) }
      return .object(object)
    }

    // Inside a string: replace its text.
    if let node = tree.node(at: offset), tree[node].kind == .string, offset >= tree[node].contentStart,
      offset <= tree[node].contentEnd
    {
      let start = tree[node].contentStart
      let end = tree[node].contentEnd
      let close = tree[node].closed ? "" : "\""
      guard let parent = tree[node].parent else { return [] }
      if tree[node].isKey {
        let role = ObjectRole(path: tree.path(of: parent))
        return role.offeredKeys(present: presentKeys(tree, parent, excluding: node)).map {
          item(
            $0.name, Self.isOperator($0.name, role) ? .operator : .property, $0.detail, $0.name + close, start, end)
        }
      }
      return valueCandidates(document, node: node, parent: parent).map {
        item($0.text, $0.kind, $0.detail, $0.text + close, start, end)
      }
    }

    // Just after a string, number or literal (`"event"|`): nothing to offer.
    if tree.nodes.contains(where: { $0.end == offset && $0.kind != .object && $0.kind != .array }) { return [] }
    // Between values: a key or a whole (quoted) value at the cursor.
    guard let container = tree.container(at: offset) else { return [] }
    if tree[container].kind == .array {
      return elementCandidates(document, array: container, excluding: nil).map {
        item($0.text, $0.kind, $0.detail, JSONValue.string($0.text).jsonString, offset, offset)
      }
    }
    let bytes = document.text.bytes
    let valueMember = tree[container].members.first { member in
      guard let colon = member.colon, colon < offset else { return false }
      if let value = member.value, tree[value].start < offset { return false }
      return bytes[(colon + 1)..<offset].allSatisfy { [0x20, 0x09, 0x0A, 0x0D].contains($0) }
    }
    if let member = valueMember {
      let key = tree[member.key].text
      return valueCandidates(document, key: key, object: container, excluding: member.value).map {
        item($0.text, $0.kind, $0.detail, JSONValue.string($0.text).jsonString, offset, offset)
      }
    }
    let role = ObjectRole(path: tree.path(of: container))
    return role.offeredKeys(present: presentKeys(tree, container, excluding: nil)).map {
      item(
        $0.name, Self.isOperator($0.name, role) ? .operator : .property, $0.detail, "\"\($0.name)\": ", offset, offset)
    }
  }

  /// Comparison operators (in a `count`, or a parameter rule) complete as operators, other keys as properties.
  static func isOperator(_ key: String, _ role: ObjectRole) -> Bool {
    (role == .count || role == .rule) && ObjectRole.operators.contains { $0.name == key }
  }

  func presentKeys(_ tree: SyntaxTree, _ object: Int, excluding: Int?) -> Set<String> {
    Set(tree[object].members.filter { $0.key != excluding }.map { tree[$0.key].text })
  }

  struct Candidate {
    var text: String
    var kind: LanguageServer.CompletionKind
    var detail: String?
  }

  /// Values for the string `node` (a member value or an array element).
  func valueCandidates(_ document: OpenDocument, node: Int, parent: Int) -> [Candidate] {
    let tree = document.tree
    if tree[parent].kind == .array { return elementCandidates(document, array: parent, excluding: node) }
    guard let key = tree[node].key else { return [] }
    return valueCandidates(document, key: key, object: parent, excluding: node)
  }

  /// Values for member `key` of `object`: event ids, parameter ids, or a fixed list.
  func valueCandidates(_ document: OpenDocument, key: String, object: Int, excluding: Int?) -> [Candidate] {
    let tree = document.tree
    let role = ObjectRole(path: tree.path(of: object))
    let outline = document.outline
    if role == .rule && key == "event" {
      return outline.eventCandidates(tree, excluding: excluding).map {
        Candidate(text: $0.id, kind: .event, detail: $0.detail)
      }
    }
    if role == .rule && key == "tip" {
      return outline.tips.map { Candidate(text: $0.id, kind: .reference, detail: tree.string($0.node, "title")) }
    }
    if role == .rule && key == "parameter" {
      return outline.parameters.map { parameter in
        let value = tree.member(parameter.node, "default").flatMap { tree.json($0) }
        return Candidate(
          text: parameter.id, kind: .variable,
          detail: value.map { "parameter, default \($0.jsonString)" } ?? "parameter")
      }
    }
    return role.enumeration(key).map { Candidate(text: $0, kind: .enumMember, detail: nil) }
  }

  /// Elements for an array: tip ids inside a group's `tips`.
  func elementCandidates(_ document: OpenDocument, array: Int, excluding: Int?) -> [Candidate] {
    let tree = document.tree
    let path = tree.path(of: array)
    guard path.count == 3, path[0] == .key("groups"), case .index = path[1], path[2] == .key("tips") else { return [] }
    let present = Set(tree.elements(array).filter { $0 != excluding }.map { tree[$0].text })
    return document.outline.tips.filter { !present.contains($0.id) }.map {
      Candidate(text: $0.id, kind: .reference, detail: tree.string($0.node, "title"))
    }
  }

  // MARK: - Hover

  func hover(_ params: JSONValue?) throws(ResponseError) -> JSONValue {
    guard let (document, offset) = try locate(params), document.isCatalogLike else { return .null }
    if document.isMessages { return messageHover(document, offset) }
    let tree = document.tree
    guard let node = tree.node(under: offset) ?? tree.node(at: offset) else { return .null }
    var sections: [String] = []
    var range: (Int, Int)?
    let eventText = eventID(tree, node)

    if let rule = enclosingRule(tree, node), let json = tree.json(rule) {
      sections.append(RuleWords.sentence(json))
      range = (tree[rule].start, tree[rule].end)
      if let eventText { sections.append(eventInfo(document, eventText)) }
      if let followed = followedTip(tree, node) { sections.append(tipInfo(document, followed)) }
      if let liveText = liveSection(document, rule: rule) { sections.append(liveText) }
    } else if let eventText {
      sections.append(eventInfo(document, eventText))
      range = (tree[node].start, tree[node].end)
    } else if let explained = keyInfo(tree, node) {
      sections.append(explained)
      range = (tree[node].start, tree[node].end)
    }
    guard !sections.isEmpty, let range else { return .null }
    var text = sections.joined(separator: "\n\n")
    if !markdown {
      text = text.replacingAll("**", with: "").replacingAll("`", with: "")
    }
    return [
      "contents": ["kind": markdown ? "markdown" : "plaintext", "value": .string(text)],
      "range": json(document, range.0, range.1),
    ]
  }

  /// The event id a string node names: a rule's `event`, or a declaration's `id`.
  func eventID(_ tree: SyntaxTree, _ node: Int) -> String? {
    guard tree[node].kind == .string, !tree[node].isKey, let parent = tree[node].parent, let key = tree[node].key
    else { return nil }
    let role = ObjectRole(path: tree.path(of: parent))
    if (role == .rule && key == "event") || (role == .eventDeclaration && key == "id") { return tree[node].text }
    return nil
  }

  /// The tip id a string node names as a tip rule's `tip`.
  func followedTip(_ tree: SyntaxTree, _ node: Int) -> String? {
    guard tree[node].kind == .string, !tree[node].isKey, tree[node].key == "tip", let parent = tree[node].parent,
      ObjectRole(path: tree.path(of: parent)) == .rule
    else { return nil }
    return tree[node].text
  }

  func tipInfo(_ document: OpenDocument, _ id: String) -> String {
    let outline = document.outline
    if let tip = outline.tips.first(where: { $0.id == id }) {
      let title = document.tree.string(tip.node, "title").map { ": \($0)" } ?? ""
      return "`\(id)`\(title)"
    }
    var text = "`\(id)` is not a tip of this catalog: the rule never holds while no such tip is registered"
    if let suggestion = DidYouMean.nearest(id, among: outline.tips.map(\.id)) {
      text += " (did you mean `\(suggestion)`?)"
    }
    return text
  }

  /// A key's meaning in its object (a tip's `schedule`, a variant's `holdout`, an event's `maxAge`, …).
  func keyInfo(_ tree: SyntaxTree, _ node: Int) -> String? {
    guard tree[node].kind == .string, tree[node].isKey, let parent = tree[node].parent else { return nil }
    let key = tree[node].text
    guard let entry = ObjectRole(path: tree.path(of: parent)).keys.first(where: { $0.name == key }) else { return nil }
    return "`\(key)`: \(entry.detail)"
  }

  /// The innermost rule object holding `node`.
  func enclosingRule(_ tree: SyntaxTree, _ node: Int) -> Int? {
    var current: Int? = node
    while let index = current {
      if tree[index].kind == .object, !tree[index].isKey, ObjectRole.isRule(tree.path(of: index)) { return index }
      current = tree[index].parent
    }
    return nil
  }

  func eventInfo(_ document: OpenDocument, _ id: String) -> String {
    guard let events = document.outline.events else {
      return "`\(id)`: the catalog declares no `events`, so event ids are not checked."
    }
    if let event = events.first(where: { $0.id == id }) {
      return "`\(id)`: \(event.description ?? "(no description)")"
    }
    var text = "`\(id)` is not declared in `events`"
    if let suggestion = DidYouMean.nearest(id, among: events.map(\.id)) { text += " (did you mean `\(suggestion)`?)" }
    return text
  }

  /// The running daemon's value of the rule, when one answers (see ``DaemonLiveValues``): `tips/explain` for the
  /// tip holding the rule, and the rule's own entry in it.
  func liveSection(_ document: OpenDocument, rule: Int) -> String? {
    guard let live else { return nil }
    let tree = document.tree
    let path = tree.path(of: rule)
    guard path.count >= 4, path[0] == .key("tips"), case .index(let tipIndex) = path[1],
      let tipNode = tree.elements(tree.member(tree.root, "tips")).dropFirst(tipIndex).first,
      let tipID = tree.string(tipNode, "id")
    else { return nil }
    switch live.explain(tipID: tipID) {
    case .unavailable:
      return nil
    case .unknownTip:
      return "**Live:** the running tipsd has no tip `\(tipID)` (it serves another catalog, or the tip is new)."
    case .explained(let explanation, let source):
      var entry: JSONValue? = explanation
      var key = "rules"
      var index = 2
      while index < path.count, entry != nil {
        switch path[index] {
        case .key("rules"), .key("allOf"), .key("anyOf"):
          if index + 1 < path.count, case .index(let element) = path[index + 1] {
            entry = entry?[key]?[element]
            index += 2
          } else {
            entry = nil
          }
        case .key("not"):
          entry = entry?[key]?[0]
          index += 1
        default:
          entry = nil
        }
        key = "rules"
      }
      var lines: [String] = []
      if let entry, let holds = entry["holds"]?.boolValue {
        let detail = entry["detail"]?.stringValue.map { " — \($0)" } ?? ""
        lines.append("**Live** (tipsd at `\(source)`): this rule \(holds ? "**holds**" : "does **not** hold")\(detail)")
      } else {
        lines.append("**Live** (tipsd at `\(source)`): the daemon's `\(tipID)` has no rule here (unsaved edits?)")
      }
      if let shows = explanation["shouldDisplay"]?.boolValue {
        let status = explanation["status"]?.stringValue.map { ", \($0)" } ?? ""
        lines.append("`\(tipID)`: shouldDisplay **\(shows)**\(status)")
      }
      return lines.joined(separator: "  \n")
    }
  }

  // MARK: - Definition

  func definition(_ params: JSONValue?) throws(ResponseError) -> JSONValue {
    guard let (document, offset) = try locate(params), document.isCatalogLike else { return .null }
    if document.isMessages { return messageDefinition(document, offset) }
    let tree = document.tree
    guard let node = tree.node(under: offset) ?? tree.node(at: offset), tree[node].kind == .string,
      !tree[node].isKey, let parent = tree[node].parent
    else { return .null }
    let text = tree[node].text
    let outline = document.outline
    var target: CatalogOutline.Declaration?
    if tree[parent].kind == .object {
      let role = ObjectRole(path: tree.path(of: parent))
      if role == .rule && tree[node].key == "event" {
        target = outline.events?.first { $0.id == text }
      } else if role == .rule && tree[node].key == "parameter" {
        target = outline.parameters.first { $0.id == text }
      }
    } else {
      let path = tree.path(of: parent)
      if path.count == 3, path[0] == .key("groups"), path[2] == .key("tips") {
        target = outline.tips.first { $0.id == text }
      }
    }
    guard let target else { return .null }
    return [
      "uri": .string(document.text.uri),
      "range": json(document, tree[target.idNode].start, tree[target.idNode].end),
    ]
  }

  // MARK: - Code actions

  /// The "did you mean" fix for each undeclared event in the range: the event string replaced by the nearest
  /// declared id.
  func codeActions(_ params: JSONValue?) throws(ResponseError) -> JSONValue {
    let uri = try Self.uri(params)
    let range = try Self.range(params?["range"])
    guard let document = documents[uri] else { return [] }
    if let only = params?["context"]?["only"]?.arrayValue?.compactMap(\.stringValue),
      !only.contains(where: { $0 == "quickfix" || $0.hasPrefix("quickfix.") || $0 == "" })
    {
      return []
    }
    let start = document.text.offset(of: range.start, encoding: encoding)
    let end = document.text.offset(of: range.end, encoding: encoding)
    let tree = document.tree
    let declared = document.outline.events?.map(\.id) ?? []
    var actions: [JSONValue] = []
    for diagnostic in diagnostics(of: document)
    where diagnostic.lint.check == LintCheck.undeclaredEvent.rawValue && diagnostic.start <= end
      && start <= diagnostic.end
    {
      guard let node = tree.node(startingAt: diagnostic.start), tree[node].kind == .string,
        let suggestion = DidYouMean.nearest(tree[node].text, among: declared)
      else { continue }
      let edit: JSONValue = [
        "range": json(document, tree[node].start, tree[node].end),
        "newText": .string(JSONValue.string(suggestion).jsonString),
      ]
      actions.append([
        "title": .string("Change to \"\(suggestion)\""), "kind": "quickfix", "isPreferred": true,
        "diagnostics": [diagnostic.json],
        "edit": ["changes": .object([uri: [edit]])],
      ])
    }
    return .array(actions)
  }
}

extension String {
  fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
    guard !target.isEmpty else { return self }
    var out = ""
    var rest = self[...]
    while let found = rest.firstRange(of: target) {
      out += rest[..<found.lowerBound]
      out += replacement
      rest = rest[found.upperBound...]
    }
    return out + rest
  }
}
