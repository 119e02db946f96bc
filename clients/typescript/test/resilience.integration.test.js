"use strict";
// Resilience against the real daemon: absent daemon (no-op mode), restarts (reconnect + resync), and
// unsubscribing while notifications are in flight. The reconnecting clients run on a ManualClock
// (test-support/timing.js): they retry exactly when the test advances their time, whatever the machine's speed.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { connect, connectUnix, unixSocketTransport, ConnectionError, tipVisibilityStore } = require("../dist/node");
const { daemonTest, startDaemon, tempDir, FILTER_TIP, holdingTransport } = require("../test-support/tipsd");
const { recordingLogger } = require("../test-support/fake");
const { ManualClock, barrier, until } = require("../test-support/timing");

const quick = { initialDelayMs: 20, maxDelayMs: 200, jitter: 0.1 };

test("no daemon: lenient calls resolve undefined with one warning; strict connect rejects", daemonTest(), async (t) => {
  const dir = tempDir();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const socketPath = path.join(dir, "tipsd.sock");

  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = await connectUnix(socketPath, { logger, reconnect: quick, timers: clock });
  t.after(() => client.close());
  const states = [];
  client.onConnectionChange((s) => states.push(s));
  assert.equal(client.state, "disconnected");
  assert.equal(await client.donate("search.opened"), undefined);
  assert.equal(await client.invalidate("filter.tip"), undefined);
  assert.equal(await client.register([FILTER_TIP]), undefined); // remembered: registered once the daemon is up
  assert.equal(await client.performAction("filter.tip", "learn-more"), undefined);
  const seen = [];
  const off = client.observe("filter.tip", (c) => seen.push(c.shouldDisplay)); // works while absent
  const actions = [];
  client.onAction((e) => actions.push(e));
  for (let retry = 1; retry <= 3; retry++) {
    clock.next(); // the backoff delay passes: a retry, which fails
    await until(() => states.filter((s) => s === "disconnected").length === retry, { what: `retry ${retry} to fail` });
  }
  assert.equal(logger.warnings.length, 1, logger.warnings.join("\n"));
  assert.match(logger.warnings[0], /cannot reach tipsd/);

  await assert.rejects(connectUnix(socketPath, { strict: true, logger: null }), (e) => e instanceof ConnectionError && e.code === "ENOTCONNECTED");

  // The daemon appears: the client connects by itself, registers the tip and subscribes.
  const daemon = await startDaemon({ dir, socketPath });
  t.after(() => daemon.stop());
  const connected = client.waitUntilConnected(5000);
  clock.next(); // the next retry (at most 200 ms away) comes before the 5000 ms limit
  assert.equal(await connected, true);
  await until(() => seen.length === 1, { what: "initial state once connected" });
  assert.deepEqual(seen, [false]);
  for (let i = 0; i < 3; i++) await client.donate("search.opened");
  await until(() => seen.length === 2);
  assert.deepEqual(seen, [false, true]);
  await client.performAction("filter.tip", "learn-more");
  await until(() => actions.length === 1);
  assert.equal(actions[0].tipId, "filter.tip");
  off();
  assert.equal(logger.warnings.length, 1, "no warning beyond the outage's");
});

test("the daemon restarts on the same socket with a file datastore: reconnect, re-subscribe, resync", daemonTest(), async (t) => {
  const dir = tempDir();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const socketPath = path.join(dir, "tipsd.sock");
  const datastore = path.join(dir, "tips.sqlite");
  let daemon = await startDaemon({ dir, socketPath, datastore });
  t.after(() => daemon.stop());

  const logger = recordingLogger();
  // The client retries only when the test advances its clock: another client changes state before it is back.
  const clock = new ManualClock();
  const client = await connectUnix(socketPath, { logger, reconnect: { initialDelayMs: 700, maxDelayMs: 700, jitter: 0 }, timers: clock });
  t.after(() => client.close());
  const states = [];
  client.onConnectionChange((s) => states.push(s));
  await client.configure("immediate");
  await client.register([FILTER_TIP]);
  const seen = [];
  client.observe("filter.tip", (c) => seen.push([c.shouldDisplay, c.cause]));
  const actions = [];
  client.onAction((e) => actions.push(e.tipId));
  const store = tipVisibilityStore(client, "filter.tip");
  store.subscribe(() => {});
  await until(() => seen.length === 1);
  assert.deepEqual(await client.donate("search.opened"), { count: 1, lifetime: 1 });
  assert.deepEqual(await client.donate("search.opened"), { count: 2, lifetime: 2 });

  await daemon.stop("SIGTERM");
  await until(() => client.state === "disconnected", { what: "disconnect noticed" });
  assert.equal(await client.donate("search.opened"), undefined, "a no-op while the daemon is down");
  assert.equal(store.getSnapshot(), false);

  // Restart on the same path and datastore; another client makes the tip displayable before ours is back.
  daemon = await startDaemon({ dir, socketPath, datastore });
  const other = await connectUnix(socketPath, { strict: true, logger: null });
  await other.register([FILTER_TIP]);
  assert.deepEqual(await other.donate("search.opened"), { count: 3, lifetime: 3 }, "donations survived the restart");
  assert.equal((await other.status(["filter.tip"])).tips[0].shouldDisplay, true);
  await other.close();
  assert.equal(client.state, "disconnected", "not reconnected yet");
  assert.equal(seen.length, 1);

  assert.equal(clock.next(), 700, "the retry");
  await until(() => client.state === "connected", { what: "reconnection" });
  await until(() => seen.length === 2, { what: "resync" });
  assert.deepEqual(seen, [[false, "initial"], [true, "resync"]]);
  await until(() => store.getSnapshot() === true, { what: "store resync" });

  // The re-established subscriptions work.
  await client.performAction("filter.tip", "learn-more");
  await until(() => actions.length === 1 && seen.length === 3, { what: "action + invalidation after reconnect" });
  assert.deepEqual(seen[2], [false, "notification"]);
  assert.deepEqual(states, ["disconnected", "connecting", "connected"]);
  assert.equal(logger.warnings.length, 1, logger.warnings.join("\n"));
  assert.match(logger.warnings[0], /lost the connection/);

  // A crash (SIGKILL, stale socket file left behind) is survived the same way.
  await daemon.stop("SIGKILL");
  await until(() => client.state === "disconnected");
  daemon = await startDaemon({ dir, socketPath, datastore });
  assert.equal(clock.next(), 700, "the retry");
  await until(() => client.state === "connected", { what: "reconnection after a crash" });
  assert.equal((await client.status(["filter.tip"])).tips[0].status, "invalidated", "the acknowledged invalidation survived");
});

test("a stdio daemon that dies is replaced by a fresh child, with registrations restored", daemonTest(), async (t) => {
  const { connectStdio } = require("../dist/node");
  const { TIPSD } = require("../test-support/tipsd");
  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = await connectStdio({ command: TIPSD, args: ["--datastore", ":memory:", "--clock", "virtual", "--allow-testing"], logger, reconnect: quick, timers: clock });
  t.after(() => client.close());
  await client.register([FILTER_TIP]);
  const seen = [];
  client.observe("filter.tip", (c) => seen.push(c.shouldDisplay));
  for (let i = 0; i < 3; i++) await client.donate("search.opened");
  await until(() => seen.length === 2);
  // Kill the child: the client spawns a new one (an empty in-memory datastore), re-registers the tip and resyncs.
  client.exit();
  await until(() => client.state === "disconnected", { what: "child gone" }); // and it stays so until the clock moves
  clock.next(); // the retry spawns a new child
  await until(() => client.state === "connected", { what: "new child" });
  await until(() => seen.length === 3, { what: "resync to false" });
  assert.deepEqual(seen, [false, true, false]);
  assert.deepEqual(await client.donate("search.opened"), { count: 1, lifetime: 1 });
});

test("unsubscribing while notifications are in flight: the listeners are never called", daemonTest(), async (t) => {
  const daemon = await startDaemon();
  t.after(() => daemon.cleanup());
  const holder = holdingTransport(unixSocketTransport(daemon.socketPath));
  const client = await connect({ transport: holder.factory, strict: true, logger: null });
  t.after(() => client.close());
  const driver = await connectUnix(daemon.socketPath, { strict: true, logger: null });
  t.after(() => driver.close());
  await driver.register([FILTER_TIP]);

  const calls = [];
  const keepCalls = [];
  const unobserve = client.observe("filter.tip", (c) => calls.push(c.shouldDisplay));
  client.observe("filter.tip", (c) => keepCalls.push(c.shouldDisplay)); // a second listener that stays
  const offAction = client.onAction((e) => calls.push(e));
  await until(() => calls.length === 1 && keepCalls.length === 1);
  await barrier(client); // the subscriptions are in place

  holder.hold();
  for (let i = 0; i < 3; i++) await driver.donate("search.opened");
  await driver.performAction("filter.tip", "learn-more");
  // Wait until the notifications have reached the client (held: received but not dispatched).
  const heldMethods = () => holder.held.map((m) => JSON.parse(m).method);
  await until(
    () => heldMethods().filter((m) => m === "tips/actionPerformed").length === 1 && heldMethods().filter((m) => m === "tips/shouldDisplayChanged").length === 4,
    { what: "notifications in flight" },
  );
  unobserve();
  offAction();
  holder.release();
  await barrier(client); // a round trip after the unsubscriptions: every notification sent before it is dispatched
  assert.deepEqual(calls, [false]);
  assert.deepEqual(keepCalls, [false, true, false]);
});

test("a client vanishing mid-flight does not disturb the daemon or other clients", daemonTest(), async (t) => {
  const daemon = await startDaemon();
  t.after(() => daemon.cleanup());
  const survivor = await connectUnix(daemon.socketPath, { strict: true, logger: null });
  t.after(() => survivor.close());
  await survivor.register([FILTER_TIP]);
  const seen = [];
  survivor.observe("filter.tip", (c) => seen.push(c.shouldDisplay));
  for (let round = 0; round < 5; round++) {
    const doomed = await connectUnix(daemon.socketPath, { logger: null, reconnect: false });
    doomed.observe({}, () => {});
    doomed.onAction(() => {});
    await doomed.status();
    const pending = [doomed.donate("search.opened"), doomed.donate("other.event")];
    await doomed.close(); // abrupt: requests and notifications still in flight
    await Promise.all(pending); // lenient: in-flight calls settle (to a result or undefined), never reject
  }
  assert.equal(daemon.exited, null, "the daemon is still running");
  // Whether the vanished clients' donations were processed does not matter: three more make the tip displayable.
  for (let i = 0; i < 3; i++) await survivor.donate("search.opened");
  await until(() => seen.includes(true), { what: "survivor notified" });
  assert.ok((await survivor.status(["filter.tip"])).tips[0].shouldDisplay);
});
