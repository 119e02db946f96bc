import TipsJSON

/// How `tipsd lint` prints a report.
public enum ReportFormat: String, Sendable, Hashable, CaseIterable {
  /// `catalog/demo.json:12:7: error: tips[0].id: … [id-pattern]`, one line per diagnostic, then a summary.
  case text
  /// One JSON object: `diagnostics` (severity, check, file, path, line, column, message), `summary`, `simulation`.
  case json
  /// GitHub Actions workflow commands (`::error file=…,line=…,col=…,title=tipsd lint (check)::…`), annotating the
  /// pull request's files.
  case github
}

/// What loading and linting a catalog found (``CatalogLoader/load(path:messagesDirectory:options:)``).
public struct CatalogReport: Sendable {
  /// The catalog with its message files applied; nil when there is any error.
  public var catalog: Catalog?
  /// Every finding, by file (the catalog first, then message files by name) and position.
  public var diagnostics: [Diagnostic]
  /// `--simulate`'s result; nil when not asked for, or when errors prevented it.
  public var simulation: Simulation?
  /// The files read: the catalog, then the message files.
  public var files: [String]

  public init(catalog: Catalog?, diagnostics: [Diagnostic], simulation: Simulation? = nil, files: [String]) {
    self.catalog = catalog
    self.diagnostics = diagnostics
    self.simulation = simulation
    self.files = files
  }

  public var errors: [Diagnostic] { diagnostics.filter { $0.severity == .error } }
  public var warnings: [Diagnostic] { diagnostics.filter { $0.severity == .warning } }

  /// `tipsd lint`'s exit status: 1 with any error, else 0 (warnings alone pass).
  public var exitStatus: Int32 { errors.isEmpty ? 0 : 1 }

  /// The report in `format`, ending with a newline.
  public func rendered(_ format: ReportFormat) -> String {
    switch format {
    case .text: renderedText()
    case .json: renderedJSON()
    case .github: renderedGitHub()
    }
  }

  var summaryLine: String {
    let errorCount = errors.count
    let warningCount = warnings.count
    let name = files.first ?? "catalog"
    return
      "\(name): \(errorCount) error\(errorCount == 1 ? "" : "s"), \(warningCount) warning\(warningCount == 1 ? "" : "s")"
  }

  func renderedText() -> String {
    var out = ""
    for diagnostic in diagnostics { out += diagnostic.textLine + "\n" }
    out += summaryLine + "\n"
    if let simulation { out += simulation.textLines.joined(separator: "\n") + "\n" }
    return out
  }

  func renderedJSON() -> String {
    var list: [JSONValue] = []
    for diagnostic in diagnostics {
      list.append([
        "severity": .string(diagnostic.severity.rawValue), "check": .string(diagnostic.check),
        "file": .string(diagnostic.file), "path": .string(diagnostic.path),
        "line": diagnostic.line.map { .int(Int64($0)) } ?? .null,
        "column": diagnostic.column.map { .int(Int64($0)) } ?? .null, "message": .string(diagnostic.message),
      ])
    }
    var object: JSONObject = [
      "diagnostics": .array(list),
      "summary": [
        "errors": .int(Int64(errors.count)), "warnings": .int(Int64(warnings.count)),
        "files": .array(files.map { .string($0) }),
      ],
    ]
    if let simulation { object["simulation"] = simulation.json }
    return JSONValue.object(object).prettyString() + "\n"
  }

  func renderedGitHub() -> String {
    var out = ""
    for diagnostic in diagnostics {
      var properties = ["file=\(Self.githubProperty(diagnostic.file))"]
      if let line = diagnostic.line { properties.append("line=\(line)") }
      if let column = diagnostic.column { properties.append("col=\(column)") }
      properties.append("title=\(Self.githubProperty("tipsd lint (\(diagnostic.check))"))")
      let command = diagnostic.severity == .error ? "error" : "warning"
      out += "::\(command) \(properties.joined(separator: ","))::"
      out += Self.githubData("\(diagnostic.path): \(diagnostic.message)") + "\n"
    }
    out += summaryLine + "\n"
    if let simulation { out += simulation.textLines.joined(separator: "\n") + "\n" }
    return out
  }

  /// A workflow command's message: `%`, CR and LF escaped (GitHub's `escapeData`).
  static func githubData(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "%": out += "%25"
      case "\r": out += "%0D"
      case "\n": out += "%0A"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  /// A workflow command's property value: also `:` and `,` escaped (GitHub's `escapeProperty`).
  static func githubProperty(_ text: String) -> String {
    var out = ""
    for scalar in githubData(text).unicodeScalars {
      switch scalar {
      case ":": out += "%3A"
      case ",": out += "%2C"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}
