import Testing

@testable import TipsHosted

/// The sign-in guard's rules (#42): failures are charged to where they come from, never to a subject.
@Suite struct SignInGuardTests {
  /// One failed check a second, bursts of two.
  func makeGuard() -> SignInGuard { SignInGuard(SignInGuard.Configuration(failureRate: 1)) }

  @Test func aConnectionThatFailedNoneIsAlwaysChecked() {
    var guard_ = makeGuard()
    for _ in 0..<100 { guard_.failed(now: 10) }
    #expect(guard_.budgetWait(now: 10) > 0)
    // The budget is spent many times over: a fresh connection's token is still checked (a genuine one signs in).
    #expect(guard_.mayCheck(connectionFailed: false, now: 10) == nil)
    #expect(guard_.throttled == 0)
  }

  @Test func aConnectionThatFailedIsHeldBackOnlyWhileTheBudgetIsSpent() {
    var guard_ = makeGuard()
    #expect(guard_.mayCheck(connectionFailed: true, now: 0) == nil)
    guard_.failed(now: 0)
    guard_.failed(now: 0)
    let wait = guard_.mayCheck(connectionFailed: true, now: 0)
    #expect(wait != nil && wait! > 0 && wait! <= 1)
    #expect(guard_.throttled == 1 && guard_.failures == 2)
    // Once the budget refills, the connection's next token is checked again.
    #expect(guard_.mayCheck(connectionFailed: true, now: 1.5) == nil)
  }

  @Test func noSubjectIsEverCharged() {
    // Forgeries that name a victim spend the node's budget only: nothing about the victim is remembered, so the
    // victim's own connection (which failed nothing) is checked however many forgeries named them.
    var guard_ = makeGuard()
    for _ in 0..<12 { guard_.failed(now: 5) }
    #expect(guard_.mayCheck(connectionFailed: false, now: 5) == nil)
    guard_.tidy(now: 1_000)
    #expect(guard_.mayCheck(connectionFailed: true, now: 1_000) == nil)
  }

  @Test func aVerifiedTokenIsRememberedWithItsIssueTimeUntilItStopsBeingAccepted() {
    var guard_ = makeGuard()
    let entry = SignInGuard.Remembered(subject: "alice", expiresAt: 100, acceptedUntil: 130, issuedAt: 50)
    guard_.succeeded("token-a", entry, now: 60)
    #expect(guard_.remembered("token-a", now: 129) == entry)
    #expect(guard_.remembered("token-a", now: 130) == nil)
    guard_.tidy(now: 131)
    #expect(guard_.rememberedCount == 0)
    guard_.succeeded("token-b", entry, now: 60)
    guard_.keysReloaded()
    #expect(guard_.remembered("token-b", now: 61) == nil)
  }
}
