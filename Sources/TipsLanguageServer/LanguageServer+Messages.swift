import TipsJSON
import TipsSystem

// Translators' message files (`messages/{locale}.json`): completion of the copy keys the catalog has (with the
// source text), hover showing the source text, and go to definition of a key's source copy in the catalog.

extension LanguageServer {
  /// One copy string of the catalog, as a message file names it: `filter.tip.title`, `filter.tip.actions.learn-more`,
  /// `filter.tip.variants.friendly.title` (`Copy.slots`' order and rules, read from the catalog's syntax tree).
  struct CopySlot {
    var key: String
    /// The source text's node in the catalog's tree.
    var source: Int?
  }

  /// The catalog of a message file: its URI and syntax tree (an open buffer, else the file).
  func catalog(of document: OpenDocument) -> (uri: String, tree: SyntaxTree)? {
    guard document.isMessages, let project = project(for: document), let path = project.catalogPath else { return nil }
    if let open = documents.values.first(where: { !$0.isMessages && $0.path == path }) {
      return (open.text.uri, open.tree)
    }
    guard let bytes = try? System.readFile(path) else { return nil }
    return (FileURI.uri(path), SyntaxTree(bytes))
  }

  static func copySlots(_ tree: SyntaxTree) -> [CopySlot] {
    var slots: [CopySlot] = []
    func actions(_ list: Int?, _ prefix: String) {
      for action in tree.elements(list) {
        guard let id = tree.string(action, "id") else { continue }
        slots.append(CopySlot(key: "\(prefix).actions.\(id)", source: tree.member(action, "title")))
      }
    }
    for list in ["tips", "templates"] {
      for element in tree.elements(tree.member(tree.root, list)) {
        guard let id = tree.string(element, "id") else { continue }
        slots.append(CopySlot(key: "\(id).title", source: tree.member(element, "title")))
        if let message = tree.member(element, "message"), tree[message].kind == .string {
          slots.append(CopySlot(key: "\(id).message", source: message))
        }
        actions(tree.member(element, "actions"), id)
        guard let variants = tree.member(element, "variants"), tree[variants].kind == .object else { continue }
        for member in tree[variants].members {
          guard let variant = member.value, tree[variant].kind == .object else { continue }
          let base = "\(id).variants.\(tree[member.key].text)"
          slots.append(CopySlot(key: "\(base).title", source: tree.member(variant, "title")))
          if let message = tree.member(variant, "message"), tree[message].kind == .string {
            slots.append(CopySlot(key: "\(base).message", source: message))
          }
          actions(tree.member(variant, "actions"), base)
        }
      }
    }
    return slots
  }

  /// The copy key a node of a message file names: a key (or its value) in the `tipkit` object, or a flat
  /// `tipkit.…` key at the top level.
  func messageKey(_ tree: SyntaxTree, _ node: Int) -> (key: String, keyNode: Int)? {
    guard let parent = tree[node].parent, tree[parent].kind == .object else { return nil }
    let keyNode = tree[node].isKey ? node : tree[parent].members.first { $0.value == node }?.key
    guard let keyNode else { return nil }
    let text = tree[keyNode].text
    if parent == tree.root {
      return text.hasPrefix("tipkit.") ? (String(text.dropFirst("tipkit.".count)), keyNode) : nil
    }
    guard tree.path(of: parent) == [.key("tipkit")] else { return nil }
    return (text, keyNode)
  }

  func messageCompletion(_ document: OpenDocument, _ offset: Int) -> [JSONValue] {
    guard let (_, catalogTree) = catalog(of: document) else { return [] }
    let tree = document.tree
    var start = offset
    var end = offset
    var close = ""
    var quote = true
    var editing: Int?
    let object: Int
    if let node = tree.node(at: offset), tree[node].kind == .string, tree[node].isKey,
      offset >= tree[node].contentStart, offset <= tree[node].contentEnd, let parent = tree[node].parent
    {
      (start, end, quote, editing) = (tree[node].contentStart, tree[node].contentEnd, false, node)
      close = tree[node].closed ? "" : "\""
      object = parent
    } else if let container = tree.container(at: offset), tree[container].kind == .object,
      !tree.nodes.contains(where: { $0.end == offset && $0.kind == .string })
    {
      object = container
    } else {
      return []
    }
    guard tree.path(of: object) == [.key("tipkit")] else { return [] }
    let present = Set(tree[object].members.filter { $0.key != editing }.map { tree[$0.key].text })
    return Self.copySlots(catalogTree).filter { !present.contains($0.key) }.map { slot in
      var item: JSONObject = [
        "label": .string(slot.key), "kind": .int(CompletionKind.property.rawValue),
        "textEdit": [
          "range": json(document, start, end),
          "newText": .string(quote ? "\(JSONValue.string(slot.key).jsonString): " : slot.key + close),
        ],
      ]
      if let source = slot.source, catalogTree[source].kind == .string {
        item["detail"] = .string(catalogTree[source].text)
      }
      return .object(item)
    }
  }

  func messageHover(_ document: OpenDocument, _ offset: Int) -> JSONValue {
    let tree = document.tree
    guard let node = tree.node(under: offset) ?? tree.node(at: offset), tree[node].kind == .string,
      let (key, keyNode) = messageKey(tree, node), let (_, catalogTree) = catalog(of: document)
    else { return .null }
    guard let slot = Self.copySlots(catalogTree).first(where: { $0.key == key }) else { return .null }
    let source = slot.source.flatMap { catalogTree[$0].kind == .string ? catalogTree[$0].text : nil }
    let text = "`\(key)`: the catalog's source copy is " + (source.map { "“\($0)”" } ?? "missing")
    return [
      "contents": ["kind": markdown ? "markdown" : "plaintext", "value": .string(text)],
      "range": json(document, tree[keyNode].start, tree[keyNode].end),
    ]
  }

  func messageDefinition(_ document: OpenDocument, _ offset: Int) -> JSONValue {
    let tree = document.tree
    guard let node = tree.node(under: offset) ?? tree.node(at: offset), tree[node].kind == .string,
      let (key, _) = messageKey(tree, node), let (uri, catalogTree) = catalog(of: document),
      let slot = Self.copySlots(catalogTree).first(where: { $0.key == key }), let source = slot.source
    else { return .null }
    let target = TextDocument(uri: uri, version: 0, text: catalogTree.bytes)
    let range = target.range(catalogTree[source].start, catalogTree[source].end, encoding: encoding)
    return [
      "uri": .string(uri),
      "range": [
        "start": ["line": .int(Int64(range.start.line)), "character": .int(Int64(range.start.character))],
        "end": ["line": .int(Int64(range.end.line)), "character": .int(Int64(range.end.character))],
      ],
    ]
  }
}
