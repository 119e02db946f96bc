"use strict";
// Issue #37, offline first, against a REAL hosted tipsd (`tipsd serve --hosted`) and a real PostgreSQL, both started
// by test-support/hosted_node.py, with tokens minted by PyJWT. The client keeps its state in files
// (`fileStorage`, the Node adapter); "no network" is a WebSocket constructor that throws, as a phone in airplane
// mode fails at once; the node's restart is kill -9, then a start on the same port.
//
// - a client started with no network draws the tips of a stored snapshot synchronously — the values the node gave,
//   with their display copy, marked stale — and its observers hear them (`cause: "stored"`) before any connection;
// - 100 donations made offline, across a client restart, reach the node exactly once and in order (the account's
//   stored donations, read by the admin with accounts/export), even though, during the replay, the node is killed
//   with the answer to the change in flight lost, and later the app is killed with another answer in flight: each
//   such change is sent again with its idempotency key and the node applies it once; an observer of a stored tip
//   hears the change the queued donations made when the node answers them.
// Every wait is for a condition (test-support/timing.js).
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { connectUnix, connectWebSocket, createClient, fileStorage, tipVisibilityStore, webSocketTransport } = require("../dist/node");
const { until } = require("../test-support/timing");
const { hostedTest, startHosted } = require("../test-support/hosted");
const { network } = require("../test-support/network");

const needsWebSocket = typeof globalThis.WebSocket !== "function" ? { skip: "no global WebSocket in this Node (Node 20: --experimental-websocket)" } : {};
const FAST_RECONNECT = { initialDelayMs: 20, maxDelayMs: 200, jitter: 0 };

let started;
function hosted() {
  if (!started) started = startHosted();
  return started;
}
test.after(async () => {
  if (started) await (await started).close();
});

function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-offline-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A client of `account` over `net` keeping its state in `dir` (returns at once, like an app's module singleton). */
function deviceClient(h, account, net, dir) {
  return createClient({
    transport: webSocketTransport(h.url, { token: () => h.token(account), WebSocket: net.WebSocket, authorizationHeader: false }),
    storage: fileStorage(dir),
    reconnect: FAST_RECONNECT,
    logger: null,
  });
}

test("offline first: a client started with no network draws the stored tips synchronously, marked stale", hostedTest(needsWebSocket), async (t) => {
  const h = await hosted();
  const dir = tempDir(t);
  const account = "ts-offline-snapshot";

  // A first run, online: three searches make filter.tip displayable; every tip's state is stored as observed.
  const first = await connectWebSocket(h.url, { token: () => h.token(account), storage: fileStorage(dir), strict: true, logger: null });
  for (let i = 0; i < 3; i++) await first.donate("search.opened");
  const seen = new Map();
  first.observe({}, (change) => seen.set(change.id, change));
  const { tips } = await first.status();
  await until(() => tips.every((s) => seen.get(s.id) && seen.get(s.id).shouldDisplay === s.shouldDisplay), { what: "every tip observed" });
  const shown = tips.filter((s) => s.shouldDisplay).map((s) => s.id);
  const hidden = tips.filter((s) => !s.shouldDisplay).map((s) => s.id);
  assert.ok(shown.includes("filter.tip") && hidden.length > 0, `some tips show and some do not: ${JSON.stringify(shown)}`);
  assert.equal(first.stale, false);
  await first.flush();
  await first.close();

  // The next start, with no network: right after createClient, before any connection or await.
  const net = network();
  const offline = deviceClient(h, account, net, dir);
  t.after(() => offline.close());
  assert.notEqual(offline.state, "connected");
  assert.equal(offline.stale, true);
  for (const state of tips) {
    const store = tipVisibilityStore(offline, state.id);
    assert.equal(store.getSnapshot(), state.shouldDisplay, `${state.id}: the stored value, drawn synchronously`);
    assert.equal(store.isStale(), true);
    assert.deepEqual(store.getState().tip, state.tip, `${state.id}: the stored display copy`);
    assert.equal(store.getState().cause, "stored");
  }
  const filterTip = tips.find((s) => s.id === "filter.tip");
  assert.ok(filterTip.tip.title, "filter.tip has a title (its variant's)");
  assert.equal(offline.storedTip("filter.tip").tip.title, filterTip.tip.title);

  // Observers hear the stored states before any connection; the store keeps showing them while offline.
  const heard = [];
  offline.observe({}, (change) => heard.push(change));
  const store = tipVisibilityStore(offline, "filter.tip");
  let storeChanges = 0;
  const unsubscribe = store.subscribe(() => storeChanges++);
  t.after(unsubscribe);
  await until(() => heard.length === tips.length, { what: "the stored states delivered" });
  assert.ok(heard.every((c) => c.cause === "stored"));
  assert.deepEqual(new Map(heard.map((c) => [c.id, c.shouldDisplay])), new Map(tips.map((s) => [s.id, s.shouldDisplay])));
  assert.equal(offline.connected, false, "all of this without a connection");
  assert.equal(store.getSnapshot(), true);

  // connectWebSocket with storage resolves with the stored state, offline, strict or not (closed at once: one client
  // per storage at a time).
  const viaConnect = await connectWebSocket(h.url, {
    token: () => h.token(account),
    storage: fileStorage(dir),
    WebSocket: net.WebSocket,
    authorizationHeader: false,
    strict: true,
    logger: null,
  });
  assert.equal(viaConnect.connected, false);
  assert.equal(tipVisibilityStore(viaConnect, "filter.tip").getSnapshot(), true);
  assert.equal(viaConnect.stale, true);
  await viaConnect.close();

  // Back online: the state is the node's again, no longer stale (the store says so to its listeners).
  net.offline = false;
  await offline.reconnectNow();
  await until(() => offline.connected && !store.isStale(), { what: "connected and fresh" });
  assert.equal(store.getSnapshot(), true);
  assert.ok(storeChanges >= 1, "the store's listeners heard that the state is no longer stale");
});

test("offline first: 100 donations made offline across a client restart reach the node once each, in order, though the node and then the app restart mid-replay", hostedTest(needsWebSocket), async (t) => {
  const h = await hosted();
  const dir = tempDir(t);
  const account = "ts-offline-queue";
  const admin = await connectUnix(h.socket, { token: h.admin, strict: true, logger: null });
  t.after(() => admin.close());
  const stored = async () => {
    await admin.waitUntilConnected();
    const exported = await admin.accountsExport(account);
    return (exported.state.donations || {})["search.opened"] || [];
  };
  /** The node's count, or -1 while the admin's connection is being replaced (the node restarted). */
  const applied = () => stored().then((d) => d.length, () => -1);

  // Online once: filter.tip is stored as not displayable (no searches yet).
  const net = network();
  net.offline = false;
  const before = deviceClient(h, account, net, dir);
  const values = [];
  before.observe("filter.tip", (change) => values.push(change.shouldDisplay));
  await until(() => values.length === 1, { what: "filter.tip's state" });
  assert.deepEqual(values, [false]);
  await before.close();

  // Airplane mode: 50 donations, the app is killed (closed) and started again, 50 more.
  net.offline = true;
  const firstRun = deviceClient(h, account, net, dir);
  for (let i = 0; i < 50; i++) assert.equal(await firstRun.donate("search.opened", { seq: i }), undefined, "queued: resolves at once");
  assert.equal(firstRun.queuedChanges, 50);
  await firstRun.close();

  const app = deviceClient(h, account, net, dir);
  t.after(() => app.close());
  assert.equal(app.queuedChanges, 50, "the first run's changes were stored");
  const heard = [];
  app.observe("filter.tip", (change) => heard.push([change.shouldDisplay, change.cause]));
  for (let i = 50; i < 100; i++) await app.donate("search.opened", { seq: i });
  assert.equal(app.queuedChanges, 100);
  await until(() => heard.length === 1, { what: "filter.tip's stored state" });
  assert.deepEqual(heard, [[false, "stored"]], "offline, eligibility stays the last known state");
  assert.equal(tipVisibilityStore(app, "filter.tip").getSnapshot(), false);
  assert.deepEqual(await stored(), [], "nothing reached the node while offline");

  // Back online; the answer to the 40th donation is lost, and the node is killed once it has applied it.
  net.loseAnswersAfter = 40;
  net.offline = false;
  app.reconnectNow();
  await until(async () => (await applied()) === 40, { what: "40 donations applied" });
  assert.equal(app.queuedChanges, 61, "the 40th is still queued: its answer never came");
  // The observer heard what the queued donations changed (the third made filter.tip displayable) when the node
  // answered them, not before.
  await until(() => heard.length === 2, { what: "filter.tip's change" });
  assert.deepEqual(heard[1], [true, "notification"]);
  // After the restart the 40th is sent again (the 41st send); the answer to the 70th is lost in turn, and the app is
  // killed while it waits for it.
  net.loseAnswersAfter = 71;
  await h.restart();
  await until(async () => (await applied()) === 70, { what: "70 donations applied" });
  assert.equal(app.queuedChanges, 31);
  await app.close();

  const relaunched = deviceClient(h, account, net, dir);
  t.after(() => relaunched.close());
  assert.equal(relaunched.queuedChanges, 31, "the 70th and the 30 after it");
  assert.equal(relaunched.storedTip("filter.tip").shouldDisplay, true, "the snapshot followed the node's answer");
  assert.equal(await relaunched.flush(60_000), true, "every queued change answered");
  assert.equal(relaunched.queuedChanges, 0);

  const donations = await stored();
  assert.equal(donations.length, 100, "none lost, none doubled");
  assert.deepEqual(donations.map(([, info]) => info.seq), Array.from({ length: 100 }, (_, i) => i), "in the order made");
  const search = (await relaunched.inspectState()).events.find((e) => e.id === "search.opened");
  assert.equal(search.lifetime, 100);
  assert.equal(net.donationsSent, 102, "the two changes whose answers were lost were each sent twice");
  const file = JSON.parse(fs.readFileSync(path.join(dir, "tipsd%3Atips.json"), "utf8"));
  assert.equal(file.account, account);
  assert.equal(file.tips.find((s) => s.id === "filter.tip").shouldDisplay, true);
  assert.equal(fs.existsSync(path.join(dir, "tipsd%3Aoutbox.json")), false, "the outbox is empty: its file is gone");
});
