"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { connect, tipVisibilityStore } = require("../dist/index");
const { FakeDaemon } = require("../test-support/fake");
const { ManualClock, barrier, until } = require("../test-support/timing");

async function setup() {
  const daemon = new FakeDaemon();
  const clock = new ManualClock(); // the client retries only when a test advances it
  const client = await connect({ transport: daemon.factory, logger: null, reconnect: { initialDelayMs: 5, maxDelayMs: 10, jitter: 0 }, timers: clock });
  await client.register([{ id: "filter.tip", title: "Filter" }]);
  return { daemon, client, clock };
}

test("tipVisibilityStore: subscribe/getSnapshot follow shouldDisplay, as useSyncExternalStore expects", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  const store = tipVisibilityStore(client, "filter.tip");
  assert.equal(store.getSnapshot(), false);
  assert.equal(store.getServerSnapshot(), false);
  assert.equal(daemon.methods("tips/observe").length, 0, "observes lazily");
  let renders = 0;
  const unsubscribe = store.subscribe(() => renders++);
  await until(() => daemon.subs.size === 1);
  daemon.setShouldDisplay("filter.tip", true);
  await until(() => store.getSnapshot() === true);
  assert.equal(renders, 1);
  assert.equal(store.getSnapshot(), store.getSnapshot(), "stable snapshot");
  assert.equal(store.getState().status, "available");
  daemon.setShouldDisplay("filter.tip", false);
  await until(() => store.getSnapshot() === false);
  assert.equal(renders, 2);
  unsubscribe();
  await until(() => daemon.methods("tips/unobserve").length === 1);
  daemon.setShouldDisplay("filter.tip", true);
  await barrier(client);
  assert.equal(renders, 2);
});

test("tipVisibilityStore: cached per client and tip, one daemon subscription for many subscribers", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  const a = tipVisibilityStore(client, "filter.tip");
  assert.equal(tipVisibilityStore(client, "filter.tip"), a);
  assert.notEqual(tipVisibilityStore(client, "other.tip"), a);
  assert.notEqual(tipVisibilityStore(client, "filter.tip", { hideWhileDisconnected: false }), a);
  const offs = [a.subscribe(() => {}), a.subscribe(() => {}), a.subscribe(() => {})];
  await barrier(client); // after the observe result
  assert.equal(daemon.methods("tips/observe").length, 1);
  offs[0]();
  offs[1]();
  await barrier(client);
  assert.equal(daemon.methods("tips/unobserve").length, 0);
  offs[2]();
  await until(() => daemon.methods("tips/unobserve").length === 1);
});

test("tipVisibilityStore: false while disconnected, the daemon's value again after reconnecting", async (t) => {
  const { daemon, client, clock } = await setup();
  t.after(() => client.close());
  const store = tipVisibilityStore(client, "filter.tip");
  const keep = tipVisibilityStore(client, "filter.tip", { hideWhileDisconnected: false });
  let changes = 0;
  store.subscribe(() => changes++);
  keep.subscribe(() => {});
  daemon.setShouldDisplay("filter.tip", true);
  await until(() => store.getSnapshot() === true && keep.getSnapshot() === true);
  daemon.crash();
  await until(() => client.state === "disconnected"); // and it stays so until the clock moves
  assert.equal(store.getSnapshot(), false);
  assert.equal(keep.getSnapshot(), true);
  clock.next(); // the retry
  await until(() => client.state === "connected");
  await until(() => store.getSnapshot() === true);
  assert.ok(changes >= 3);
});

test("tipVisibilityStore: a store unsubscribing during its own notification is safe", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  const store = tipVisibilityStore(client, "filter.tip");
  let calls = 0;
  let off2;
  const off1 = store.subscribe(() => {
    calls++;
    off2();
  });
  off2 = store.subscribe(() => {
    calls += 100;
  });
  daemon.setShouldDisplay("filter.tip", true);
  await until(() => store.getSnapshot() === true);
  await barrier(client);
  assert.equal(calls, 1);
  off1();
});
