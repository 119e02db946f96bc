import CLibPQ

#if canImport(Glibc)
  import Glibc
#endif

/// Where the account's PostgreSQL is (`--sync`): a `postgresql://` URI or a libpq `key=value` string, checked by libpq
/// itself. Its password is never logged: ``redacted`` stands in for it everywhere, and ``scrub(_:)`` removes it from
/// any message that might echo it.
public struct SyncServer: Sendable, Equatable, CustomStringConvertible {
  /// The connection string as given (holds the password, if any: never log it).
  public let connectionString: String
  /// The same with the password replaced by `***`.
  public let redacted: String
  /// The password, for scrubbing messages; nil when there is none.
  private let password: String?
  /// The `host` list (comma-separated in libpq), when no `hostaddr` is given: each entry a name, a numeric address or
  /// a socket directory. Names are resolved by the loop (``needsResolution``) and handed to libpq as `hostaddr`,
  /// because libpq's own lookup inside `PQconnectPoll` is a blocking `getaddrinfo`.
  public let hosts: [String]

  /// Parses with libpq (`PQconninfoParse`); throws libpq's message (which never contains the password) when libpq
  /// cannot read it.
  public init(_ connectionString: String) throws(SyncSetupError) {
    var error: UnsafeMutablePointer<CChar>?
    guard let options = PQconninfoParse(connectionString, &error) else {
      let message = error.map { String(cString: $0).trimmingTrailingNewlines() } ?? "cannot read it"
      if let error { PQfreemem(error) }
      throw SyncSetupError("--sync: not a PostgreSQL connection string (\(message))")
    }
    defer { PQconninfoFree(options) }
    var values: [String: String] = [:]
    var option = options
    while let keyword = option.pointee.keyword {
      if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
      option += 1
    }
    self.connectionString = connectionString
    self.password = values["password"].flatMap { $0.isEmpty ? nil : $0 }
    if let host = values["host"], !host.isEmpty, (values["hostaddr"] ?? "").isEmpty {
      hosts = host.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
    } else {
      hosts = []
    }
    self.redacted = Self.redact(connectionString)
  }

  public var description: String { redacted }

  /// Whether some host is a name the loop must resolve first (not a socket directory, not a numeric address).
  public var needsResolution: Bool { hosts.contains(where: Self.isName) }

  /// Whether a `host` entry is a name (to resolve) rather than a socket directory or a numeric address.
  static func isName(_ host: String) -> Bool {
    guard !host.isEmpty, !host.hasPrefix("/"), !host.hasPrefix("@") else { return false }
    var buffer = in6_addr()
    return inet_pton(AF_INET, host, &buffer) != 1 && inet_pton(AF_INET6, host, &buffer) != 1
  }

  /// `message` with the password (if any) replaced by `***`.
  public func scrub(_ message: String) -> String {
    guard let password, !password.isEmpty else { return message }
    return message.replacingAll(password, with: "***")
  }

  /// The connection string with every password replaced by `***`: the URI's `user:password@`, a `password=` query
  /// parameter, a `password=` keyword (quoted or not).
  static func redact(_ text: String) -> String {
    var result = ""
    if let scheme = text.firstRange(of: "://"), text.hasPrefix("postgres") {
      result = String(text[..<scheme.upperBound])
      var rest = text[scheme.upperBound...]
      let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
      let authority = rest[..<authorityEnd]
      if let at = authority.lastIndex(of: "@") {
        let userinfo = authority[..<at]
        if let colon = userinfo.firstIndex(of: ":") {
          result += userinfo[..<colon] + ":***"
        } else {
          result += userinfo
        }
        result += authority[at...]
      } else {
        result += authority
      }
      rest = rest[authorityEnd...]
      guard let question = rest.firstIndex(of: "?") else { return result + rest }
      result += rest[...question]
      let query = rest[rest.index(after: question)...]
      result += query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
        pair.lowercased().hasPrefix("password=") ? "password=***" : String(pair)
      }.joined(separator: "&")
      return result
    }
    // key=value pairs; values may be single-quoted with backslash escapes.
    var index = text.startIndex
    while index < text.endIndex {
      let character = text[index]
      if character.isWhitespace {
        result.append(character)
        index = text.index(after: index)
        continue
      }
      let keyEnd = text[index...].firstIndex { $0 == "=" || $0.isWhitespace } ?? text.endIndex
      let key = text[index..<keyEnd]
      result += key
      index = keyEnd
      while index < text.endIndex, text[index].isWhitespace {
        result.append(text[index])
        index = text.index(after: index)
      }
      guard index < text.endIndex, text[index] == "=" else { continue }
      result.append("=")
      index = text.index(after: index)
      while index < text.endIndex, text[index].isWhitespace {
        result.append(text[index])
        index = text.index(after: index)
      }
      var value = ""
      if index < text.endIndex, text[index] == "'" {
        value.append("'")
        index = text.index(after: index)
        while index < text.endIndex, text[index] != "'" {
          if text[index] == "\\", text.index(after: index) < text.endIndex {
            value.append(text[index])
            index = text.index(after: index)
          }
          value.append(text[index])
          index = text.index(after: index)
        }
        if index < text.endIndex {
          value.append("'")
          index = text.index(after: index)
        }
      } else {
        while index < text.endIndex, !text[index].isWhitespace {
          value.append(text[index])
          index = text.index(after: index)
        }
      }
      result += key == "password" ? "***" : value
    }
    return result
  }
}

extension String {
  /// Every occurrence of `target` replaced.
  func replacingAll(_ target: String, with replacement: String) -> String {
    guard !target.isEmpty else { return self }
    var result = ""
    var rest = self[...]
    while let range = rest.firstRange(of: target) {
      result += rest[..<range.lowerBound]
      result += replacement
      rest = rest[range.upperBound...]
    }
    return result + rest
  }
}
