/// `file:` URIs and the paths they name (RFC 8089, as editors write them: `file:///home/me/catalog%20v2.json`).
public enum FileURI {
  /// The path of a `file:` URI (percent-decoded); nil for any other scheme or a remote host.
  public static func path(_ uri: String) -> String? {
    let prefix = "file://"
    guard uri.lowercased().hasPrefix(prefix) else { return nil }
    var rest = Substring(uri.dropFirst(prefix.count))
    if !rest.hasPrefix("/") {
      guard let slash = rest.firstIndex(of: "/"), rest[..<slash].lowercased() == "localhost" else { return nil }
      rest = rest[slash...]
    }
    if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
    var bytes: [UInt8] = []
    let utf8 = Array(rest.utf8)
    var index = 0
    while index < utf8.count {
      if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count, let high = hex(utf8[index + 1]),
        let low = hex(utf8[index + 2])
      {
        bytes.append(high << 4 | low)
        index += 3
      } else {
        bytes.append(utf8[index])
        index += 1
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The `file:` URI of an absolute path, percent-encoding all but unreserved characters and `/`.
  public static func uri(_ path: String) -> String {
    var out = "file://"
    for byte in path.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "~"), UInt8(ascii: "/"):
        out.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        let digits = Array("0123456789ABCDEF".utf8)
        out += "%"
        out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte >> 4)]))
        out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte & 0x0F)]))
      }
    }
    return out
  }

  static func hex(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}

/// Path helpers (no Foundation).
enum Paths {
  /// `a/b/c.json` → `a/b`; `c.json` → `.`; `/c.json` → `/`.
  static func directory(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    if slash == path.startIndex { return "/" }
    return String(path[..<slash])
  }

  /// `a/b/c.json` → `c.json`.
  static func name(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: slash)...])
  }

  static func join(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : "\(directory)/\(name)"
  }
}
