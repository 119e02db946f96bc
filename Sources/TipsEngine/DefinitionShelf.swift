import Synchronization

/// A tip definition held by reference: what a ``TipSlot`` keeps, so that engines registering equal definitions can
/// share one copy.
final class DefinitionBox: Sendable {
  let value: TipDefinition

  init(_ value: TipDefinition) {
    self.value = value
  }
}

/// One copy of each tip definition for every engine given this shelf (``EngineConfiguration/definitionShelf``): a
/// hosted node's resident accounts all register the catalog's tips, and each used to keep its own ~500-byte copy of
/// every one. A definition is shared only when it equals the one on the shelf under its id (a changed catalog puts
/// its new definition on the shelf; engines holding the old one keep it until they register again). It holds one
/// definition per tip id ever registered through it, which a catalog bounds. Thread-safe.
public final class DefinitionShelf: Sendable {
  private let boxes = Mutex<[String: DefinitionBox]>([:])

  public init() {}

  /// The shelf's box for `definition`, put there if the shelf held none equal to it.
  func box(_ definition: TipDefinition) -> DefinitionBox {
    boxes.withLock { boxes in
      if let box = boxes[definition.id], box.value == definition { return box }
      let box = DefinitionBox(definition)
      boxes[definition.id] = box
      return box
    }
  }

  /// How many definitions the shelf holds.
  public var count: Int { boxes.withLock { $0.count } }
}
