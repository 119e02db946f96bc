public import TipsEngine
public import TipsJSON

/// A content tip made from a pattern (seed 002's custom identifiers: one `NewTrailTip`, one id per trail):
///
/// ```json
/// {"id": "trail.new.{trailId}", "title": "New: {trailName}",
///  "rules": [{"event": "trail.viewed", "where": {"trailId": "{trailId}"}, "count": {"gte": 1}}]}
/// ```
///
/// Any tip key may appear. `{name}` in any string value (not in object keys) is a placeholder; `{{` and `}}` are
/// literal braces. ``instantiate(values:idPattern:)`` substitutes values and decodes the result like any tip.
public struct TipTemplate: Sendable, Hashable {
  /// The id pattern, e.g. `trail.new.{trailId}`; it holds at least one placeholder.
  public let id: String
  /// The placeholder names found anywhere in the template's string values, sorted, each once.
  public let placeholders: [String]
  /// The template as declared (after message files are applied, with their copy).
  public let json: JSONObject

  /// Decodes a template and checks it: an `id` with at least one placeholder, no stray brace in any string, and
  /// an instantiation with each placeholder's value set to its own name that decodes as a tip. Errors name the
  /// path under `path` (`templates[0].rules[0].count`).
  public init(json: JSONValue, path: String) throws(EngineError) {
    guard case .object(let object) = json else {
      throw JSONPath.fail(path, "expected an object, got \(json.typeName)")
    }
    guard let idValue = object["id"] else { throw JSONPath.fail(path, "missing required key \"id\"") }
    let idPath = JSONPath.join(path, "id")
    guard case .string(let id) = idValue, !id.isEmpty else {
      throw JSONPath.fail(idPath, "expected a non-empty string, got \(idValue.typeName)")
    }
    var names: Set<String> = []
    try Self.scan(json, path: path, into: &names)
    guard let pieces = TemplateText.parse(id), pieces.contains(where: \.isPlaceholder) else {
      throw JSONPath.fail(idPath, "a template id needs at least one placeholder, e.g. trail.new.{trailId}")
    }
    self.id = id
    self.json = object
    self.placeholders = names.sorted()
    _ = try instantiate(values: sampleValues(lowercased: false), idPattern: .any, path: path)
  }

  /// The tip for `values`: each `{name}` in every string value replaced. A string that is exactly `"{name}"`
  /// takes the value with its JSON type (so `where` can match a number); a placeholder within a longer string
  /// takes the value as text (strings as they are, numbers and booleans as JSON). Values must be strings, numbers
  /// or booleans, one for each placeholder and no more. The result is decoded like any tip, and its id must follow
  /// `idPattern`; the same values always make the same id.
  ///
  /// Errors: `values.x` missing, not a placeholder of this template, or not a scalar
  /// (``EngineError/invalidArgument(argument:problem:)``); a definition that does not decode
  /// (``EngineError/invalidDefinition(path:message:)``); an id that does not follow the pattern (`values`).
  public func instantiate(values: JSONObject, idPattern: IDPattern = .featurePurpose) throws(EngineError)
    -> TipDefinition
  {
    try instantiate(values: values, idPattern: idPattern, path: "")
  }

  func instantiate(values: JSONObject, idPattern: IDPattern, path: String) throws(EngineError) -> TipDefinition {
    let list = placeholders.joined(separator: ", ")
    for (name, value) in values {
      guard placeholders.contains(name) else {
        throw .invalidArgument(
          argument: "values.\(name)", problem: "is not a placeholder of template \(id) (it has \(list))")
      }
      switch value {
      case .string, .int, .double, .bool: continue
      case .null, .array, .object:
        throw .invalidArgument(argument: "values.\(name)", problem: "must be a string, number or boolean")
      }
    }
    for name in placeholders where values[name] == nil {
      throw .invalidArgument(argument: "values.\(name)", problem: "is missing (template \(id) needs \(list))")
    }
    let tip = try TipDefinition(json: Self.substitute(.object(json), values), path: path)
    guard idPattern.matches(tip.id) else {
      throw .invalidArgument(
        argument: "values", problem: "make the id \"\(tip.id)\", which does not follow the id pattern \(idPattern)")
    }
    return tip
  }

  /// Each placeholder's value set to its own name (`lowercased`: in lowercase, with characters other than
  /// `a-z0-9-` turned into `-`, so a sample id can follow `feature.purpose`).
  func sampleValues(lowercased: Bool) -> JSONObject {
    var values = JSONObject()
    for name in placeholders {
      guard lowercased else {
        values[name] = .string(name)
        continue
      }
      var sample = String(
        name.lowercased().unicodeScalars.map {
          ("a"..."z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "-"
        })
      if let first = sample.unicodeScalars.first, !("a"..."z").contains(first) { sample = "x" + sample }
      values[name] = .string(sample)
    }
    return values
  }

  /// Whether some values could make this template's id equal `id` (placeholders stand for any non-empty text).
  public func couldMake(id candidate: String) -> Bool {
    guard let pieces = TemplateText.parse(id) else { return false }
    return TemplateText.matches(pieces[...], Substring(candidate))
  }

  // MARK: - Strings

  /// Checks every string value under `value` for stray braces, collecting placeholder names.
  static func scan(_ value: JSONValue, path: String, into names: inout Set<String>) throws(EngineError) {
    switch value {
    case .string(let text):
      guard let pieces = TemplateText.parse(text) else {
        throw JSONPath.fail(path, "has a { or } that is not a placeholder (write {{ or }} for a literal brace)")
      }
      for case .placeholder(let name) in pieces { names.insert(name) }
    case .array(let elements):
      for (index, element) in elements.enumerated() { try scan(element, path: "\(path)[\(index)]", into: &names) }
    case .object(let object):
      for (key, member) in object { try scan(member, path: JSONPath.join(path, key), into: &names) }
    case .null, .bool, .int, .double:
      break
    }
  }

  /// `value` with placeholders substituted (templates are scanned before, so every string parses).
  static func substitute(_ value: JSONValue, _ values: JSONObject) -> JSONValue {
    switch value {
    case .string(let text):
      guard let pieces = TemplateText.parse(text) else { return value }
      if pieces.count == 1, case .placeholder(let name) = pieces[0], let whole = values[name] { return whole }
      var result = ""
      for piece in pieces {
        switch piece {
        case .literal(let literal): result += literal
        case .placeholder(let name):
          switch values[name] {
          case .string(let string)?: result += string
          case let other?: result += other.jsonString
          case nil: result += "{\(name)}"
          }
        }
      }
      return .string(result)
    case .array(let elements):
      return .array(elements.map { substitute($0, values) })
    case .object(let object):
      return .object(JSONObject(object.map { ($0.key, substitute($0.value, values)) }))
    case .null, .bool, .int, .double:
      return value
    }
  }

}

/// JSON paths as the engine's decoders write them: keys joined with `.`, `$` for the root.
enum JSONPath {
  static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

  static func fail(_ path: String, _ message: String) -> EngineError {
    .invalidDefinition(path: path.isEmpty ? "$" : path, message: message)
  }
}

/// Template text: literals, `{name}` placeholders (`name` is `[A-Za-z_][A-Za-z0-9_]*`), `{{` and `}}` for braces.
enum TemplateText {
  enum Piece: Sendable, Hashable {
    case literal(String)
    case placeholder(String)

    var isPlaceholder: Bool {
      if case .placeholder = self { return true }
      return false
    }
  }

  /// The pieces of `text`, adjacent literals merged; nil when a brace is neither doubled nor part of a placeholder.
  static func parse(_ text: String) -> [Piece]? {
    let scalars = Array(text.unicodeScalars)
    var pieces: [Piece] = []
    var literal = String.UnicodeScalarView()
    var index = 0
    func flush() {
      if !literal.isEmpty {
        pieces.append(.literal(String(literal)))
        literal = String.UnicodeScalarView()
      }
    }
    while index < scalars.count {
      let scalar = scalars[index]
      if scalar == "{" {
        if index + 1 < scalars.count, scalars[index + 1] == "{" {
          literal.append("{")
          index += 2
          continue
        }
        var end = index + 1
        while end < scalars.count, isNameScalar(scalars[end], first: end == index + 1) { end += 1 }
        guard end > index + 1, end < scalars.count, scalars[end] == "}" else { return nil }
        flush()
        pieces.append(.placeholder(String(String.UnicodeScalarView(scalars[(index + 1)..<end]))))
        index = end + 1
      } else if scalar == "}" {
        guard index + 1 < scalars.count, scalars[index + 1] == "}" else { return nil }
        literal.append("}")
        index += 2
      } else {
        literal.append(scalar)
        index += 1
      }
    }
    flush()
    return pieces
  }

  /// The placeholder names in `text` (nil when it does not parse).
  static func placeholders(in text: String) -> [String]? {
    guard let pieces = parse(text) else { return nil }
    return pieces.compactMap { piece in
      if case .placeholder(let name) = piece { return name }
      return nil
    }
  }

  static func isNameScalar(_ scalar: Unicode.Scalar, first: Bool) -> Bool {
    if ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_" { return true }
    return !first && ("0"..."9").contains(scalar)
  }

  /// Whether `text` can be produced by `pieces` with each placeholder standing for non-empty text.
  static func matches(_ pieces: ArraySlice<Piece>, _ text: Substring) -> Bool {
    guard let first = pieces.first else { return text.isEmpty }
    switch first {
    case .literal(let literal):
      guard text.hasPrefix(literal) else { return false }
      return matches(pieces.dropFirst(), text.dropFirst(literal.count))
    case .placeholder:
      guard !text.isEmpty else { return false }
      var end = text.index(after: text.startIndex)
      while true {
        if matches(pieces.dropFirst(), text[end...]) { return true }
        if end == text.endIndex { return false }
        end = text.index(after: end)
      }
    }
  }
}
