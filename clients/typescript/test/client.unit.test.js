"use strict";
// Client logic against an in-process fake daemon (test-support/fake.js): correlation, notifications,
// subscriptions, no-op and strict modes, reconnection. The real daemon is exercised in *.integration.test.js.
// No test depends on speed (issue #17, see test-support/timing.js): the client's timers run on a ManualClock,
// absence is shown with a barrier (a later reply) or an empty timer queue, and waits are for conditions.
const test = require("node:test");
const assert = require("node:assert/strict");
const { createClient, connect, TipsdError, ConnectionError, TipsClient, PROTOCOL_VERSION } = require("../dist/index");
const { FAKE_SERVER_NAME, FakeDaemon, recordingLogger } = require("../test-support/fake");
const { ManualClock, barrier, until } = require("../test-support/timing");

const fast = { initialDelayMs: 5, maxDelayMs: 20, jitter: 0 };
const IDEMPOTENT = new Set(["events/donate", "tips/displayed", "tips/invalidate", "tips/performAction", "tips/resetEligibility", "parameters/set", "tips/setVariant", "datastore/reset"]);

async function setup(options = {}) {
  const daemon = new FakeDaemon();
  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = await connect({ transport: daemon.factory, logger, reconnect: fast, timers: clock, ...options });
  return { daemon, logger, client, clock };
}

test("initialize is sent first, with the protocol version and client info", async (t) => {
  const { daemon, client } = await setup({ clientInfo: { name: "app", version: "2" }, locale: "fr" });
  t.after(() => client.close());
  assert.equal(client.state, "connected");
  assert.deepEqual(daemon.log[0], { jsonrpc: "2.0", id: daemon.log[0].id, method: "initialize", params: { protocolVersion: PROTOCOL_VERSION, clientInfo: { name: "app", version: "2" }, locale: "fr" } });
  assert.equal(client.initializeResult.serverInfo.name, FAKE_SERVER_NAME);
});

test("every typed method sends its protocol method and params", async (t) => {
  const { daemon, client } = await setup({ strict: true });
  t.after(() => client.close());
  // Changes carry a fresh idempotency key (checked, then left out of the comparison).
  const keys = new Set();
  const echo = (params, conn, message) => {
    if (IDEMPOTENT.has(message.method)) {
      assert.match(params.idempotencyKey, /^[0-9a-f-]{16,}$/, message.method);
      keys.add(params.idempotencyKey);
      const { idempotencyKey, ...rest } = params;
      params = Object.keys(rest).length === 0 ? undefined : rest;
    } else {
      assert.equal(params?.idempotencyKey, undefined, message.method);
    }
    return { echoed: message.method, params: params === undefined ? "absent" : params };
  };
  const calls = [
    [() => client.donate("search.opened"), "events/donate", { id: "search.opened" }],
    [() => client.donate("trail.visited", { region: "north" }), "events/donate", { id: "trail.visited", info: { region: "north" } }],
    [() => client.configureEvent("e", 5), "events/configure", { id: "e", maxDonations: 5 }],
    [() => client.invalidate("t"), "tips/invalidate", { id: "t" }],
    [() => client.invalidate("t", "actionPerformed"), "tips/invalidate", { id: "t", reason: "actionPerformed" }],
    [() => client.resetEligibility("t"), "tips/resetEligibility", { id: "t" }],
    [() => client.configure("daily"), "tips/configure", { displayFrequency: "daily" }],
    [() => client.configure({ displayFrequency: "weekly" }), "tips/configure", { displayFrequency: "weekly" }],
    [() => client.register([{ id: "t", title: "T" }]), "tips/register", { tips: [{ id: "t", title: "T" }] }],
    [() => client.unregister(["t"]), "tips/unregister", { ids: ["t"] }],
    [() => client.registerGroup({ id: "g", priority: "ordered", tips: ["a", "b"] }), "groups/register", { id: "g", priority: "ordered", tips: ["a", "b"] }],
    [() => client.unregisterGroup("g"), "groups/unregister", { id: "g" }],
    [() => client.defineParameters([{ id: "p", default: false, transient: true }]), "parameters/define", { parameters: [{ id: "p", default: false, transient: true }] }],
    [() => client.setParameter("p", true), "parameters/set", { id: "p", value: true }],
    [() => client.displayed("t"), "tips/displayed", { id: "t" }],
    [() => client.displayed("t", 2.5), "tips/displayed", { id: "t", duration: 2.5 }],
    [() => client.status(), "tips/status", {}],
    [() => client.status(["a"]), "tips/status", { ids: ["a"] }],
    [() => client.explain("t"), "tips/explain", { id: "t" }],
    [() => client.performAction("t", "learn-more"), "tips/performAction", { id: "t", actionId: "learn-more" }],
    [() => client.performAction("t", "x", { invalidate: false }), "tips/performAction", { id: "t", actionId: "x", invalidate: false }],
    [() => client.showAllTipsForTesting(), "testing/showAllTips", "absent"],
    [() => client.hideAllTipsForTesting(), "testing/hideAllTips", "absent"],
    [() => client.showTipsForTesting(["a"]), "testing/showTips", { ids: ["a"] }],
    [() => client.hideTipsForTesting(["a"]), "testing/hideTips", { ids: ["a"] }],
    [() => client.clearTestingOverrides(), "testing/clear", "absent"],
    [() => client.datastoreReset(), "datastore/reset", "absent"],
    [() => client.clockNow(), "clock/now", "absent"],
    [() => client.clockAdvance(60), "clock/advance", { seconds: 60 }],
    [() => client.clockSet(1767225600), "clock/set", { now: 1767225600 }],
    [() => client.discover(), "rpc.discover", "absent"],
    [() => client.metrics(), "metrics/get", {}],
    [() => client.metrics({ since: 1767225600, tips: ["t"] }), "metrics/get", { since: 1767225600, tips: ["t"] }],
    [() => client.inspectState(), "inspect/state", {}],
    [() => client.analyticsRead(), "analytics/read", {}],
    [() => client.analyticsRead({ after: 7, limit: 10 }), "analytics/read", { after: 7, limit: 10 }],
    [() => client.request("tips/status", { ids: ["z"] }), "tips/status", { ids: ["z"] }],
    [() => client.shutdown(), "shutdown", "absent"],
  ];
  for (const [, method] of calls) daemon.handlers[method] = echo;
  for (const [call, method, params] of calls) {
    assert.deepEqual(await call(), { echoed: method, params }, method);
  }
  assert.equal(keys.size, calls.filter(([, method]) => IDEMPOTENT.has(method)).length, "one key per change");
  client.notify("$/cancelRequest", { id: 12345 });
  client.exit();
  await until(() => daemon.methods("exit").length === 1, { what: "exit notification" });
  assert.deepEqual(daemon.methods("$/cancelRequest")[0], { jsonrpc: "2.0", method: "$/cancelRequest", params: { id: 12345 } });
  assert.equal(daemon.methods("exit")[0].id, undefined);
});

test("responses are correlated by id, whatever their order, including batch arrays", async (t) => {
  const { daemon, client } = await setup({ strict: true });
  t.after(() => client.close());
  const waiting = [];
  daemon.handlers["events/donate"] = (params, conn, message) => {
    waiting.push({ conn, id: message.id, count: params.info.n });
    return FakeDaemon.NO_REPLY;
  };
  const promises = [1, 2, 3, 4].map((n) => client.donate("e", { n }));
  await until(() => waiting.length === 4);
  const [a, b, c, d] = waiting;
  a.conn.deliver({ jsonrpc: "2.0", id: c.id, result: { count: c.count } });
  a.conn.deliver([
    { jsonrpc: "2.0", id: d.id, result: { count: d.count } },
    { jsonrpc: "2.0", id: a.id, result: { count: a.count } },
  ]);
  a.conn.deliver({ jsonrpc: "2.0", id: 999999, result: "stray" }); // unknown id: ignored
  a.conn.deliver({ jsonrpc: "2.0", id: b.id, result: { count: b.count } });
  assert.deepEqual(await Promise.all(promises), [1, 2, 3, 4].map((n) => ({ count: n })));
});

test("a server→client request is answered with -32601; garbage is logged and ignored", async (t) => {
  const { daemon, client, logger } = await setup();
  t.after(() => client.close());
  const conn = [...daemon.connections][0];
  conn.onMessage("not json");
  conn.deliver({ jsonrpc: "2.0", id: "srv-1", method: "client/doSomething", params: {} });
  await until(() => conn.sent.some((m) => m.id === "srv-1"));
  assert.equal(conn.sent.find((m) => m.id === "srv-1").error.code, -32601);
  assert.ok(logger.warnings.some((w) => w.includes("not JSON")));
  assert.equal(client.state, "connected");
});

test("errors: strict rejects with TipsdError; lenient resolves undefined and logs each failure", async (t) => {
  const daemon = new FakeDaemon();
  daemon.handlers["tips/invalidate"] = () => {
    throw { code: -32001, message: "unknown tip nope" };
  };
  const strict = await connect({ transport: daemon.factory, strict: true, logger: null });
  const lenientLog = recordingLogger();
  const lenient = await connect({ transport: daemon.factory, logger: lenientLog });
  t.after(() => Promise.all([strict.close(), lenient.close()]));
  await assert.rejects(strict.invalidate("nope"), (e) => e instanceof TipsdError && e.code === -32001 && e.method === "tips/invalidate");
  assert.equal(await lenient.invalidate("nope"), undefined);
  assert.equal(await lenient.invalidate("nope"), undefined);
  assert.equal(lenientLog.warnings.filter((w) => w.includes("unknown tip nope")).length, 2);
});

test("daemon absent: lenient calls are no-ops resolving undefined, with one warning; the client keeps retrying", async (t) => {
  const daemon = new FakeDaemon();
  daemon.down = true;
  let attempts = 0;
  const factory = () => (attempts++, daemon.factory());
  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = await connect({ transport: factory, logger, reconnect: fast, timers: clock });
  t.after(() => client.close());
  assert.equal(client.state, "disconnected");
  assert.equal(await client.donate("search.opened"), undefined);
  assert.equal(await client.invalidate("filter.tip"), undefined);
  assert.equal(await client.status(), undefined);
  const unsubscribe = client.onAction(() => {});
  assert.equal(typeof unsubscribe, "function");
  unsubscribe();
  for (let attempt = 2; attempt <= 4; attempt++) {
    clock.next(); // the backoff delay passes: another attempt, which fails
    await until(() => attempts === attempt && client.state === "disconnected", { what: `attempt ${attempt} to fail` });
  }
  assert.equal(logger.warnings.length, 1, logger.warnings.join("\n"));
  assert.match(logger.warnings[0], /cannot reach tipsd/);
  daemon.down = false;
  const connected = client.waitUntilConnected(1000);
  clock.next(); // the next retry (at most 20 ms away) comes before the 1000 ms limit
  assert.equal(await connected, true);
  assert.deepEqual(await client.donate("search.opened"), { count: 1, lifetime: 1 });
});

test("daemon absent, strict: connect rejects with ENOTCONNECTED; createClient calls reject", async () => {
  const daemon = new FakeDaemon();
  daemon.down = true;
  await assert.rejects(connect({ transport: daemon.factory, strict: true, logger: null }), (e) => e instanceof ConnectionError && e.code === "ENOTCONNECTED");
  const client = createClient({ transport: daemon.factory, strict: true, logger: null, reconnect: false });
  await assert.rejects(client.donate("x"), (e) => e instanceof ConnectionError && e.code === "ENOTCONNECTED");
  await client.close();
  await assert.rejects(client.donate("x"), (e) => e instanceof ConnectionError && e.code === "ECLOSED");
});

test("the default logger is console.warn, once per outage", async () => {
  const daemon = new FakeDaemon();
  daemon.down = true;
  const original = console.warn;
  const seen = [];
  console.warn = (...a) => seen.push(a.join(" "));
  try {
    const client = await connect({ transport: daemon.factory, reconnect: false });
    await client.donate("a");
    await client.donate("b");
    await client.close();
  } finally {
    console.warn = original;
  }
  assert.equal(seen.length, 1);
  assert.match(seen[0], /^\[tipsd\] .*cannot reach tipsd/);
});

test("calls made while the first connection is being established wait for it", async (t) => {
  const daemon = new FakeDaemon();
  let release;
  const gate = new Promise((r) => (release = r));
  const slowFactory = async () => {
    await gate;
    return daemon.factory();
  };
  const client = createClient({ transport: slowFactory, logger: null });
  t.after(() => client.close());
  assert.equal(client.state, "connecting");
  const donation = client.donate("search.opened");
  release();
  assert.deepEqual(await donation, { count: 1, lifetime: 1 });
  assert.deepEqual(daemon.log.map((m) => m.method), ["initialize", "events/donate"]);
});

test("in-flight requests when the connection drops: lenient → undefined, strict → ECONNCLOSED", async () => {
  for (const strict of [false, true]) {
    const daemon = new FakeDaemon();
    daemon.handlers["events/donate"] = () => FakeDaemon.NO_REPLY;
    const client = await connect({ transport: daemon.factory, strict, logger: null, reconnect: false });
    const p = client.donate("x");
    await until(() => daemon.methods("events/donate").length === 1);
    daemon.crash();
    if (strict) await assert.rejects(p, (e) => e.code === "ECONNCLOSED");
    else assert.equal(await p, undefined);
    await client.close();
  }
});

test("requests time out after requestTimeoutMs", async (t) => {
  const daemon = new FakeDaemon();
  daemon.handlers["tips/status"] = () => FakeDaemon.NO_REPLY;
  const clock = new ManualClock();
  const client = await connect({ transport: daemon.factory, strict: true, logger: null, requestTimeoutMs: 30, timers: clock });
  t.after(() => client.close());
  const status = client.status();
  await until(() => daemon.methods("tips/status").length === 1);
  assert.deepEqual(clock.pending(), [30], "one timer: the request's");
  assert.equal(clock.advance(29), 0, "not due after 29 ms");
  assert.equal(clock.advance(1), 1, "due after 30 ms");
  await assert.rejects(status, (e) => e instanceof ConnectionError && e.code === "ETIMEDOUT");
});

test("a daemon with another major protocol version is refused", async () => {
  const daemon = new FakeDaemon();
  daemon.handlers.initialize = () => ({ protocolVersion: "2.0", serverInfo: { name: FAKE_SERVER_NAME, version: "9" }, capabilities: {} });
  await assert.rejects(connect({ transport: daemon.factory, strict: true, logger: null }), (e) => e.code === "EPROTOCOL");
  const refusing = new FakeDaemon();
  refusing.handlers.initialize = () => {
    throw { code: -32602, message: "unsupported protocol version" };
  };
  await assert.rejects(connect({ transport: refusing.factory, strict: true, logger: null }), (e) => e.code === "EPROTOCOL");
});

test("observe: initial state, then changes, never the same value twice, never after unsubscribe", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  await client.register([{ id: "filter.tip", title: "Filter" }]);
  const seen = [];
  const unsubscribe = client.observe("filter.tip", (change) => seen.push([change.id, change.shouldDisplay, change.cause]));
  await until(() => seen.length === 1);
  assert.deepEqual(seen, [["filter.tip", false, "initial"]]);
  daemon.setShouldDisplay("filter.tip", true);
  daemon.setShouldDisplay("filter.tip", true); // a duplicate (e.g. after coalescing) is not delivered twice
  daemon.setShouldDisplay("other.tip", true); // another tip: not this subscription
  await until(() => seen.length === 2);
  unsubscribe();
  unsubscribe(); // idempotent
  daemon.setShouldDisplay("filter.tip", false);
  await barrier(client); // the notification, if any, came before this reply
  assert.deepEqual(seen, [["filter.tip", false, "initial"], ["filter.tip", true, "notification"]]);
  await until(() => daemon.methods("tips/unobserve").length === 1);
  assert.equal(daemon.subs.size, 0);
});

test("unsubscribing while a notification is in flight: the listener is never called", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  await client.register([{ id: "filter.tip", title: "Filter" }]);
  const calls = [];
  const unsubscribe = client.observe("filter.tip", (c) => calls.push(c.shouldDisplay));
  const actionCalls = [];
  const offAction = client.onAction((e) => actionCalls.push(e));
  await until(() => calls.length === 1 && daemon.subs.size === 2);
  const conn = [...daemon.connections][0];
  conn.held = []; // the daemon has written the notifications; the client has not read them yet
  daemon.setShouldDisplay("filter.tip", true);
  daemon.performAction("filter.tip", "learn-more");
  assert.equal(conn.held.length, 2);
  unsubscribe();
  offAction();
  conn.release();
  await barrier(client);
  assert.deepEqual(calls, [false]);
  assert.deepEqual(actionCalls, []);
});

test("a listener unsubscribing another listener during one dispatch: the other is not called", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  await client.register([{ id: "filter.tip", title: "Filter" }]);
  const order = [];
  let offB;
  const offA = client.observe("filter.tip", (c) => {
    order.push(`a:${c.shouldDisplay}`);
    if (c.shouldDisplay) offB();
  });
  offB = client.observe("filter.tip", (c) => order.push(`b:${c.shouldDisplay}`));
  await until(() => order.length === 2 && daemon.subs.size === 2);
  const conn = [...daemon.connections][0];
  conn.held = [];
  daemon.setShouldDisplay("filter.tip", true); // two notifications, one per subscription, delivered in one run
  conn.release();
  await barrier(client);
  assert.deepEqual(order.slice(2), ["a:true"]);
  offA();
});

test("unsubscribing before the observe result arrives unobserves the returned subscription", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  const calls = [];
  const unsubscribe = client.observe({}, (c) => calls.push(c));
  unsubscribe(); // tips/observe already sent, not answered yet
  await until(() => daemon.methods("tips/unobserve").length === 1);
  const observed = daemon.methods("tips/observe");
  assert.equal(observed.length, 1);
  assert.equal(daemon.subs.size, 0);
  assert.deepEqual(calls, []);
});

test("a notification in the same read as the observe result is not lost", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  await client.register([{ id: "filter.tip", title: "Filter" }]);
  const conn = [...daemon.connections][0];
  const real = daemon.builtin.bind(daemon);
  daemon.handlers["tips/observe"] = (params, c, message) => {
    const result = real(c, "tips/observe", params);
    c.held = [];
    c.deliver({ jsonrpc: "2.0", id: message.id, result });
    daemon.setShouldDisplay("filter.tip", true);
    c.release(); // response and notification arrive together
    return FakeDaemon.NO_REPLY;
  };
  const seen = [];
  client.observe("filter.tip", (c) => seen.push([c.shouldDisplay, c.cause]));
  await until(() => seen.length === 2);
  assert.deepEqual(seen, [[false, "initial"], [true, "notification"]]);
  assert.ok(conn);
});

test("observing a tip before it is registered subscribes once it is registered", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  daemon.handlers["tips/observe"] = (params, conn) => {
    if (params.ids && params.ids.some((id) => !daemon.tips.has(id))) throw { code: -32001, message: "unknown tip" };
    delete daemon.handlers["tips/observe"];
    return daemon.builtin(conn, "tips/observe", params);
  };
  const seen = [];
  client.observe("late.tip", (c) => seen.push(c.shouldDisplay));
  await barrier(client); // the observe request went first and was refused
  assert.equal(daemon.methods("tips/observe").length, 1);
  assert.deepEqual(seen, []);
  await client.register([{ id: "late.tip", title: "Late" }]);
  await until(() => seen.length === 1);
  daemon.setShouldDisplay("late.tip", true);
  await until(() => seen.length === 2);
  assert.deepEqual(seen, [false, true]);
});

test("observe with ids and groups delivers tip and group changes", async (t) => {
  const { daemon, client } = await setup();
  t.after(() => client.close());
  daemon.handlers["tips/observe"] = (params, conn) => {
    const r = daemon.builtin(conn, "tips/observe", params);
    return { ...r, groups: [{ group: "g", tipId: null }] };
  };
  const seen = [];
  client.observe({ groups: ["g"] }, (c) => seen.push(c.type === "group" ? [c.group, c.tipId, c.cause] : [c.id, c.shouldDisplay]));
  await until(() => seen.length === 1);
  const [[subscription]] = [...daemon.subs];
  const conn = [...daemon.connections][0];
  conn.deliver({ jsonrpc: "2.0", method: "groups/currentTipChanged", params: { subscription, seq: 1, group: "g", tipId: "a" } });
  conn.deliver({ jsonrpc: "2.0", method: "groups/currentTipChanged", params: { subscription, seq: 2, group: "g", tipId: "a" } });
  conn.deliver({ jsonrpc: "2.0", method: "groups/currentTipChanged", params: { subscription, seq: 3, group: "g", tipId: null } });
  await until(() => seen.length === 3);
  assert.deepEqual(seen, [["g", null, "initial"], ["g", "a", "notification"], ["g", null, "notification"]]);
});

test("onAction: array-shaped payloads, filtered by tipIds, listener errors are contained", async (t) => {
  const { daemon, client, logger } = await setup();
  t.after(() => client.close());
  const all = [];
  const filtered = [];
  client.onAction(() => {
    throw new Error("boom");
  });
  client.onAction((e) => all.push(e));
  client.onAction((e) => filtered.push(e), { tipIds: ["filter.tip"] });
  await until(() => daemon.subs.size === 3);
  const subscribeParams = daemon.methods("actions/subscribe").map((m) => m.params);
  assert.deepEqual(subscribeParams, [{}, {}, { tipIds: ["filter.tip"] }]);
  await client.performAction("filter.tip", "learn-more");
  await client.performAction("other.tip", "ok");
  await until(() => all.length === 2);
  assert.deepEqual(all[0], { tipId: "filter.tip", actions: [{ id: "learn-more", title: "Learn more", index: 0 }] });
  assert.deepEqual(filtered.map((e) => e.tipId), ["filter.tip"]);
  assert.ok(logger.errors.some((e) => e.includes("listener threw")));
});

test("onAnalyticsEvent: replays after the cursor asked for, never gives a cursor twice, resumes after the last one on reconnection", async (t) => {
  const { daemon, client, clock } = await setup();
  t.after(() => client.close());
  let head = 5;
  daemon.handlers["analytics/subscribe"] = (params, conn) => {
    const subscription = `analytics-${daemon.nextSub++}`;
    daemon.subs.set(subscription, { conn, kind: "analytics", seq: 0 });
    return { subscription, head, oldest: 1 };
  };
  daemon.handlers["analytics/unsubscribe"] = (params) => ({ removed: daemon.subs.delete(params.subscription) });
  const event = (cursor) => ({ cursor, type: "impression", tipId: "t", variant: null, at: 1767225600 + cursor, duration: 2 });
  const emit = (...cursors) => {
    for (const [subscription, sub] of daemon.subs) {
      if (sub.kind !== "analytics") continue;
      for (const cursor of cursors) sub.conn.deliver({ jsonrpc: "2.0", method: "analytics/event", params: { subscription, seq: ++sub.seq, ...event(cursor) } });
    }
  };
  const resumed = [];
  const live = [];
  const offResumed = client.onAnalyticsEvent((e) => resumed.push(e), { after: 2 });
  client.onAnalyticsEvent((e) => live.push(e.cursor));
  await until(() => daemon.subs.size === 2, { what: "two analytics subscriptions" });
  assert.deepEqual(daemon.methods("analytics/subscribe").map((m) => m.params), [{ after: 2 }, {}]);
  emit(3, 4, 3); // a replay, then a repeat
  await barrier(client);
  assert.deepEqual(resumed.map((e) => e.cursor), [3, 4], "each cursor once");
  assert.deepEqual(resumed[0], event(3), "the event without its subscription and seq");

  // The daemon goes away; meanwhile the history grows. Each subscriber resumes after the last cursor it was given
  // (the live one, which was given none, after the head when it subscribed).
  head = 9;
  daemon.crash();
  await until(() => client.state === "disconnected");
  clock.next();
  assert.equal(await client.ready(), true);
  await until(() => daemon.methods("analytics/subscribe").length === 4, { what: "resubscribed" });
  assert.deepEqual(daemon.methods("analytics/subscribe").slice(2).map((m) => m.params), [{ after: 4 }, { after: 5 }]);
  emit(6);
  await barrier(client);
  assert.deepEqual(resumed.map((e) => e.cursor), [3, 4, 6]);
  assert.deepEqual(live, [6]);

  offResumed();
  await until(() => daemon.methods("analytics/unsubscribe").length === 1, { what: "analytics/unsubscribe" });
  emit(7);
  await barrier(client);
  assert.deepEqual(resumed.map((e) => e.cursor), [3, 4, 6], "nothing after unsubscribing");
  assert.deepEqual(live, [6, 7]);
});

test("reconnection: backoff, registrations replayed, subscriptions re-established, listeners resynchronised", async (t) => {
  const { daemon, client, logger, clock } = await setup();
  t.after(() => client.close());
  const states = [];
  client.onConnectionChange((s) => states.push(s));
  const outages = () => states.filter((s) => s === "disconnected").length;
  await client.configure("immediate");
  await client.defineParameters([{ id: "isLoggedIn", default: false, transient: true }, { id: "plan", default: "free" }]);
  await client.setParameter("isLoggedIn", true);
  await client.setParameter("plan", "pro"); // persisted by the daemon: not replayed
  await client.register([{ id: "a", title: "A" }, { id: "b", title: "B" }, { id: "gone", title: "Gone" }]);
  await client.unregister(["gone"]);
  await client.registerGroup({ id: "g", priority: "firstAvailable", tips: ["a", "b"] });
  await client.configureEvent("search.opened", 100);
  const seenA = [];
  const seenB = [];
  const actions = [];
  client.observe("a", (c) => seenA.push([c.shouldDisplay, c.cause]));
  client.observe("b", (c) => seenB.push([c.shouldDisplay, c.cause]));
  client.onAction((e) => actions.push(e.tipId));
  await until(() => seenA.length === 1 && seenB.length === 1 && daemon.subs.size === 3);

  // The daemon restarts with a fresh in-memory state in which "a" is now displayable.
  daemon.down = true;
  daemon.crash();
  daemon.tips.clear();
  await until(() => outages() === 1, { what: "the drop noticed" });
  assert.equal(await client.donate("while-down"), undefined);
  for (let retry = 1; retry <= 2; retry++) {
    clock.next(); // a retry while the daemon is still down
    await until(() => outages() === 1 + retry, { what: `retry ${retry} to fail` });
  }
  daemon.down = false;
  daemon.handlers["tips/register"] = (params, conn) => {
    const r = daemon.builtin(conn, "tips/register", params);
    daemon.tips.get("a").shouldDisplay = true;
    delete daemon.handlers["tips/register"];
    return r;
  };
  clock.next(); // the next retry succeeds
  await until(() => client.state === "connected", { what: "reconnection" });
  await until(() => seenA.length === 2 && daemon.subs.size === 3, { what: "resync" });
  assert.deepEqual(seenA, [[false, "initial"], [true, "resync"]]);
  assert.deepEqual(seenB, [[false, "initial"]]); // unchanged: no call

  const second = daemon.log.slice(daemon.log.findLastIndex((m) => m.method === "initialize"));
  assert.deepEqual(second.slice(0, 10).map((m) => [m.method, m.params]), [
    ["initialize", second[0].params],
    ["tips/configure", { displayFrequency: "immediate" }],
    ["parameters/define", { parameters: [{ id: "isLoggedIn", default: false, transient: true }, { id: "plan", default: "free" }] }],
    ["parameters/set", { id: "isLoggedIn", value: true }],
    ["tips/register", { tips: [{ id: "a", title: "A" }, { id: "b", title: "B" }] }],
    ["groups/register", { id: "g", priority: "firstAvailable", tips: ["a", "b"] }],
    ["events/configure", { id: "search.opened", maxDonations: 100 }],
    ["tips/observe", { ids: ["a"] }],
    ["tips/observe", { ids: ["b"] }],
    ["actions/subscribe", {}],
  ]);
  daemon.setShouldDisplay("b", true);
  await client.performAction("a", "learn-more");
  await until(() => seenB.length === 2 && actions.length === 1);
  assert.deepEqual(seenB[1], [true, "notification"]);
  assert.equal(states[0], "disconnected");
  assert.equal(states[states.length - 1], "connected");
  // One warning for the outage, whatever the number of failed attempts and no-op calls.
  assert.equal(logger.warnings.filter((w) => /lost the connection|cannot reach|no-ops/.test(w)).length, 1, logger.warnings.join("\n"));
});

test("backoff grows by the factor and is capped; no attempt after close()", async () => {
  const daemon = new FakeDaemon();
  daemon.down = true;
  const clock = new ManualClock();
  const times = []; // the client's (manual) time at each connection attempt
  const factory = () => {
    times.push(clock.now());
    return daemon.factory();
  };
  const client = createClient({ transport: factory, logger: null, reconnect: { initialDelayMs: 20, factor: 2, maxDelayMs: 80, jitter: 0 }, timers: clock });
  const delays = [];
  for (let attempt = 1; attempt <= 7; attempt++) {
    await until(() => times.length === attempt && client.state === "disconnected", { what: `attempt ${attempt} to fail` });
    if (attempt < 7) delays.push(clock.next()); // the only timer pending: the retry
  }
  assert.deepEqual(delays, [20, 40, 80, 80, 80, 80]);
  assert.deepEqual(times.slice(1).map((t, i) => t - times[i]), [20, 40, 80, 80, 80, 80]);
  assert.deepEqual(clock.pending(), [80], "the next retry is scheduled");
  await client.close();
  assert.equal(client.state, "closed");
  assert.deepEqual(clock.pending(), [], "close() cancelled the retry");
  assert.equal(clock.advance(60 * 60 * 1000), 0, "nothing fires in the next hour");
  assert.equal(times.length, 7, "no attempts after close()");
});

test("maxAttempts stops retrying; reconnect: false never retries; reconnectNow skips the wait", async () => {
  const daemon = new FakeDaemon();
  daemon.down = true;
  let attempts = 0;
  const factory = () => {
    attempts++;
    return daemon.factory();
  };
  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = createClient({ transport: factory, logger, reconnect: { initialDelayMs: 1, maxAttempts: 3, jitter: 0 }, timers: clock });
  for (let attempt = 1; attempt <= 3; attempt++) {
    await until(() => attempts === attempt && client.state === "disconnected", { what: `attempt ${attempt} to fail` });
    if (attempt < 3) clock.next();
  }
  assert.ok(logger.warnings.some((w) => w.includes("giving up")));
  assert.deepEqual(clock.pending(), [], "no retry after maxAttempts");
  assert.equal(attempts, 3);
  daemon.down = false;
  assert.equal(await client.reconnectNow(), true);
  assert.equal(client.state, "connected");
  await client.close();

  let attempts2 = 0;
  const clock2 = new ManualClock();
  const none = createClient({ transport: () => (attempts2++, Promise.reject(new Error("nope"))), logger: null, reconnect: false, timers: clock2 });
  await until(() => none.state === "disconnected");
  assert.deepEqual(clock2.pending(), [], "no retry scheduled");
  assert.equal(attempts2, 1);
  await none.close();
});

test("close(): pending calls settle, no reconnection, close({shutdown}) sends shutdown then exit", async () => {
  const { daemon, client, clock } = await setup();
  daemon.handlers["events/donate"] = () => FakeDaemon.NO_REPLY;
  const pending = client.donate("x");
  await until(() => daemon.methods("events/donate").length === 1);
  await client.close({ shutdown: true });
  assert.equal(await pending, undefined);
  assert.equal(client.state, "closed");
  assert.deepEqual(daemon.log.slice(-2).map((m) => m.method), ["shutdown", "exit"]);
  const connects = daemon.connects;
  assert.deepEqual(clock.pending(), [], "no timer left: no retry, no request timeout");
  assert.equal(clock.advance(60 * 60 * 1000), 0);
  assert.equal(daemon.connects, connects);
  assert.equal(await client.donate("y"), undefined);
});

test("TipsClient requires a transport factory", () => {
  assert.throws(() => new TipsClient({}), TypeError);
});

test("a change whose outcome is unknown is sent again with the same idempotency key (issue #34)", async (t) => {
  const { daemon, client, clock } = await setup({ strict: true });
  t.after(() => client.close());
  const seen = [];
  daemon.handlers["events/donate"] = (params) => {
    seen.push(params.idempotencyKey);
    if (seen.length === 1) throw { code: -32016, message: "not acknowledged, retry", data: { retryAfter: 1 } };
    return { count: 1, lifetime: 1 };
  };
  const done = client.donate("e");
  await until(() => seen.length === 1, { what: "the first attempt" });
  await until(() => clock.pending().includes(1000), { what: "the retry's timer (retryAfter: 1 s)" });
  clock.advance(1000);
  assert.deepEqual(await done, { count: 1, lifetime: 1 });
  assert.equal(seen.length, 2);
  assert.equal(seen[0], seen[1], "the retry reuses the key");
  // A new change gets a new key; an error that is not about the outcome is not retried.
  daemon.handlers["events/donate"] = (params) => {
    seen.push(params.idempotencyKey);
    throw { code: -32602, message: "bad" };
  };
  await assert.rejects(client.donate("e"), (e) => e instanceof TipsdError && e.code === -32602);
  assert.equal(seen.length, 3);
  assert.notEqual(seen[2], seen[0]);
});

test("a change in flight when the connection drops is retried on the next connection with its key", async (t) => {
  const { daemon, client, clock } = await setup({ strict: true });
  t.after(() => client.close());
  const seen = [];
  daemon.handlers["tips/invalidate"] = (params, conn) => {
    seen.push(params.idempotencyKey);
    if (seen.length === 1) {
      conn.drop();
      return FakeDaemon.NO_REPLY;
    }
    return { id: "t", shouldDisplay: false, status: "invalidated" };
  };
  let settled = false;
  const pending = client.invalidate("t");
  pending.then(
    () => (settled = true),
    () => (settled = true),
  );
  // The reconnection's backoff and the retry's run on the manual clock.
  await until(
    () => {
      if (!settled && clock.pending().length > 0) clock.next();
      return settled;
    },
    { what: "the retried invalidation" },
  );
  const state = await pending;
  assert.equal(state.status, "invalidated");
  assert.equal(seen.length, 2);
  assert.equal(seen[0], seen[1]);
});
