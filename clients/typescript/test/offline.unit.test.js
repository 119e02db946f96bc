"use strict";
// Offline first (issue #37) against the in-process fake daemon (test-support/fake.js): an asynchronous storage
// (AsyncStorage's shape), the order of stored and new changes, what leaves the outbox and what stays, another
// account's changes, the visibility store's stale flag. The real node is in offline.integration.test.js.
// Waits are for conditions; the client's timers run on a ManualClock where a test needs time to pass.
const test = require("node:test");
const assert = require("node:assert/strict");
const { connect, createClient, memoryStorage, tipVisibilityStore, ConnectionError, TipsdError } = require("../dist/index");
const { FakeDaemon, recordingLogger, withoutKey } = require("../test-support/fake");
const { ManualClock, until } = require("../test-support/timing");

const fast = { initialDelayMs: 5, maxDelayMs: 20, jitter: 0 };

/** AsyncStorage's shape: every method answers with a promise, released by the test (`release()`) or at once. */
function asyncStorage(initial = {}) {
  const memory = memoryStorage(initial);
  const gate = { held: true, waiting: [] };
  const later = (fn) =>
    new Promise((resolve) => {
      const run = () => resolve(fn());
      if (gate.held) gate.waiting.push(run);
      else queueMicrotask(run);
    });
  return {
    items: memory.items,
    getItem: (key) => later(() => memory.getItem(key)),
    setItem: (key, value) => later(() => memory.setItem(key, value)),
    removeItem: (key) => later(() => memory.removeItem(key)),
    release() {
      gate.held = false;
      for (const run of gate.waiting.splice(0)) run();
    },
  };
}

function stored(changes, account) {
  return JSON.stringify({ version: 1, changes: changes.map(([method, params], i) => ({ method, params: { ...params, idempotencyKey: `stored-idempotency-key-${i}` }, queuedAt: 0, ...(account ? { account } : {}) })) });
}

const SNAPSHOT = JSON.stringify({
  version: 1,
  account: "alice",
  tips: [{ id: "filter.tip", shouldDisplay: true, status: "available", tip: { id: "filter.tip", title: "Filter", message: null, image: null, actions: [] }, at: 0 }],
});

test("an asynchronous storage: tips known once restored; changes made before come after the stored ones, each sent once with its key", async (t) => {
  const daemon = new FakeDaemon();
  daemon.down = true;
  const storage = asyncStorage({ "tipsd:tips": SNAPSHOT, "tipsd:outbox": stored([["events/donate", { id: "a" }], ["events/donate", { id: "b" }]]) });
  const client = createClient({ transport: daemon.factory, storage, reconnect: fast, logger: null });
  t.after(() => client.close());
  const store = tipVisibilityStore(client, "filter.tip");
  assert.equal(client.storedTip("filter.tip"), undefined, "not read yet");
  assert.equal(store.getSnapshot(), false);
  const made = client.donate("c");
  storage.release();
  await client.restored;
  assert.equal(store.getSnapshot(), true, "the stored value once restored");
  assert.equal(store.isStale(), true);
  assert.equal(client.storedTip("filter.tip").tip.title, "Filter");
  assert.equal(await made, undefined, "not connected: resolved once stored");
  assert.equal(client.queuedChanges, 3);
  await until(() => JSON.parse(storage.items.get("tipsd:outbox")).changes.length === 3, { what: "the new change stored" });

  daemon.down = false;
  await client.reconnectNow();
  assert.equal(await client.flush(), true);
  const sent = daemon.methods("events/donate");
  assert.deepEqual(sent.map((m) => withoutKey(m.params).id), ["a", "b", "c"]);
  assert.deepEqual(sent.slice(0, 2).map((m) => m.params.idempotencyKey), ["stored-idempotency-key-0", "stored-idempotency-key-1"]);
  await until(() => !storage.items.has("tipsd:outbox"), { what: "the outbox emptied in storage" });
  assert.equal(store.isStale(), false);
});

test("connected: a change resolves with the node's answer; one refused for good leaves the outbox, one failing for now stays", async (t) => {
  const daemon = new FakeDaemon();
  const clock = new ManualClock();
  const storage = memoryStorage();
  const client = createClient({ transport: daemon.factory, storage, reconnect: fast, logger: null, timers: clock, strict: true });
  t.after(() => client.close());
  assert.deepEqual(await client.donate("a"), { count: 1, lifetime: 1 });

  daemon.handlers["tips/invalidate"] = () => {
    throw { code: -32001, message: "unknown tip nope" };
  };
  await assert.rejects(client.invalidate("nope"), (e) => e instanceof TipsdError && e.code === -32001);
  assert.equal(client.queuedChanges, 0, "refused for good: dropped");

  let quota = true;
  daemon.handlers["tips/displayed"] = (params) => {
    if (quota) throw { code: -32015, message: "quota", data: { retryAfter: 2 } };
    return { id: params.id, shouldDisplay: false, status: "pending" };
  };
  const displayed = client.displayed("filter.tip");
  await until(() => daemon.methods("tips/displayed").length === 1 && clock.pending().length > 0, { what: "the first attempt" });
  assert.equal(client.queuedChanges, 1, "a quota: kept");
  quota = false;
  clock.advance(2000);
  assert.equal((await displayed).id, "filter.tip");
  const attempts = daemon.methods("tips/displayed");
  assert.equal(attempts.length, 2);
  assert.equal(attempts[1].params.idempotencyKey, attempts[0].params.idempotencyKey, "sent again with the same key");
  assert.equal(client.queuedChanges, 0);
});

test("a change made as another account is dropped, not sent to this session's", async (t) => {
  const daemon = new FakeDaemon();
  const init = daemon.builtin.bind(daemon);
  daemon.builtin = (conn, method, params) => {
    const result = init(conn, method, params);
    return method === "initialize" ? { ...result, auth: { account: "bob", admin: false, expiresAt: null } } : result;
  };
  const storage = memoryStorage({ "tipsd:tips": SNAPSHOT, "tipsd:outbox": stored([["events/donate", { id: "alice-made" }]], "alice") });
  const logger = recordingLogger();
  const client = createClient({ transport: daemon.factory, storage, reconnect: fast, logger });
  t.after(() => client.close());
  assert.equal(client.storedTip("filter.tip").shouldDisplay, true, "alice's snapshot, until bob signs in");
  await client.ready();
  await client.donate("bob-made");
  assert.equal(await client.flush(), true);
  assert.deepEqual(daemon.methods("events/donate").map((m) => m.params.id), ["bob-made"]);
  assert.ok(logger.warnings.some((w) => /made as alice/.test(w)));
  assert.equal(client.storedTip("filter.tip"), undefined, "alice's tips are forgotten");
  assert.equal(JSON.parse(storage.items.get("tipsd:tips")).account, "bob");
});

test("the outbox is bounded: a change beyond maxQueuedChanges is refused", async (t) => {
  const daemon = new FakeDaemon();
  daemon.down = true;
  const client = createClient({ transport: daemon.factory, storage: memoryStorage(), maxQueuedChanges: 2, reconnect: false, logger: null, strict: true });
  t.after(() => client.close());
  await client.ready();
  await assert.rejects(client.donate("a"), (e) => e instanceof ConnectionError && e.code === "ENOTCONNECTED" && /stored/.test(e.message));
  await assert.rejects(client.donate("b"), (e) => e instanceof ConnectionError && /stored/.test(e.message));
  await assert.rejects(client.donate("c"), (e) => e instanceof ConnectionError && /full/.test(e.message));
  assert.equal(client.queuedChanges, 2);
});

test("without storage nothing changes: a change made while the daemon is away is not kept", async (t) => {
  const daemon = new FakeDaemon();
  daemon.down = true;
  const client = createClient({ transport: daemon.factory, reconnect: fast, logger: null });
  t.after(() => client.close());
  await client.ready();
  assert.equal(await client.donate("lost"), undefined);
  assert.equal(client.offline, false);
  assert.equal(client.stale, false);
  assert.equal(client.queuedChanges, 0);
  daemon.down = false;
  await client.reconnectNow();
  assert.equal(await client.flush(), true);
  assert.deepEqual(daemon.methods("events/donate"), []);
});

test("connect with storage resolves once the stored state is loaded, without waiting for the network, strict or not", async (t) => {
  const daemon = new FakeDaemon();
  let attempts = 0;
  const never = () => {
    attempts++;
    return new Promise(() => {}); // a network that never answers
  };
  const storage = asyncStorage({ "tipsd:tips": SNAPSHOT });
  const connecting = connect({ transport: never, storage, strict: true, reconnect: fast, logger: null });
  storage.release();
  const client = await connecting;
  t.after(() => client.close());
  assert.equal(attempts, 1);
  assert.equal(client.state, "connecting");
  assert.equal(client.stale, true);
  assert.equal(tipVisibilityStore(client, "filter.tip").getSnapshot(), true);
  // Without storage, connect waits for the attempt (here: the daemon answers).
  const plain = await connect({ transport: daemon.factory, logger: null });
  t.after(() => plain.close());
  assert.equal(plain.state, "connected");
});
