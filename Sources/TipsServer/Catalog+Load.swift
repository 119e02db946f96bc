import TipsCatalog

extension Catalog {
  /// Reads and decodes a catalog file for `tipsd serve --catalog` (strict decoding, no lint checks, no message
  /// files); errors name the file and the offending JSON path, never a value from the file.
  static func load(path: String) throws(ServerError) -> Catalog {
    do {
      return try Catalog(path: path)
    } catch {
      throw ServerError(error.description)
    }
  }
}
