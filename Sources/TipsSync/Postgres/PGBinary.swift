import CLibPQ
import Glibc

/// Parameters in PostgreSQL's binary format (its types' send/receive functions), for the arrays a hosted commit
/// sends (#47): a commit's operations, history chunks and replies as text arrays cost the node their escaping (and
/// hex for bytes) and PostgreSQL `array_in`'s parsing of every item; in binary each item is its length and its bytes.
///
/// An array is `ndim` (1, or 0 when empty), a has-nulls flag (0), its element type's OID, then for its one dimension
/// the item count and the lower bound (1), then each item as a length and its bytes; every integer big-endian.
package enum PGBinary {
  /// OIDs of the element types (`pg_type`).
  package enum Element: UInt32 {
    case bytea = 17
    case int8 = 20
    case int4 = 23
    case text = 25
    case float8 = 701
  }

  /// `text[]`: each item's UTF-8.
  package static func textArray(_ items: [String]) -> [UInt8] { array(.text, items.map(\.utf8)) }

  /// `bytea[]`: each item's bytes.
  package static func byteaArray(_ items: [[UInt8]]) -> [UInt8] { array(.bytea, items) }

  /// `integer[]` (int4): each item must fit 32 bits.
  package static func int4Array(_ items: [Int64]) -> [UInt8] {
    array(.int4, items.map { Int32(truncatingIfNeeded: $0) })
  }

  /// `bigint[]` (int8).
  package static func int8Array(_ items: [Int64]) -> [UInt8] { array(.int8, items) }

  /// `double precision[]` (float8): each item's IEEE 754 bits.
  package static func float8Array(_ items: [Double]) -> [UInt8] { array(.float8, items.map(\.bitPattern)) }

  // The two writers below size the array once and store each integer in place: appending item by item cost a
  // capacity check and a generic copy per integer, some 250 instructions an item (#47).

  /// An array of variable-length items: each its length, then its bytes.
  private static func array(_ element: Element, _ items: [some Collection<UInt8>]) -> [UInt8] {
    let size = headerSize(count: items.count) + items.reduce(0) { $0 + $1.count + 4 }
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      let raw = UnsafeMutableRawBufferPointer(buffer)
      var at = storeHeader(element, count: items.count, in: raw)
      for item in items {
        store(UInt32(item.count), at: &at, in: raw)
        let copied = item.withContiguousStorageIfAvailable { source in
          if let base = source.baseAddress { (raw.baseAddress! + at).copyMemory(from: base, byteCount: source.count) }
          return source.count
        }
        if let copied {
          at += copied
        } else {
          for byte in item {
            raw[at] = byte
            at += 1
          }
        }
      }
      initialized = at
    }
  }

  /// An array of fixed-width items (`T`'s width is the element type's): each its length, then its bytes.
  private static func array<T: FixedWidthInteger>(_ element: Element, _ items: [T]) -> [UInt8] {
    let width = T.bitWidth / 8
    return [UInt8](unsafeUninitializedCapacity: headerSize(count: items.count) + items.count * (4 + width)) {
      buffer, initialized in
      let raw = UnsafeMutableRawBufferPointer(buffer)
      var at = storeHeader(element, count: items.count, in: raw)
      for item in items {
        store(UInt32(width), at: &at, in: raw)
        raw.storeBytes(of: item.bigEndian, toByteOffset: at, as: T.self)
        at += width
      }
      initialized = at
    }
  }

  /// The header's bytes: 12, and 8 more for the dimension of an array that has items.
  private static func headerSize(count: Int) -> Int { count == 0 ? 12 : 20 }

  /// Stores the header at the start of `raw`; returns where the items start.
  private static func storeHeader(_ element: Element, count: Int, in raw: UnsafeMutableRawBufferPointer) -> Int {
    var at = 0
    store(count == 0 ? 0 : 1, at: &at, in: raw)
    store(0, at: &at, in: raw)
    store(element.rawValue, at: &at, in: raw)
    guard count > 0 else { return at }
    store(UInt32(count), at: &at, in: raw)
    store(1, at: &at, in: raw)
    return at
  }

  /// Stores `value` big-endian at `at`, and moves `at` past it.
  @inline(__always)
  private static func store(_ value: UInt32, at: inout Int, in raw: UnsafeMutableRawBufferPointer) {
    raw.storeBytes(of: value.bigEndian, toByteOffset: at, as: UInt32.self)
    at += 4
  }

  /// A `text[]` built item by item, each written straight into the array's bytes (no `String` made for it).
  package struct TextArrayWriter {
    /// Items so far.
    package private(set) var count = 0
    private var items: [UInt8] = []

    package init() {}

    /// Appends an item whose UTF-8 is `item`.
    package mutating func append(_ item: some Collection<UInt8>) {
      appendItem { $0.append(contentsOf: item) }
    }

    /// Appends the item `write` appends to the bytes it is given.
    package mutating func appendItem(_ write: (inout [UInt8]) -> Void) {
      let start = items.count
      items.append(contentsOf: repeatElement(0, count: 4))
      write(&items)
      let length = UInt32(items.count - start - 4)
      items.withUnsafeMutableBytes { $0.storeBytes(of: length.bigEndian, toByteOffset: start, as: UInt32.self) }
      count += 1
    }

    /// The array in binary.
    package var bytes: [UInt8] {
      [UInt8](unsafeUninitializedCapacity: PGBinary.headerSize(count: count) + items.count) { buffer, initialized in
        let raw = UnsafeMutableRawBufferPointer(buffer)
        let at = PGBinary.storeHeader(.text, count: count, in: raw)
        items.withUnsafeBytes { source in
          if let base = source.baseAddress { (raw.baseAddress! + at).copyMemory(from: base, byteCount: source.count) }
        }
        initialized = at + items.count
      }
    }
  }
}

/// `statement`'s parameters as libpq takes them: each value's pointer, its length and its format (0 text, 1 binary).
func withParameters<R>(
  _ statement: PGStatement,
  _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
) -> R {
  var lengths: [Int32] = []
  var formats: [Int32] = []
  let pointers: [UnsafePointer<CChar>?] = statement.parameters.enumerated().map { index, text in
    if let bytes = statement.binary[index] {
      lengths.append(Int32(bytes.count))
      formats.append(1)
      let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, bytes.count))
      bytes.withUnsafeBufferPointer { source in
        if let base = source.baseAddress {
          UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: bytes.count)
        }
      }
      return UnsafePointer(copy)
    }
    lengths.append(0)
    formats.append(0)
    return text.map { UnsafePointer(strdup($0)) } ?? nil
  }
  defer {
    for (index, pointer) in pointers.enumerated() {
      if statement.binary[index] != nil {
        UnsafeMutablePointer(mutating: pointer)?.deallocate()
      } else {
        free(UnsafeMutablePointer(mutating: pointer))
      }
    }
  }
  return pointers.withUnsafeBufferPointer { values in
    lengths.withUnsafeBufferPointer { lengths in
      formats.withUnsafeBufferPointer { formats in body(values.baseAddress, lengths.baseAddress, formats.baseAddress) }
    }
  }
}
