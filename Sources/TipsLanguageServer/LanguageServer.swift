public import TipsCatalog
public import TipsJSON
public import TipsLogging
import TipsSystem

/// What `tipsd lsp` is started with.
public struct LanguageServerOptions: Sendable {
  /// `serverInfo.version`.
  public var serverVersion: String
  /// The lint's options (`--id-pattern`).
  public var lint: LintOptions

  public init(serverVersion: String = "0", lint: LintOptions = LintOptions()) {
    self.serverVersion = serverVersion
    self.lint = lint
  }
}

/// An LSP 3.17 server for tipsd catalogs and translators' `messages/{locale}.json` files, as a handler: messages in,
/// messages out, no I/O of its own beyond reading catalogs and message files from disk (``LanguageServerRunner``
/// puts it on stdin and stdout).
///
/// `handle` answers a request (or takes a notification) and returns what to send: the reply, and for `didClose` the
/// cleared diagnostics. Diagnostics of changed documents are published by ``flush()``, which the runner calls once
/// the input it has read is handled — so a burst of keystrokes is linted once, and a request is never delayed by
/// lint work it does not need.
///
/// Which catalog a document belongs to: a document in a directory named `messages` is a message file of the
/// catalog beside that directory — an open catalog buffer there, else `catalog.json`, else the first `*.json` (by
/// name) that is a JSON object with `tips`, `templates`, `events` or `groups`. Any other document is a catalog, and
/// its message files are `messages/` beside it. Open buffers always win over the files on disk.
public final class LanguageServer {
  public enum Lifecycle: Sendable, Hashable {
    case uninitialized, running, shutDown
  }

  public private(set) var lifecycle = Lifecycle.uninitialized
  /// Set by `exit`: 0 after `shutdown`, 1 without (LSP 3.17).
  public private(set) var exitCode: Int32?
  /// The negotiated position encoding.
  public private(set) var encoding = PositionEncoding.utf16
  /// Whether hover may answer Markdown.
  var markdown = true
  let options: LanguageServerOptions
  let live: (any LiveValueSource)?
  /// Requests that fail (logged, and answered with an error).
  let logger: Logger

  var documents: [String: OpenDocument] = [:]
  /// Documents changed since the last ``flush()``, in order.
  var dirty: [String] = []
  /// Bumped by every document event; caches of an older generation are stale.
  var generation = 0
  var projectCache: [Project: (generation: Int, diagnostics: [String: [PublishedDiagnostic]])] = [:]
  var catalogCache: [String: (generation: Int, catalog: String?)] = [:]

  public init(
    options: LanguageServerOptions = LanguageServerOptions(), live: (any LiveValueSource)? = nil,
    logger: Logger = .discarding
  ) {
    self.options = options
    self.live = live
    self.logger = logger
  }

  // MARK: - Messages

  /// One message's bytes (as framed): its replies, or a parse error.
  public func handle(bytes: [UInt8]) -> [JSONValue] {
    let message: JSONValue
    do {
      message = try JSONParser.parse(bytes)
    } catch {
      return [Self.errorReply(id: .null, code: -32700, message: "parse error: \(error.message)")]
    }
    return handle(message)
  }

  /// One message: the messages to send in return.
  public func handle(_ message: JSONValue) -> [JSONValue] {
    guard case .object(let object) = message else {
      return [Self.errorReply(id: .null, code: -32600, message: "invalid request: expected one JSON-RPC object")]
    }
    let id = object["id"]
    guard let method = object["method"]?.stringValue else {
      // A reply to a request of ours (we send none), or garbage.
      if id != nil, object["result"] != nil || object["error"] != nil { return [] }
      return [Self.errorReply(id: id ?? .null, code: -32600, message: "invalid request: no method")]
    }
    let params = object["params"]
    if let id {
      do {
        return [["jsonrpc": "2.0", "id": id, "result": try answer(method, params)]]
      } catch {
        return [Self.errorReply(id: id, code: error.code, message: error.message)]
      }
    }
    return notification(method, params)
  }

  struct ResponseError: Error {
    var code: Int64
    var message: String

    init(_ code: Int64, _ message: String) {
      self.code = code
      self.message = message
    }

    static func invalidParams(_ message: String) -> ResponseError { ResponseError(-32602, message) }
  }

  static func errorReply(id: JSONValue, code: Int64, message: String) -> JSONValue {
    ["jsonrpc": "2.0", "id": id, "error": ["code": .int(code), "message": .string(message)]]
  }

  static func notification(_ method: String, _ params: JSONValue) -> JSONValue {
    ["jsonrpc": "2.0", "method": .string(method), "params": params]
  }

  func answer(_ method: String, _ params: JSONValue?) throws(ResponseError) -> JSONValue {
    switch lifecycle {
    case .uninitialized:
      guard method == "initialize" else { throw ResponseError(-32002, "the server is not initialized") }
    case .shutDown:
      throw ResponseError(-32600, "the server is shut down: only exit is expected")
    case .running:
      if method == "initialize" { throw ResponseError(-32600, "initialize was already sent") }
    }
    switch method {
    case "initialize": return initialize(params)
    case "shutdown":
      lifecycle = .shutDown
      return .null
    case "textDocument/completion": return try completion(params)
    case "textDocument/hover": return try hover(params)
    case "textDocument/definition": return try definition(params)
    case "textDocument/codeAction": return try codeActions(params)
    default: throw ResponseError(-32601, "method not found: \(method)")
    }
  }

  func notification(_ method: String, _ params: JSONValue?) -> [JSONValue] {
    if method == "exit" {
      exitCode = lifecycle == .shutDown ? 0 : 1
      return []
    }
    // Before initialize, and after shutdown, notifications are dropped (LSP 3.17).
    guard lifecycle == .running else { return [] }
    do {
      switch method {
      case "textDocument/didOpen": try didOpen(params)
      case "textDocument/didChange": try didChange(params)
      case "textDocument/didClose": return try didClose(params)
      case "textDocument/didSave": try didSave(params)
      default: break  // initialized, $/cancelRequest, $/setTrace, workspace/*: nothing to do
      }
    } catch {
      logger.error("\(method): \(error.message)")
    }
    return []
  }

  // MARK: - Lifecycle

  func initialize(_ params: JSONValue?) -> JSONValue {
    let capabilities = params?["capabilities"]
    let offered = capabilities?["general"]?["positionEncodings"]?.arrayValue?.compactMap(\.stringValue) ?? []
    encoding = offered.lazy.compactMap(PositionEncoding.init(rawValue:)).first ?? .utf16
    if let formats = capabilities?["textDocument"]?["hover"]?["contentFormat"]?.arrayValue?.compactMap(\.stringValue) {
      markdown = formats.contains("markdown")
    }
    lifecycle = .running
    return [
      "capabilities": [
        "positionEncoding": .string(encoding.rawValue),
        "textDocumentSync": ["openClose": true, "change": 2, "save": ["includeText": false]],
        "completionProvider": ["triggerCharacters": ["\"", ":"], "resolveProvider": false],
        "hoverProvider": true,
        "definitionProvider": true,
        "codeActionProvider": ["codeActionKinds": ["quickfix"]],
      ],
      "serverInfo": ["name": "tipsd", "version": .string(options.serverVersion)],
    ]
  }

  // MARK: - Documents

  static func uri(_ params: JSONValue?) throws(ResponseError) -> String {
    guard let uri = params?["textDocument"]?["uri"]?.stringValue else {
      throw .invalidParams("params.textDocument.uri: expected a string")
    }
    return uri
  }

  func didOpen(_ params: JSONValue?) throws(ResponseError) {
    let uri = try Self.uri(params)
    guard let text = params?["textDocument"]?["text"]?.stringValue else {
      throw .invalidParams("params.textDocument.text: expected a string")
    }
    let version = params?["textDocument"]?["version"]?.intValue ?? 0
    documents[uri] = OpenDocument(TextDocument(uri: uri, version: Int(version), text: text))
    changed(uri)
  }

  func didChange(_ params: JSONValue?) throws(ResponseError) {
    let uri = try Self.uri(params)
    guard let document = documents[uri] else { throw .invalidParams("\(uri) is not open") }
    guard let changes = params?["contentChanges"]?.arrayValue else {
      throw .invalidParams("params.contentChanges: expected an array")
    }
    for change in changes {
      guard let text = change["text"]?.stringValue else {
        throw .invalidParams("params.contentChanges[].text: expected a string")
      }
      if let range = change["range"] {
        document.text.replace(try Self.range(range), with: Array(text.utf8), encoding: encoding)
      } else {
        document.text.replaceAll(with: Array(text.utf8))
      }
    }
    if let version = params?["textDocument"]?["version"]?.intValue { document.text.version = Int(version) }
    document.edited()
    changed(uri)
  }

  func didClose(_ params: JSONValue?) throws(ResponseError) -> [JSONValue] {
    let uri = try Self.uri(params)
    guard let document = documents[uri] else { return [] }
    // Its project's other documents now read the file from disk instead of the buffer.
    let project = project(for: document)
    let others = documents.values.filter { $0 !== document && project != nil && self.project(for: $0) == project }
    documents[uri] = nil
    generation += 1
    dirty.removeAll { $0 == uri }
    for other in others.sorted(by: { $0.text.uri < $1.text.uri }) { markDirty(other.text.uri) }
    return [Self.notification("textDocument/publishDiagnostics", ["uri": .string(uri), "diagnostics": []])]
  }

  func didSave(_ params: JSONValue?) throws(ResponseError) {
    let uri = try Self.uri(params)
    guard documents[uri] != nil else { return }
    changed(uri)
  }

  func changed(_ uri: String) {
    generation += 1
    markDirty(uri)
  }

  func markDirty(_ uri: String) {
    if !dirty.contains(uri) { dirty.append(uri) }
  }

  static func position(_ json: JSONValue?) throws(ResponseError) -> LSPPosition {
    guard let line = json?["line"]?.intValue, let character = json?["character"]?.intValue, line >= 0, character >= 0
    else { throw .invalidParams("expected a position {line, character}") }
    return LSPPosition(line: Int(line), character: Int(character))
  }

  static func range(_ json: JSONValue?) throws(ResponseError) -> LSPRange {
    LSPRange(start: try position(json?["start"]), end: try position(json?["end"]))
  }

  func json(_ position: LSPPosition) -> JSONValue {
    ["line": .int(Int64(position.line)), "character": .int(Int64(position.character))]
  }

  func json(_ document: OpenDocument, _ start: Int, _ end: Int) -> JSONValue {
    let range = document.text.range(start, end, encoding: encoding)
    return ["start": json(range.start), "end": json(range.end)]
  }

  // MARK: - Diagnostics

  /// `textDocument/publishDiagnostics` for every document changed since the last call, and for the other open
  /// documents of their catalogs (a message file's edit changes the catalog's `missing-copy`, and the reverse).
  public func flush() -> [JSONValue] {
    guard !dirty.isEmpty else { return [] }
    var out: [JSONValue] = []
    var published: Set<String> = []
    for uri in dirty {
      guard let document = documents[uri], !published.contains(uri) else { continue }
      if let project = project(for: document) {
        let diagnostics = projectDiagnostics(project)
        for other in documents.values.sorted(by: { $0.text.uri < $1.text.uri })
        where !published.contains(other.text.uri) && self.project(for: other) == project {
          out.append(publish(other, diagnostics[other.text.uri] ?? []))
          published.insert(other.text.uri)
        }
      } else {
        out.append(publish(document, standaloneDiagnostics(document)))
        published.insert(uri)
      }
    }
    dirty.removeAll()
    return out
  }

  func publish(_ document: OpenDocument, _ diagnostics: [PublishedDiagnostic]) -> JSONValue {
    Self.notification(
      "textDocument/publishDiagnostics",
      [
        "uri": .string(document.text.uri), "version": .int(Int64(document.text.version)),
        "diagnostics": .array(diagnostics.map(\.json)),
      ])
  }

  /// The diagnostics of an open document as they stand now.
  func diagnostics(of document: OpenDocument) -> [PublishedDiagnostic] {
    if let project = project(for: document) { return projectDiagnostics(project)[document.text.uri] ?? [] }
    return standaloneDiagnostics(document)
  }

  /// A catalog and its message files: what one lint run covers.
  struct Project: Hashable {
    /// The catalog as the lint names it: its path, or an unsaved buffer's URI.
    var catalogFile: String
    var catalogPath: String?
    var messagesDirectory: String?
  }

  func project(for document: OpenDocument) -> Project? {
    guard document.isCatalogLike else { return nil }
    if document.isMessages, let path = document.path {
      let directory = Paths.directory(path)
      guard let catalog = findCatalog(messagesDirectory: directory) else { return nil }
      return Project(catalogFile: catalog, catalogPath: catalog, messagesDirectory: directory)
    }
    guard let path = document.path else {
      return Project(catalogFile: document.text.uri, catalogPath: nil, messagesDirectory: nil)
    }
    let messages = Paths.join(Paths.directory(path), "messages")
    let hasMessages =
      System.isDirectory(messages)
      || documents.values.contains { $0.isMessages && $0.path.map(Paths.directory) == messages }
    return Project(catalogFile: path, catalogPath: path, messagesDirectory: hasMessages ? messages : nil)
  }

  /// The catalog a messages directory belongs to (see the type's documentation).
  func findCatalog(messagesDirectory: String) -> String? {
    if let cached = catalogCache[messagesDirectory], cached.generation == generation { return cached.catalog }
    let parent = Paths.directory(messagesDirectory)
    var names = Set(((try? System.listDirectory(parent)) ?? []).filter { $0.hasSuffix(".json") })
    var buffers: [String: [UInt8]] = [:]
    for document in documents.values where !document.isMessages {
      guard let path = document.path, Paths.directory(path) == parent else { continue }
      names.insert(Paths.name(path))
      buffers[Paths.name(path)] = document.text.bytes
    }
    let ordered = names.sorted { ($0 != "catalog.json" ? 1 : 0, $0) < ($1 != "catalog.json" ? 1 : 0, $1) }
    var found: String?
    for name in ordered.prefix(64) {
      let path = Paths.join(parent, name)
      guard let bytes = buffers[name] ?? (try? System.readFile(path)), bytes.count <= 16 << 20 else { continue }
      let tree = SyntaxTree(bytes)
      if let root = tree.root, tree[root].kind == .object,
        ["tips", "templates", "events", "groups"].contains(where: { tree.member(root, $0) != nil })
      {
        found = path
        break
      }
    }
    catalogCache[messagesDirectory] = (generation, found)
    return found
  }

  /// Lints a project (buffers over files) and sorts the diagnostics into its open documents.
  func projectDiagnostics(_ project: Project) -> [String: [PublishedDiagnostic]] {
    if let cached = projectCache[project], cached.generation == generation { return cached.diagnostics }
    let catalogDocument = documents.values.first { !$0.isMessages && $0.fileKey == project.catalogFile }
    guard let bytes = catalogDocument?.text.bytes ?? project.catalogPath.flatMap({ try? System.readFile($0) }) else {
      return [:]
    }
    var overrides: [String: [UInt8]] = [:]
    if let directory = project.messagesDirectory {
      for document in documents.values where document.isMessages {
        guard let path = document.path, Paths.directory(path) == directory else { continue }
        overrides[Paths.name(path)] = document.text.bytes
      }
    }
    let report = CatalogLoader.check(
      bytes: bytes, file: project.catalogFile, messagesDirectory: project.messagesDirectory, options: options.lint,
      messageFiles: overrides)
    var byFile: [String: [Diagnostic]] = [:]
    for diagnostic in report.diagnostics { byFile[diagnostic.file, default: []].append(diagnostic) }
    var result: [String: [PublishedDiagnostic]] = [:]
    for document in documents.values where self.project(for: document) == project {
      let file: String
      if document.isMessages, let directory = project.messagesDirectory, let path = document.path {
        file = Paths.join(directory, Paths.name(path))
      } else {
        file = project.catalogFile
      }
      result[document.text.uri] = (byFile[file] ?? []).map { publishable($0, in: document) }
    }
    projectCache[project] = (generation, result)
    return result
  }

  /// A message file without a catalog: its JSON syntax, and a note that nothing else is checked. Another JSON
  /// document that is no catalog: nothing.
  func standaloneDiagnostics(_ document: OpenDocument) -> [PublishedDiagnostic] {
    guard document.isMessages else { return [] }
    var out: [PublishedDiagnostic] = []
    do {
      _ = try JSONParser.parse(document.text.bytes)
    } catch {
      let diagnostic = Diagnostic(
        severity: .error, check: LintCheck.json.rawValue, file: document.fileKey, path: "$",
        message: "invalid JSON: \(error.message)")
      let (start, end) = errorRange(document, at: error.offset)
      out.append(
        PublishedDiagnostic(diagnostic, start: start, end: end, json: diagnosticJSON(diagnostic, document, start, end)))
    }
    let note = Diagnostic(
      severity: .warning, check: "no-catalog", file: document.fileKey, path: "$",
      message:
        "no catalog found for this message file (tipsd lsp looks beside the messages directory for catalog.json, "
        + "then any *.json with \"tips\"), so its keys are not checked")
    var json = diagnosticJSON(note, document, 0, 0)
    json = json.settingSeverity(3)
    out.append(PublishedDiagnostic(note, start: 0, end: 0, json: json))
    return out
  }

  /// A lint diagnostic with its range: the JSON value (or key) its path names, found at the lint's position — the
  /// whole value, except the document itself (its first character: a squiggle over every line would hide the rest).
  /// A JSON syntax error marks the character at the error.
  func publishable(_ diagnostic: Diagnostic, in document: OpenDocument) -> PublishedDiagnostic {
    var start = 0
    var end = 0
    if let line = diagnostic.line, let column = diagnostic.column {
      let offset = document.text.offset(lintLine: line, column: column)
      let tree = document.tree
      if diagnostic.check != LintCheck.json.rawValue, let node = tree.node(startingAt: offset) {
        start = offset
        end = node == tree.root ? offset + 1 : tree[node].end
      } else {
        (start, end) = errorRange(document, at: offset)
      }
    }
    return PublishedDiagnostic(
      diagnostic, start: start, end: end, json: diagnosticJSON(diagnostic, document, start, end))
  }

  /// One character at `offset` (none at a line's end).
  func errorRange(_ document: OpenDocument, at offset: Int) -> (Int, Int) {
    let bytes = document.text.bytes
    let start = min(max(0, offset), bytes.count)
    guard start < bytes.count, bytes[start] != 0x0A, bytes[start] != 0x0D else { return (start, start) }
    return (start, start + TextDocument.scalarLength(bytes[start]))
  }

  func diagnosticJSON(_ diagnostic: Diagnostic, _ document: OpenDocument, _ start: Int, _ end: Int) -> JSONValue {
    [
      "range": json(document, start, end), "severity": diagnostic.severity == .error ? 1 : 2,
      "code": .string(diagnostic.check), "source": "tipsd", "message": .string(diagnostic.message),
    ]
  }
}

/// A diagnostic as published: the lint's, its byte range in the document, and its LSP JSON.
struct PublishedDiagnostic {
  var lint: Diagnostic
  var start: Int
  var end: Int
  var json: JSONValue

  init(_ lint: Diagnostic, start: Int, end: Int, json: JSONValue) {
    self.lint = lint
    self.start = start
    self.end = end
    self.json = json
  }
}

extension JSONValue {
  fileprivate func settingSeverity(_ severity: Int64) -> JSONValue {
    guard case .object(var object) = self else { return self }
    object["severity"] = .int(severity)
    return .object(object)
  }
}

/// An open document with its syntax tree and outline, rebuilt after each edit.
final class OpenDocument {
  var text: TextDocument
  /// The file it names (`file:` URIs only).
  let path: String?
  /// Whether it is a translators' message file (`…/messages/{locale}.json`).
  let isMessages: Bool
  private var cachedTree: SyntaxTree?
  private var cachedOutline: CatalogOutline?

  init(_ text: TextDocument) {
    self.text = text
    path = FileURI.path(text.uri)
    isMessages = path.map { Paths.name(Paths.directory($0)) == "messages" && $0.hasSuffix(".json") } ?? false
  }

  /// The name lint diagnostics carry for it.
  var fileKey: String { path ?? text.uri }

  /// Whether it is a catalog (or a message file) to check: any document but a JSON object whose top-level keys
  /// are all foreign to catalogs (`package.json`, `tsconfig.json`: an editor set to start the server for every JSON
  /// file gets nothing for those). A key being typed counts when it begins a catalog key; `$schema` when it names a
  /// catalog schema.
  var isCatalogLike: Bool {
    if isMessages { return true }
    let tree = self.tree
    guard let root = tree.root, tree[root].kind == .object, !tree[root].members.isEmpty else { return true }
    return tree[root].members.contains { member in
      let key = tree[member.key].text
      if key == "$schema" { return member.value.map { tree[$0].text.contains("catalog") } ?? true }
      return Catalog.keys.contains { $0 != "$schema" && $0.hasPrefix(key) }
    }
  }

  var tree: SyntaxTree {
    if let cachedTree { return cachedTree }
    let tree = SyntaxTree(text.bytes)
    cachedTree = tree
    return tree
  }

  var outline: CatalogOutline {
    if let cachedOutline { return cachedOutline }
    let outline = CatalogOutline(tree)
    cachedOutline = outline
    return outline
  }

  func edited() {
    cachedTree = nil
    cachedOutline = nil
  }
}
