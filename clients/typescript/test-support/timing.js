"use strict";
// Time in the tests (issue #17): tests assert behaviour, never speed.
//
// - Waits are for a condition (`until`), never for a duration. Their timeout only guards against a hang: 30 s by
//   default, TIPSD_TEST_TIMEOUT (seconds) to change it — on a slow or overloaded machine, raise it.
// - Absence is never proven by waiting. Against a daemon (real or fake), use `barrier(client)`: a request's reply
//   comes after every notification caused by what was answered before it on the same connection.
// - Reconnection, backoff and timeouts inside the client run on a `ManualClock`, passed as the client's internal
//   `timers` option: the client's time moves only when the test advances it, so delays are asserted exactly and
//   "nothing more happens" is shown by an empty timer queue.

const assert = require("node:assert/strict");

/** The hang guard of every wait, in ms: TIPSD_TEST_TIMEOUT seconds, 30 s by default. */
const TEST_TIMEOUT_MS = (() => {
  const seconds = Number(process.env.TIPSD_TEST_TIMEOUT);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 30_000;
})();

/** Resolves once `predicate()` (possibly async) is truthy; rejects after the hang guard. */
async function until(predicate, { timeoutMs = TEST_TIMEOUT_MS, stepMs = 5, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (raise TIPSD_TEST_TIMEOUT on a slow machine)`);
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

/**
 * A round trip on the client's connection. The daemon answers a connection's requests in order and writes the
 * notifications a request causes before later replies, so once the barrier's reply is in, every notification
 * caused by anything answered before it has been dispatched to the listeners. Works with the real daemon and
 * the fake (test-support/fake.js). The client must be connected.
 */
async function barrier(client) {
  assert.equal(client.state, "connected", "barrier: the client is not connected");
  const reply = await client.request("tips/status", {});
  assert.ok(reply && Array.isArray(reply.tips), "barrier: no answer from the daemon");
}

/**
 * A manual clock with the client's `timers` interface (`setTimeout`, `clearTimeout`). Nothing fires until the
 * test calls `advance(ms)` or `next()`; timers due at the same time fire in the order they were set.
 */
class ManualClock {
  constructor() {
    this.time = 0;
    this.seq = 0;
    this.timers = new Map(); // id → {id, at, callback}
    this.setTimeout = this.setTimeout.bind(this);
    this.clearTimeout = this.clearTimeout.bind(this);
  }

  now() {
    return this.time;
  }

  setTimeout(callback, ms) {
    const id = ++this.seq;
    this.timers.set(id, { id, at: this.time + Math.max(0, Number(ms) || 0), callback });
    return id;
  }

  clearTimeout(id) {
    this.timers.delete(id);
  }

  soonest() {
    let first;
    for (const t of this.timers.values()) if (!first || t.at < first.at || (t.at === first.at && t.id < first.id)) first = t;
    return first;
  }

  /** The delays (ms from now) of the pending timers, soonest first. */
  pending() {
    return [...this.timers.values()].sort((a, b) => a.at - b.at || a.id - b.id).map((t) => t.at - this.time);
  }

  /** Moves time forward by `ms`, firing every timer that falls due (including ones set meanwhile); returns how many fired. */
  advance(ms) {
    const target = this.time + ms;
    let fired = 0;
    for (let t = this.soonest(); t && t.at <= target; t = this.soonest()) {
      this.timers.delete(t.id);
      this.time = t.at;
      fired++;
      t.callback();
    }
    this.time = target;
    return fired;
  }

  /** Moves time to the soonest pending timer and fires it (and any due at the same time); returns the delay. */
  next() {
    const t = this.soonest();
    if (!t) throw new Error("ManualClock.next(): no timer is pending");
    const delay = t.at - this.time;
    this.advance(delay);
    return delay;
  }
}

module.exports = { TEST_TIMEOUT_MS, until, barrier, ManualClock };
