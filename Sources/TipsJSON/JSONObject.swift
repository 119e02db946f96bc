/// An insertion-ordered JSON object.
///
/// Members live in a contiguous array and lookups scan it linearly, which is
/// faster than hashing for the small objects of a JSON-RPC message. Keys are
/// unique: assigning an existing key replaces its value in place. Equality
/// and hashing ignore member order.
public struct JSONObject: Sendable {
  /// One member of the object.
  public typealias Element = (key: String, value: JSONValue)

  /// The members in insertion order; keys are unique.
  public private(set) var members: [Element]

  /// Creates an empty object.
  public init() {
    members = []
  }

  /// Creates an object from key/value pairs; for a repeated key the first
  /// position and the last value win.
  public init(_ pairs: some Sequence<Element>) {
    members = []
    for (key, value) in pairs { self[key] = value }
  }

  /// Adopts members already known to have unique keys.
  init(uniqueMembers: [Element]) {
    members = uniqueMembers
  }

  /// The number of members.
  public var count: Int { members.count }

  /// Whether the object has no members.
  public var isEmpty: Bool { members.isEmpty }

  /// The keys in insertion order.
  public var keys: [String] { members.map(\.key) }

  /// The values in insertion order.
  public var values: [JSONValue] { members.map(\.value) }

  /// The position of `key` in `members`, if present.
  @inlinable
  public func index(forKey key: String) -> Int? {
    members.withUnsafeBufferPointer { buffer in
      for i in buffer.indices where buffer[i].key == key { return i }
      return nil
    }
  }

  /// Whether the object has a member named `key`.
  public func contains(key: String) -> Bool {
    index(forKey: key) != nil
  }

  /// The value for `key`; assigning `nil` removes the member, assigning an
  /// existing key replaces its value without moving it.
  public subscript(key: String) -> JSONValue? {
    get {
      guard let i = index(forKey: key) else { return nil }
      return members[i].value
    }
    set {
      if let i = index(forKey: key) {
        if let newValue {
          members[i].value = newValue
        } else {
          members.remove(at: i)
        }
      } else if let newValue {
        members.append((key, newValue))
      }
    }
  }

  /// Removes the member named `key` and returns its value.
  @discardableResult
  public mutating func removeValue(forKey key: String) -> JSONValue? {
    guard let i = index(forKey: key) else { return nil }
    return members.remove(at: i).value
  }

  /// Reserves room for `capacity` members.
  public mutating func reserveCapacity(_ capacity: Int) {
    members.reserveCapacity(capacity)
  }
}

extension JSONObject: Sequence {
  /// Iterates the members in insertion order.
  public func makeIterator() -> IndexingIterator<[Element]> {
    members.makeIterator()
  }

  /// The number of members.
  public var underestimatedCount: Int { members.count }
}

extension JSONObject: Hashable {
  /// Two objects are equal when they have the same keys with equal values,
  /// in any order.
  public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
    guard lhs.count == rhs.count else { return false }
    for (key, value) in lhs.members {
      guard let other = rhs[key], other == value else { return false }
    }
    return true
  }

  /// Hashes the members order-independently.
  public func hash(into hasher: inout Hasher) {
    var sum = 0
    for (key, value) in members {
      var memberHasher = Hasher()
      memberHasher.combine(key)
      memberHasher.combine(value)
      sum &+= memberHasher.finalize()
    }
    hasher.combine(members.count)
    hasher.combine(sum)
  }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
  /// Creates an object in literal order; a repeated key keeps its first
  /// position and its last value.
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    members = []
    members.reserveCapacity(elements.count)
    for (key, value) in elements { self[key] = value }
  }
}

extension JSONObject: CustomStringConvertible {
  /// The compact JSON text of the object.
  public var description: String { JSONValue.object(self).jsonString }
}

extension JSONObject {
  /// Builds an object from parsed members, resolving duplicate keys so the
  /// last value wins at the first occurrence's position.
  init(parsedMembers: [Element]) {
    if !Self.hasDuplicateKeys(parsedMembers) {
      self.init(uniqueMembers: parsedMembers)
      return
    }
    var positions: [String: Int] = [:]
    var unique: [Element] = []
    for (key, value) in parsedMembers {
      if let position = positions[key] {
        unique[position].value = value
      } else {
        positions[key] = unique.count
        unique.append((key, value))
      }
    }
    self.init(uniqueMembers: unique)
  }

  /// Whether any key repeats; quadratic for small objects, hashed otherwise.
  private static func hasDuplicateKeys(_ members: [Element]) -> Bool {
    if members.count < 2 { return false }
    if members.count <= 16 {
      for i in 1..<members.count {
        for j in 0..<i where members[i].key == members[j].key { return true }
      }
      return false
    }
    var seen = Set<String>(minimumCapacity: members.count)
    for member in members where !seen.insert(member.key).inserted { return true }
    return false
  }
}
