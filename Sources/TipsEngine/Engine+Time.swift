public import TipsJSON

// Time: what changes when the clock moves (windows, ages, schedules, cooldowns, follow-on rules), the
// suppression, and the display frequency's cooldown.

extension Engine {
  // MARK: - Time

  /// ``advanceTimeInSteps()`` as one mutation: every step's changes and writes, in order (what a caller that keeps
  /// no history needs; history entries need each step's instant).
  public func advanceTime() -> Mutation {
    let steps = advanceTimeInSteps()
    guard steps.count > 1 else { return steps[0] }
    var merged = Mutation()
    for step in steps {
      merged.changes += step.changes
      merged.writes += step.writes
    }
    return merged
  }

  /// Brings time-driven state up to `clock.now()` the one way time moves, on every clock: from the last instant it
  /// was brought to, the engine steps to each instant ``nextChangeTime()`` announces — a donation leaving a `within`
  /// window or ageing out, a cooldown or a suppression ending, a schedule opening or closing, a follow-on rule's
  /// `for` elapsing — and settles there, then at now. One mutation per instant that changed something, in order,
  /// each with its instant (``Mutation/at``; exposures open and close at it), then the one at now (always, possibly
  /// empty). So advancing over a span in one call equals advancing over it in pieces, and a late timer replays what
  /// it missed at the right instants. If the clock went backwards since, every tip is re-evaluated at now.
  /// Costs one ``nextChangeTime()`` per instant stepped, plus one: a long span with no instant costs no more than a
  /// short one.
  public func advanceTimeInSteps() -> [Mutation] {
    let target = clock.now()
    if timeWentBack || target < lastNow || target < timeSettled {
      return [applyTime(at: target, backwards: true)]
    }
    var steps: [Mutation] = []
    while let next = nextChangeTime(at: timeSettled), next < target {
      var step = applyTime(at: next, backwards: false)
      if step.changes.isEmpty && step.writes.isEmpty { continue }
      step.at = next
      steps.append(step)
    }
    steps.append(applyTime(at: target, backwards: false))
    return steps
  }

  /// Applies what time changed between ``timeSettled`` and `now` (an instant of the stepping, or the clock's now).
  func applyTime(at now: Timestamp, backwards: Bool) -> Mutation {
    mutationNow = now
    timeSettled = now
    var writes: [StateWrite] = []
    var rules: [Int] = []
    for log in agedLogs where log.trimAged(now: now) {
      // Plain counts and filters of an event with a maximum age read only its younger donations.
      writes.append(.trimDonations(eventID: log.id, keepNewest: log.count))
      rules += log.dependents
    }
    var everything = false
    if let ended = suppression, !ended.isActive(at: now) {
      suppression = nil
      writes.append(.suppression(nil))
      everything = true
    }
    if everything || backwards {
      timeWentBack = false
      lastNow = max(lastNow, now)
      if backwards { lastNow = now }
      return finish(settleEverything(now: now), writes: writes, everything: true)
    }
    lastNow = max(lastNow, now)
    for (key, watch) in windows {
      let start = logList[key.event].windowStartSeq(within: key.within, now: now)
      if start != watch.startSeq {
        watch.startSeq = start
        rules += watch.dependents
      }
    }
    for (follow, elapsed) in followWatches where followElapsed(follow, now: now) != elapsed {
      followWatches[follow] = !elapsed
      rules.append(follow.slot)
    }
    var state: [Int] = []
    let gate = cooldownActive(now)
    if gate != cooldownGate {
      cooldownGate = gate
      state = Array(sensitive)
    }
    for index in scheduledSlots {
      guard let slot = slots[index], let schedule = slot.schedule else { continue }
      if schedule.contains(now) != slot.scheduleOpen { state.append(index) }
    }
    var changedGroups: [String] = []
    for group in groups.values where group.definition.schedule != nil {
      let open = group.definition.schedule!.contains(now)
      if open != group.open {
        group.open = open
        changedGroups.append(group.definition.id)
      }
    }
    return finish(settle(rules: rules, state: state, groups: changedGroups, now: now), writes: writes, everything: true)
  }

  /// The earliest instant at which a tip's state or a group's current tip can change with no other input, after
  /// the last instant time was brought to (``advanceTimeInSteps()``): the oldest in-window donation of a watched
  /// `within` window leaving it, a read donation ageing out, the cooldown ending while it holds back a tip, a
  /// suppression ending, a schedule opening or closing, or a follow-on rule's `for` elapsing. At or before now when
  /// such an instant passed and time was not brought past it yet (a wake-up that came late, an account that was
  /// busy): it is due. Conservative: at that instant nothing may change. Nil if nothing is pending.
  /// Costs O(distinct (event, window) pairs × log donations + aged events + scheduled tips and groups + follow-on
  /// watches), independent of the number of other tips.
  public func nextChangeTime() -> Timestamp? { nextChangeTime(at: min(timeSettled, clock.now())) }

  /// ``nextChangeTime()`` as seen at `now`.
  func nextChangeTime(at now: Timestamp) -> Timestamp? {
    var next: Timestamp?
    func consider(_ instant: Timestamp?) {
      guard let instant, instant > now else { return }
      next = min(next ?? instant, instant)
    }
    for (key, watch) in windows where !watch.dependents.isEmpty {
      consider(logList[key.event].nextExit(within: key.within, now: now))
    }
    for log in agedLogs where !log.dependents.isEmpty {
      if let maxAge = log.maxAge { consider(log.nextExit(within: maxAge, now: now)) }
    }
    if !sensitive.isEmpty { consider(cooldownEnd(now)) }
    if suppressionActive, !slotIndex.isEmpty { consider(suppression?.until) }
    for index in scheduledSlots { consider(slots[index]?.schedule?.nextBoundary(after: now)) }
    for group in groups.values { consider(group.definition.schedule?.nextBoundary(after: now)) }
    for (follow, elapsed) in followWatches where !elapsed {
      guard let record = slot(follow.tip)?.record, record.invalidationReason != nil else { continue }
      consider((record.invalidatedAt ?? now) + follow.duration)
    }
    return next
  }

  // MARK: - Suppression

  /// `tips/suppress`: no tip is displayable (testing overrides excepted) for `seconds` (nil: until ``resume()``).
  /// Replaces a running suppression. It starts no cooldown and invalidates nothing.
  public func suppress(seconds: Double?, reason: String?) throws(EngineError) -> Mutation {
    if let seconds, !(seconds.isFinite && seconds > 0) {
      throw .invalidArgument(argument: "seconds", problem: "must be a positive number of seconds")
    }
    let now = tick()
    let new = Suppression(since: now, until: seconds.map { now + $0 }, reason: reason)
    suppression = new
    suppressionActive = true
    return finish(settle(state: slots.compactMap { $0?.index }, now: now), writes: [.suppression(new)])
  }

  /// `tips/resume`: ends the suppression (nothing happens when none runs).
  public func resume() -> Mutation {
    let now = tick()
    guard suppression != nil else { return finish([]) }
    suppression = nil
    suppressionActive = false
    return finish(settle(state: slots.compactMap { $0?.index }, now: now), writes: [.suppression(nil)])
  }

  /// The suppression in force, if any.
  public var currentSuppression: Suppression? {
    guard let suppression, suppression.isActive(at: clock.now()) else { return nil }
    return suppression
  }

  // MARK: - Internals: cooldown

  func cooldownEnd(_ now: Timestamp) -> Timestamp? {
    guard frequency.period > 0, let start = cooldownStartedAt else { return nil }
    let end = start + frequency.period
    return end > now ? end : nil
  }

  func cooldownActive(_ now: Timestamp) -> Bool { cooldownEnd(now) != nil }

  /// After the cooldown start or period changed: the sensitive tips to re-evaluate (see the type's notes).
  func cooldownGateChanged(before: Bool, now: Timestamp) -> [Int] {
    let after = cooldownActive(now)
    defer { cooldownGate = after }
    return after != before || after != cooldownGate ? Array(sensitive) : []
  }
}
