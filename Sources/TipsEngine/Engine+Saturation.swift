/// Skipping tips a donation cannot change.
///
/// Each event keeps the tips whose rules read it (`EventLog.dependents`) and, among them, those a donation of it can
/// still change (`EventLog.live`). A tip is *saturated* for an event when each of its rules on that event is a plain
/// or windowed count whose result can no longer flip as donations are appended: `gte`/`gt` already holding,
/// `lt`/`lte` already failing, `eq`/`ne` already past their value. Appending never lowers such a count, and when the
/// history is full, dropping the oldest while adding one leaves a window's count the same or one higher. Rules with
/// `where` or `largestGroupBy` never count as saturated. A saturated tip's rules cannot change by a donation, so
/// nothing derived from them can (status, eligibility, cooldown sensitivity, its groups' current tip, holdout
/// exposures); a donation never starts a cooldown and never changes a tip record.
///
/// A donation re-evaluates only the live tips and drops the ones it just saturated. Anything else that changes an
/// event's history or the engine's state invalidates every live set (``liveEpoch``): a donation inserted before the
/// newest, a trim, a new age limit, a reset or restore, a merge from sync, time moving in `advanceTime`, and every
/// other mutation. The first donation after it re-evaluates every dependent again.
///
/// All this holds only while cached evaluations are *fresh*: ``currentUntil`` is the earliest pending time-driven
/// instant (a window exit, ageing, a schedule boundary, a cooldown ending while it holds a tip back, a suppression
/// ending, a follow-on `for` elapsing), recomputed after each other mutation and lowered by each donation. A
/// donation at or after it (before `advanceTime` ran), or after the clock went back, re-evaluates every dependent
/// exactly as before.
extension Engine {
  /// Whether each of `slot`'s rules on `log` is a plain or windowed count whose result more donations cannot flip.
  func isSaturated(_ slot: TipSlot, for log: EventLog, now: Timestamp) -> Bool {
    let target = Unmanaged.passUnretained(log).toOpaque()
    return slot.rules.ops.withUnsafeBufferPointer { ops in
      for op in ops {
        guard let reference = op.log, reference.toOpaque() == target else { continue }
        let count: Int
        switch op.kind {
        case .count: count = log.plainCount(now: now)
        case .window: count = log.count - log.windowStart(within: op.within, now: now)
        default: return false
        }
        let fixed =
          switch op.op {
          case .gte: count >= op.value
          case .gt, .eq, .ne, .lte: count > op.value
          case .lt: count >= op.value
          }
        if !fixed { return false }
      }
      return true
    }
  }

  /// The shortest span after which a donation of `log` now could change something by time: its watched windows'
  /// lengths and its maximum age.
  func minimumSpan(of log: EventLog) -> Double {
    var span = log.maxAge ?? .infinity
    for (key, watch) in windows where key.event == log.number && !watch.dependents.isEmpty {
      span = min(span, key.within)
    }
    return span
  }

  /// After a donation of `log` at `now` that re-evaluated `evaluated` (its live set when `fromLive`, else every
  /// dependent): keeps the tips it can still change, or forgets the live set when the donation did more than append.
  func updateLive(_ log: EventLog, fromLive: Bool, appended: Bool, now: Timestamp) {
    if !fromLive { log.minSpan = minimumSpan(of: log) }
    guard appended else {
      log.liveEpoch = 0
      return
    }
    if !fromLive {
      log.live = log.dependents
      log.liveEpoch = liveEpoch
    }
    log.live.removeAll { index in
      guard let ref = slotRefs[index] else { return true }
      return isSaturated(ref.takeUnretainedValue(), for: log, now: now)
    }
  }

  /// After a mutation other than a donation: every live set is stale, and ``currentUntil`` is recomputed (from the
  /// state at `mutationNow`, fresh when it was fresh before or `everything` says the mutation re-evaluated it all).
  func refreshCurrentUntil(everything: Bool = false) {
    liveEpoch &+= 1
    guard configuration.skipsSaturatedTips else { return }
    let now = mutationNow
    if !timeWentBack && (everything || now < currentUntil) {
      currentUntil = nextChangeTime(at: now) ?? .infinity
    } else {
      currentUntil = -.infinity
    }
  }
}
