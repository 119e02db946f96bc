import Foundation
import Testing
import TipsJSON
import TipsTestSupport

extension Hardening {
  /// Every param of every method (from `capabilities.methods` and the daemon's own OpenRPC document) sent with each
  /// JSON type its schema does not allow: the reply is always an error with -32602 or a code the document lists for
  /// the method (or for every message), never a result, a crash or a hang.
  @Suite struct WrongTypes {
    static let candidates: [(type: String, value: JSONValue)] = [
      ("integer", 7), ("number", 1.5), ("string", "x"), ("boolean", true), ("array", []), ("object", [:]),
      ("null", .null),
    ]

    /// JSON types a schema admits, or nil when it does not say (resolving `$ref`, `oneOf`, `anyOf`, `enum`, `const`).
    static func types(_ schema: JSONValue?, _ document: JSONValue, depth: Int = 0) -> Set<String>? {
      guard let schema, depth < 10 else { return nil }
      if let ref = schema["$ref"]?.stringValue {
        guard ref.hasPrefix("#/") else { return nil }
        var node: JSONValue? = document
        for part in ref.dropFirst(2).split(separator: "/") { node = node?[String(part)] }
        return types(node, document, depth: depth + 1)
      }
      if let type = schema["type"] {
        var set = Set((type.arrayValue ?? [type]).compactMap(\.stringValue))
        if set.contains("number") { set.insert("integer") }
        return set
      }
      for key in ["oneOf", "anyOf"] {
        if let options = schema[key]?.arrayValue {
          var union: Set<String> = []
          for option in options {
            guard let t = types(option, document, depth: depth + 1) else { return nil }
            union.formUnion(t)
          }
          return union
        }
      }
      if let values = schema["enum"]?.arrayValue ?? schema["const"].map({ [$0] }) {
        return Set(
          values.map { value -> String in
            switch value {
            case .string: "string"
            case .int: "integer"
            case .double: "number"
            case .bool: "boolean"
            case .null: "null"
            case .array: "array"
            case .object: "object"
            }
          })
      }
      return nil
    }

    @Test func everyParamOfEveryMethodWithWrongTypes() throws {
      let fixture = try Fixture(["--clock", "virtual"])
      let client = try fixture.daemon.connect()
      let methods = try client.initialize(name: "wrong-types").methods
      let document = try client.result("rpc.discover")
      var codesByError: [String: Int64] = [:]
      for (name, error) in document["components"]?["errors"]?.objectValue ?? [:] {
        codesByError[name] = error["code"]?.intValue
      }
      func codes(_ refs: JSONValue?) -> Set<Int64> {
        Set(
          (refs?.arrayValue ?? []).compactMap { ref in
            ref["$ref"]?.stringValue.flatMap { codesByError[String($0.split(separator: "/").last ?? "")] }
              ?? ref["code"]?.intValue
          })
      }
      let protocolCodes = codes(document["x-protocol-errors"])
      #expect(!protocolCodes.isEmpty)
      var described = 0
      var sent = 0
      var accepted: [String] = []
      for method in methods {
        guard let spec = document["methods"]?.arrayValue?.first(where: { $0["name"]?.stringValue == method }) else {
          Issue.record("\(method) is in capabilities.methods but not in rpc.discover")
          continue
        }
        described += 1
        let allowed = codes(spec["errors"]).union(protocolCodes).union([-32602])
        var base = JSONObject()
        for param in spec["examples"]?[0]?["params"]?.arrayValue ?? [] {
          if let name = param["name"]?.stringValue, let value = param["value"] { base[name] = value }
        }
        for param in spec["params"]?.arrayValue ?? [] {
          guard let name = param["name"]?.stringValue, let admitted = Self.types(param["schema"], document) else {
            continue
          }
          let required = param["required"]?.boolValue ?? false
          for (type, value) in Self.candidates where !admitted.contains(type) {
            if type == "null" && !required { continue }  // an explicit null reads as absent
            var params = base
            params[name] = value
            let reply = try client.call(method, .object(params))
            sent += 1
            if let code = errorCode(reply) {
              #expect(allowed.contains(code), "\(method) \(name)=\(value.jsonString): code \(code) is not documented")
            } else {
              accepted.append("\(method) params.\(name)=\(value.jsonString)")
            }
          }
        }
      }
      print("hardening.wrong_types: \(methods.count) methods, \(described) described, \(sent) wrong-typed requests")
      #expect(accepted.isEmpty, "accepted with a wrong type: \(accepted)")
      #expect(sent > 60)
      client.close()
      try fixture.checkRecovered("wrong types")
    }
  }
}
