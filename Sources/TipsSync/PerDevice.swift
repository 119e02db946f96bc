/// A value per device, for the merge model's per-device registers (an event's lifetime count, a tip's display
/// counter). Almost every one has a single device — the account's one node, or its one phone — so that case is held
/// inline, with no storage of its own; a second device moves the values into a dictionary. A resident hosted account
/// held a one-entry dictionary for each of its events (≈ 170 bytes each, #47's resident bytes).
///
/// It reads like the `[String: Value]` it replaces: `counts[device]`, `counts[device] = nil`, `keys`, `values`, and
/// iteration as `(key, value)` pairs in no particular order.
package struct PerDevice<Value: Equatable>: Equatable, Sequence, ExpressibleByDictionaryLiteral {
  private enum Storage: Equatable {
    case empty
    case one(String, Value)
    case many([String: Value])
  }

  private var storage: Storage = .empty

  package init(dictionaryLiteral elements: (String, Value)...) {
    for (device, value) in elements { self[device] = value }
  }

  package subscript(device: String) -> Value? {
    get {
      switch storage {
      case .empty: nil
      case .one(let only, let value): only == device ? value : nil
      case .many(let values): values[device]
      }
    }
    set {
      switch storage {
      case .empty:
        if let newValue { storage = .one(device, newValue) }
      case .one(let only, let value):
        if only == device {
          storage = newValue.map { .one(device, $0) } ?? .empty
        } else if let newValue {
          storage = .many([only: value, device: newValue])
        }
      case .many(var values):
        storage = .empty  // the dictionary uniquely referenced while it changes
        values[device] = newValue
        storage = values.count == 1 ? .one(values.first!.key, values.first!.value) : .many(values)
      }
    }
  }

  package var isEmpty: Bool { storage == .empty }

  package var count: Int {
    switch storage {
    case .empty: 0
    case .one: 1
    case .many(let values): values.count
    }
  }

  package var keys: [String] { map(\.key) }

  package var values: [Value] { map(\.value) }

  package func makeIterator() -> IndexingIterator<[(key: String, value: Value)]> {
    switch storage {
    case .empty: return [].makeIterator()
    case .one(let device, let value): return [(key: device, value: value)].makeIterator()
    case .many(let values): return values.map { (key: $0.key, value: $0.value) }.makeIterator()
    }
  }

  package static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.count == rhs.count && lhs.allSatisfy { rhs[$0.key] == $0.value }
  }
}
