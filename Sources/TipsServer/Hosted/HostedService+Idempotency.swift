import TipsHosted
import TipsJSON
import TipsProtocol
import TipsSystem

// Hosted mode's idempotency keys across the fleet (#42): a key this node has no reply for is looked up in
// PostgreSQL before its change runs, so a client's retry on another node gets the first node's reply and changes
// nothing. (Two nodes committing one key at once are settled by the commit: see `committed`.)

extension HostedService {
  /// Whether the change `params` asks for carries an idempotency key this node does not know yet: then PostgreSQL is
  /// asked for it, the session waits (its frame resumes by itself once the answer is in), and true is returned.
  /// A key in memory, or a change with no key, costs a dictionary lookup.
  func mustLookUpKey(_ params: JSONValue?, in tenant: Tenant, account: String, for session: Session) -> Bool {
    guard case .object(let object)? = params, case .string(let key)? = object["idempotencyKey"], !key.isEmpty,
      key.utf8.count <= IdempotencyMemory.maxKeyBytes, !tenant.idempotency.isKnown(key)
    else { return false }
    session.park(on: account, keyCharged: true)
    let since = System.wallClockSeconds() - services.configuration.idempotencyWindow
    store.reply(of: account, key: key, since: since) { [weak self, weak session] result in
      guard let self else { return }
      var refusal: ResponseError?
      switch result {
      case .success(let stored):
        self.tenants[account]?.idempotency.checked(key, stored: stored)
        // Another node committed the key, and with it a change this node may not hold yet: its fleet notice can come
        // after the client, answered, sends its next request, which would then run on a state without that change
        // (a count one short). The account catches up first: this request and the next wait for the pull.
        if stored != nil { self.perform(self.node.othersWrote(account)) }
      case .failure(let error):
        refusal = .unavailable(
          method: "request", retryAfter: 1, "PostgreSQL: cannot look the idempotency key up (\(error.message))")
      }
      guard let session, session.release(from: account, refusal: refusal) else { return }
      self.services.resumeInput(session)
    }
    return true
  }
}
