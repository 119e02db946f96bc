import Foundation
import TipsEngine
import TipsJSON

@testable import TipsStore

/// A fresh directory under the system temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
  let path: String

  init() {
    let base = FileManager.default.temporaryDirectory.path
    var template = Array("\(base)/tipsd-store-test-XXXXXX".utf8CString)
    let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(created != nil, "mkdtemp failed")
    path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// A path inside the directory.
  func file(_ name: String) -> String { "\(path)/\(name)" }

  func remove() {
    try? FileManager.default.removeItem(atPath: path)
  }
}

/// The bytes of the file at `path` (empty when it cannot be read).
func contents(of path: String) -> Data {
  FileManager.default.contents(atPath: path) ?? Data()
}

func fileExists(_ path: String) -> Bool {
  FileManager.default.fileExists(atPath: path)
}

/// The directory holding the test fixtures (beside this source file).
let fixturesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
  .path

/// A donation at `at` with optional associated values.
func donation(_ at: Timestamp, _ info: JSONObject? = nil) -> Donation {
  Donation(at: at, info: info)
}

/// Brings an empty database to schema `version` by running the migrations up to it, as a build of that version did.
func createDatastore(_ connection: SQLiteConnection, version: Int) throws {
  for migration in Schema.migrations where migration.version <= version {
    try connection.execute(migration.sql)
    if let transform = migration.transform { try transform(connection) }
    try connection.execute("UPDATE schema_version SET version = \(migration.version)")
  }
}
