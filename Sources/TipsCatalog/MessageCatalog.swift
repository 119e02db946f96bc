import TipsEngine
import TipsJSON
import TipsSystem

/// Translators' message files (`--messages DIR`): `DIR/{locale}.json`, the files a React Native app already keeps
/// its copy in (seed 000), with the tips' copy under a `tipkit` namespace:
///
/// ```json
/// {"tipkit": {"filter.tip.title": "…", "filter.tip.message": "…", "filter.tip.actions.learn-more": "…",
///             "filter.tip.variants.friendly.title": "…"},
///  "home": {"greeting": "…"}}
/// ```
///
/// Top-level flat keys (`"tipkit.filter.tip.title": "…"`) are read too; other top-level keys belong to the app and
/// are ignored. A key names a tip by the longest tip (or template) id that prefixes it, then `title`, `message`,
/// `actions.<actionId>` or `variants.<name>.title|message|actions.<actionId>`; template copy uses the template's
/// id pattern (`trail.new.{trailId}.title`).
public struct MessageCatalog: Sendable {
  /// One copy string of a message file.
  public struct Entry: Sendable, Hashable {
    /// The key without the `tipkit.` namespace: `filter.tip.title`.
    public var key: String
    public var value: String
    /// Where it sits in its file: `tipkit.filter.tip.title`.
    public var path: String
    /// The file and line it was read from, when the format knows lines (XLIFF: `ja.xliff:12`).
    public var place: String?

    public init(key: String, value: String, path: String, place: String? = nil) {
      self.key = key
      self.value = value
      self.path = path
      self.place = place
    }
  }

  /// One locale's file.
  public struct File: Sendable {
    public var locale: String
    /// The file as found (`DIR/ja.json`).
    public var path: String
    /// In file order; a key given twice (nested and flat) keeps its first place and its last value.
    public var entries: [Entry]
    var positions: JSONPositions?

    public init(locale: String, path: String, entries: [Entry]) {
      self.locale = locale
      self.path = path
      self.entries = entries
    }

    /// The value of `key` (without the namespace).
    public subscript(key: String) -> String? {
      entries.first { $0.key == key }?.value
    }
  }

  /// The namespace tips' copy lives under.
  public static let namespace = "tipkit"

  /// Files in locale order (by file name).
  public var files: [File]

  public init(files: [File] = []) {
    self.files = files
  }

  /// The file of `locale`.
  public func file(_ locale: String) -> File? {
    files.first { $0.locale == locale }
  }

  /// Reads every `*.json` file of `directory`; the first malformed file is an error naming it and the JSON path.
  public static func load(directory: String) throws(CatalogError) -> MessageCatalog {
    let (catalog, problems) = scan(directory: directory)
    if let problem = problems.first(where: { $0.severity == .error }) {
      throw CatalogError(file: problem.file, path: problem.path == "$" ? nil : problem.path, message: problem.message)
    }
    return catalog
  }

  /// Decodes one message file's bytes; errors name `path` and the JSON path.
  public static func parse(_ bytes: [UInt8], locale: String, path: String) throws(CatalogError) -> File {
    let (file, problems) = parseCollecting(bytes, locale: locale, path: path)
    if let problem = problems.first { throw CatalogError(file: path, path: problem.path, message: problem.message) }
    return file ?? File(locale: locale, path: path, entries: [])
  }

  /// Every file of `directory`, with a diagnostic (check `io`, `json`, `duplicate-key` or `messages`) for each
  /// problem; what could be read is kept. `overrides` (file name → bytes) are read instead of the files of those
  /// names, which need not exist.
  static func scan(directory: String, overrides: [String: [UInt8]] = [:]) -> (MessageCatalog, [Diagnostic]) {
    var diagnostics: [Diagnostic] = []
    var names: [String]
    do {
      names = try System.listDirectory(directory)
      let missing = overrides.keys.filter { !names.contains($0) }
      if !missing.isEmpty {
        names = (names + missing).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
      }
    } catch {
      return (
        MessageCatalog(),
        [
          Diagnostic(
            .io, file: directory, path: "$", position: nil,
            message: "cannot read the messages directory: \(error.reason)")
        ]
      )
    }
    var files: [File] = []
    for name in names where name.hasSuffix(".json") && !name.hasPrefix(".") {
      let path = directory.hasSuffix("/") ? directory + name : "\(directory)/\(name)"
      let locale = String(name.dropLast(".json".count))
      guard TipLocalization.isLocaleTag(locale) else {
        diagnostics.append(
          Diagnostic(
            .messages, file: path, path: "$", position: nil,
            message: "the file name is not a locale tag such as ja.json or zh-Hans.json"))
        continue
      }
      let bytes: [UInt8]
      do {
        if let buffer = overrides[name] { bytes = buffer } else { bytes = try System.readFile(path) }
      } catch {
        diagnostics.append(
          Diagnostic(.io, file: path, path: "$", position: nil, message: "cannot read it: \(error.reason)"))
        continue
      }
      let (file, problems) = parseCollecting(bytes, locale: locale, path: path)
      diagnostics += problems.map { problem in
        Diagnostic(problem.check, file: path, path: problem.path, position: problem.position, message: problem.message)
      }
      if let file { files.append(file) }
    }
    return (MessageCatalog(files: files), diagnostics)
  }

  struct Problem {
    var check: LintCheck
    var path: String
    var position: SourcePosition?
    var message: String
  }

  /// Decodes a file, keeping every entry it can and a problem for each value that is not a string.
  static func parseCollecting(_ bytes: [UInt8], locale: String, path: String) -> (File?, [Problem]) {
    let json: JSONValue
    do {
      json = try JSONParser.parse(bytes)
    } catch {
      return (
        nil,
        [
          Problem(
            check: .json, path: "$", position: JSONPositions(bytes).position(atOffset: error.offset),
            message: "invalid JSON: \(error.message)")
        ]
      )
    }
    let positions = JSONPositions(bytes)
    var problems: [Problem] = positions.duplicateKeys.map { duplicate in
      Problem(
        check: .duplicateKey, path: duplicate.path, position: positions.position(atOffset: duplicate.offset),
        message: "this key appears more than once in its object; only the last value counts")
    }
    guard case .object(let object) = json else {
      problems.append(
        Problem(
          check: .messages, path: "$", position: positions.position(of: "$"),
          message: "a message file must be a JSON object"))
      return (nil, problems)
    }
    var entries: [Entry] = []
    var indexByKey: [String: Int] = [:]
    func add(_ key: String, _ value: JSONValue, _ entryPath: String) {
      guard case .string(let text) = value else {
        problems.append(
          Problem(
            check: .messages, path: entryPath, position: positions.position(of: entryPath),
            message: "expected a string, got \(value.typeName)"))
        return
      }
      if let index = indexByKey[key] {
        entries[index].value = text
        entries[index].path = entryPath
      } else {
        indexByKey[key] = entries.count
        entries.append(Entry(key: key, value: text, path: entryPath))
      }
    }
    let prefix = namespace + "."
    for (key, value) in object {
      if key == namespace {
        guard case .object(let members) = value else {
          problems.append(
            Problem(
              check: .messages, path: key, position: positions.position(of: key),
              message: "expected an object of copy strings, got \(value.typeName)"))
          continue
        }
        for (member, text) in members { add(member, text, "\(key).\(member)") }
      } else if key.hasPrefix(prefix) {
        add(String(key.dropFirst(prefix.count)), value, key)
      }
    }
    var file = File(locale: locale, path: path, entries: entries)
    file.positions = positions
    return (file, problems)
  }
}

/// Resolves message keys (`filter.tip.actions.learn-more`) to a tip or template and a copy member.
struct CopyResolver {
  enum Owner: Hashable {
    case tip(Int)
    case template(Int)
  }

  struct Target: Hashable {
    var owner: Owner
    var member: CopyMember
  }

  /// (id, owner, object), longest ids first.
  private let owners: [(id: String, owner: Owner, object: JSONObject)]

  init(tips: [JSONObject], templates: [JSONObject]) {
    var owners: [(id: String, owner: Owner, object: JSONObject)] = []
    for (index, object) in tips.enumerated() {
      if let id = object["id"]?.stringValue { owners.append((id, .tip(index), object)) }
    }
    for (index, object) in templates.enumerated() {
      if let id = object["id"]?.stringValue { owners.append((id, .template(index), object)) }
    }
    self.owners = owners.sorted { $0.id.count > $1.id.count }
  }

  /// The tip or template the longest id prefix names, and the member the rest names.
  func resolve(_ key: String) -> Result<Target, Copy.Unresolved> {
    guard let match = owners.first(where: { key.hasPrefix($0.id + ".") }) else { return .failure(.unknownTip) }
    let suffix = String(key.dropFirst(match.id.count + 1))
    return Copy.member(forSuffix: suffix, in: match.object).map { Target(owner: match.owner, member: $0) }
  }
}
