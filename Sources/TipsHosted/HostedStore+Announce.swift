// A commit's notifications go out after PostgreSQL answered it (schema 11): a commit stored whose answer never came
// (the link broke after COMMIT, the node was killed) is never announced, and every other node holding the account stays
// behind it until the account's next change. The node that finds its own operation last when it reads the account —
// the reload after that unknown outcome, or its next life's first read — announces it (#44).

extension HostedStore {
  /// Tells the fleet and the account's devices where `account` stands (`cursor`), as ``publish(_:_:)`` does after a
  /// commit: a node behind it pulls from its own cursor; one already there ignores it.
  public func announce(account: String, cursor: Int64) {
    notify([(account, cursor)])
  }
}
