import TipsProtocol

extension Session {
  /// Why a session reads no further input: one state, so a session never waits for an account and for replies at
  /// once, and what a released wait leaves for its next message travels with it.
  ///
  /// ```
  /// no ──park──▶ account(a) ──release / refuse──▶ released ──admit──▶ no
  /// no ──async read or rate hold──▶ replies(n) ──last one staged──▶ no
  /// ```
  enum Waiting: Equatable {
    /// Its input is read.
    case no
    /// Hosted mode: its frame's next message waits for `account` to be idle (loading, committing or catching up) or
    /// for its idempotency key to be looked up in PostgreSQL; `keyCharged`: the key lookup already charged the
    /// account's request rate for that message.
    case account(String, keyCharged: Bool)
    /// The wait ended: the next message runs — or is answered `refusal` instead (its account could not be read, or
    /// was deleted meanwhile). Input is read again.
    case released(refusal: ResponseError?, keyCharged: Bool)
    /// Replies being worked out asynchronously (a PostgreSQL read), or a rate hold: input waits until each is staged,
    /// so replies keep their order.
    case replies(Int)

    /// Whether the session must not handle its next message yet.
    var holdsInput: Bool {
      switch self {
      case .account, .replies: return true
      case .no, .released: return false
      }
    }

    /// The account the session waits for, if any.
    var account: String? {
      if case .account(let account, _) = self { return account }
      return nil
    }
  }

  /// Hosted mode: whether the session's staged output waits for a commit (a change is acknowledged once PostgreSQL
  /// committed it). Beside ``Waiting`` rather than in it: a frame's asynchronous read may still be pending while the
  /// commit of a change before it in the frame is in flight.
  enum CommitHold: Equatable {
    case none
    /// Something staged this turn acknowledges or announces a change: held until the turn's commit.
    case held
    /// Its output waits for this commit batch.
    case awaiting(UInt64)

    var isAwaiting: Bool {
      if case .awaiting = self { return true }
      return false
    }
  }

  /// Parks the frame's next message on `account` (hosted mode).
  func park(on account: String, keyCharged: Bool = false) {
    waiting = .account(account, keyCharged: keyCharged)
  }

  /// Ends a wait on `account`, with the refusal the next message gets instead of running, if any. False when the
  /// session was not waiting for `account` (it closed its wait otherwise already).
  @discardableResult
  func release(from account: String, refusal: ResponseError? = nil) -> Bool {
    guard case .account(account, let keyCharged) = waiting else { return false }
    waiting = .released(refusal: refusal, keyCharged: keyCharged)
    return true
  }

  /// What a released wait left for the message it held (consumed: the session is back to `no`).
  func takeReleased() -> (refusal: ResponseError?, keyCharged: Bool) {
    guard case .released(let refusal, let keyCharged) = waiting else { return (nil, false) }
    waiting = .no
    return (refusal, keyCharged)
  }

  /// One more reply worked out asynchronously (or a rate hold).
  func beginAsync() {
    switch waiting {
    case .replies(let count): waiting = .replies(count + 1)
    case .no, .released: waiting = .replies(1)
    case .account:
      // Not reached: a session waiting for an account handles no message that could start one.
      assertionFailure("an asynchronous reply began while the session waits for an account")
      waiting = .replies(1)
    }
  }

  /// One asynchronous reply staged; true when it was the last (input may resume).
  func endAsync() -> Bool {
    guard case .replies(let count) = waiting else { return true }
    waiting = count > 1 ? .replies(count - 1) : .no
    return count <= 1
  }
}
