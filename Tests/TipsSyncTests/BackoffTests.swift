import Testing
import TipsSync

/// The one backoff (#44) PostgreSQL's links, the sync pump and a hosted node's pull retries share.
@Suite struct BackoffTests {
  @Test func doublesFromTheFirstWaitToTheCapAndStartsOverOnSuccess() {
    var backoff = Backoff(first: 0.1, cap: 2)
    #expect(backoff.next == 0.1)
    let waits = (0..<8).map { _ in backoff.failed() }
    #expect(waits == [0.1, 0.2, 0.4, 0.8, 1.6, 2, 2, 2])
    #expect(backoff.failures == 8)
    backoff.succeeded()
    #expect(backoff.failures == 0 && backoff.next == 0.1)
  }

  @Test func aHostedPullRetryWaitsOneSecondDoublingToThirty() {
    var backoff = Backoff(first: 1, cap: 30)
    #expect((0..<7).map { _ in backoff.failed() } == [1, 2, 4, 8, 16, 30, 30])
  }

  @Test func longRunsOfFailuresStayAtTheCapAndOddBoundsAreMadeSane() {
    var backoff = Backoff(first: 0.5, cap: 60)
    for _ in 0..<1_000 { _ = backoff.failed() }
    #expect(backoff.next == 60)
    #expect(Backoff(first: 0, cap: 0).next == 0.001)
    #expect(Backoff(first: 5, cap: 1).cap == 5)
  }
}
