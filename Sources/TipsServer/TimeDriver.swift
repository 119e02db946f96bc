import TipsEngine
import TipsLogging
import TipsTransport

/// Time-driven re-evaluation on the system clock: a timer armed for the engine's next time-driven change (a donation
/// leaving a `within` window, a cooldown ending), re-armed at the end of every turn. When it fires — late or not —
/// the engine steps through every instant up to now, each change recorded at its own instant. (Under the virtual
/// clock time moves only by request, and `clock/advance` steps the same way.)
final class TimeDriver {
  private let timer: any LoopTimer
  private let engine: Engine
  private let logger: Logger
  /// Receives each mutation of time passing (one per instant stepped, in order: a late wake-up replays the instants
  /// it missed at their own instants).
  private let timePassed: (Mutation) -> Void
  /// The instant the timer is armed for.
  private var scheduled: Timestamp?

  init(timer: any LoopTimer, engine: Engine, logger: Logger, timePassed: @escaping (Mutation) -> Void) {
    self.timer = timer
    self.engine = engine
    self.logger = logger
    self.timePassed = timePassed
  }

  /// Arms (or re-arms, or cancels) the timer for the engine's next change.
  func reschedule() {
    if let due = scheduled, due <= engine.clock.now() {
      // The instant has passed but another callback ran before the timer: catch up now, or the engine (which only
      // reports future instants) would make us cancel a change that is due.
      timer.stop()
      scheduled = nil
      fire()
      return
    }
    guard let next = engine.nextChangeTime() else {
      if scheduled != nil {
        logger.trace("time-driven wake-up cancelled")
        timer.stop()
        scheduled = nil
      }
      return
    }
    guard next != scheduled else { return }
    scheduled = next
    let delay = max(0, next - engine.clock.now())
    // Round up so the timer never fires just before the instant and finds nothing to do.
    let milliseconds = UInt64(min(delay * 1000, 86_400_000).rounded(.up)) + 1
    logger.trace("time-driven wake-up armed", [("at", String(next)), ("ms", String(milliseconds))])
    timer.start(afterMilliseconds: milliseconds) { [unowned self] in
      self.scheduled = nil
      self.fire()
      // Arm again at once if the change is still ahead (the timer came early: the loop's clock and the engine's
      // differ). Waiting for the end of the turn would not do: a turn with nothing to write or send does not request
      // one, and with no timer armed the loop would sleep until the next client byte.
      self.reschedule()
    }
  }

  /// Before a client's input is handled: if the armed instant has passed (the timer is late — a busy loop, a process
  /// that was stopped, a laptop that slept: the loop's monotonic timers lag the wall clock), time is brought up to
  /// now first, each missed instant applied at itself, so the request sees (and is stamped after) what happened
  /// before it. One clock read per read from a client, none per request.
  func catchUp() {
    guard let due = scheduled, due <= engine.clock.now() else { return }
    timer.stop()
    scheduled = nil
    fire()
  }

  private func fire() {
    logger.trace("time-driven wake-up")
    for step in engine.advanceTimeInSteps() { timePassed(step) }
  }

  func stop() { timer.stop() }
  func close() { timer.close() }
}
