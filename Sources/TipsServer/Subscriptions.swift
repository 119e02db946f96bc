/// A subscription that belongs to one connection.
protocol OwnedSubscription: AnyObject {
  var session: Session { get }
}

/// A `tips/observe` subscription: which tips and groups it watches and what it was last told.
final class ObserveSubscription: OwnedSubscription {
  let id: String
  unowned let session: Session
  /// nil: every tip, including tips registered later.
  let tipIDs: Set<String>?
  let groups: Set<String>
  /// The shouldDisplay value last handed to the transport (or given in the observe result), per tip.
  var lastDelivered: [String: Bool] = [:]
  /// The shouldDisplay value of the newest notification made for each tip (delivered, queued or staged); a change
  /// equal to it is not announced again.
  var lastAnnounced: [String: Bool] = [:]
  var seq: Int64 = 0

  init(id: String, session: Session, tipIDs: Set<String>?, groups: Set<String>) {
    self.id = id
    self.session = session
    self.tipIDs = tipIDs
    self.groups = groups
  }

  func watches(tip id: String) -> Bool { tipIDs?.contains(id) ?? true }

  /// Records a value the client has been given directly (in the `tips/observe` result).
  func given(_ tipID: String, _ value: Bool) {
    lastDelivered[tipID] = value
    lastAnnounced[tipID] = value
  }
}

/// An `actions/subscribe` subscription.
final class ActionSubscription: OwnedSubscription {
  let id: String
  unowned let session: Session
  /// nil: actions of every tip.
  let tipIDs: Set<String>?
  var seq: Int64 = 0

  init(id: String, session: Session, tipIDs: Set<String>?) {
    self.id = id
    self.session = session
    self.tipIDs = tipIDs
  }
}
