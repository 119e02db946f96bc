import Foundation
import TipsCatalog

/// Paths of the fixtures and of the repository's demo catalog, found from this file.
enum Paths {
  static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  static let fixtures = tests.appendingPathComponent("Fixtures/lint").path
  static let repository = tests.deletingLastPathComponent().deletingLastPathComponent()
  static let demo = repository.appendingPathComponent("catalog/demo.json").path
  static let demoMessages = repository.appendingPathComponent("catalog/messages").path

  static func fixture(_ name: String) -> String { "\(fixtures)/\(name)" }
}

/// A fresh directory under the system's temporary directory.
func temporaryDirectory() -> String {
  let path = NSTemporaryDirectory() + "tipscatalog-" + UUID().uuidString
  try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

/// Writes `files` (relative path → text) under a new temporary directory; returns it.
func writeFiles(_ files: [String: String]) throws -> String {
  let directory = temporaryDirectory()
  for (name, text) in files {
    let path = "\(directory)/\(name)"
    try FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try text.write(toFile: path, atomically: true, encoding: .utf8)
  }
  return directory
}

/// Lints catalog text (and message files, locale → text) written to a temporary directory.
func lint(_ catalog: String, messages: [String: String]? = nil, options: LintOptions = LintOptions()) throws
  -> CatalogReport
{
  var files = ["catalog.json": catalog]
  for (locale, text) in messages ?? [:] { files["messages/\(locale).json"] = text }
  let directory = try writeFiles(files)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  return CatalogLoader.load(
    path: "\(directory)/catalog.json", messagesDirectory: messages == nil ? nil : "\(directory)/messages",
    options: options)
}

extension CatalogReport {
  /// Diagnostics of one check.
  func of(_ check: LintCheck) -> [Diagnostic] { diagnostics.filter { $0.check == check.rawValue } }
}

/// A well-formed tip that passes every check against `events: [a.opened]`, with `extra` members added.
func cleanTip(_ id: String = "a.tip", _ extra: String = "") -> String {
  """
  {"id": "\(id)", "title": "A", "removal": "r", "sync": "local",
   "rules": [{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1}}]\(extra.isEmpty ? "" : ", " + extra)}
  """
}

let declaredEvents = #""events": [{"id": "a.opened", "description": "A screen appeared"}]"#
