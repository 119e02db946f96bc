"use strict";
// Every protocol method through the typed client, against the real daemon on a temporary Unix socket.
const test = require("node:test");
const assert = require("node:assert/strict");
const { connectUnix, TipsdError, ErrorCode } = require("../dist/node");
const { daemonTest, startDaemon, FILTER_TIP } = require("../test-support/tipsd");

const LOGIN_TIP = { id: "login.tip", title: "Sign in to sync", rules: [{ parameter: "isLoggedIn", eq: true }] };
const NEVER_TIP = { id: "never.tip", title: "Never", rules: [{ event: "never.happens", count: { gte: 1 } }] };

const rpcError = (code) => (e) => {
  assert.ok(e instanceof TipsdError, `expected a TipsdError, got ${e}`);
  assert.equal(e.code, code, e.message);
  return true;
};

test("every method, over the socket", daemonTest(), async (t) => {
  const daemon = await startDaemon();
  t.after(() => daemon.cleanup());
  const client = await connectUnix(daemon.socketPath, { strict: true, logger: null });
  t.after(() => client.close());

  // initialize (done by connect): the daemon answers every method this client knows.
  const init = client.initializeResult;
  assert.match(init.protocolVersion, /^1\./);
  assert.equal(init.serverInfo.name, "tipsd");
  assert.equal(init.capabilities.virtualClock, true);
  const clientMethods = [
    "shutdown", "rpc.discover", "tips/configure", "tips/register", "tips/unregister", "groups/register", "groups/unregister",
    "parameters/define", "parameters/set", "events/donate", "events/configure", "tips/invalidate", "tips/resetEligibility",
    "tips/displayed", "tips/status", "tips/explain", "tips/observe", "tips/unobserve", "tips/performAction",
    "actions/subscribe", "actions/unsubscribe", "testing/showAllTips", "testing/hideAllTips", "testing/clear",
    "testing/showTips", "testing/hideTips", "datastore/reset", "clock/now", "clock/advance", "clock/set",
  ];
  for (const m of clientMethods) assert.ok(init.capabilities.methods.includes(m), `capabilities.methods lacks ${m}`);
  for (const n of ["tips/shouldDisplayChanged", "groups/currentTipChanged", "tips/actionPerformed"]) {
    assert.ok(init.capabilities.notifications.includes(n), `capabilities.notifications lacks ${n}`);
  }

  const doc = await client.discover();
  assert.equal(typeof doc, "object");
  assert.ok(Array.isArray(doc.methods), "rpc.discover returns an OpenRPC document");

  assert.deepEqual(await client.configure("daily"), { displayFrequency: "daily" });
  assert.deepEqual(await client.configure({ displayFrequency: "immediate" }), { displayFrequency: "immediate" });

  assert.deepEqual(await client.defineParameters([{ id: "isLoggedIn", default: false, transient: true }]), { ids: ["isLoggedIn"] });

  const registered = await client.register([FILTER_TIP, LOGIN_TIP, NEVER_TIP]);
  assert.deepEqual(registered.tips.map((s) => s.id), ["filter.tip", "login.tip", "never.tip"]);
  const filter = registered.tips[0];
  assert.equal(filter.shouldDisplay, false);
  assert.equal(filter.status, "pending");
  assert.equal(filter.displayCount, 0);
  assert.deepEqual(filter.tip, {
    id: "filter.tip",
    title: FILTER_TIP.title,
    message: FILTER_TIP.message,
    image: FILTER_TIP.image,
    actions: [{ id: "learn-more", title: "Learn more", index: 0 }],
    locale: null,
  });
  assert.equal(registered.tips[1].tip.message, null);
  assert.equal(registered.tips[1].tip.image, null);

  assert.deepEqual(await client.setParameter("isLoggedIn", true), { id: "isLoggedIn", value: true });
  assert.equal((await client.status(["login.tip"])).tips[0].shouldDisplay, true);
  const all = await client.status();
  assert.deepEqual(all.tips.map((s) => s.id).sort(), ["filter.tip", "login.tip", "never.tip"]);

  const why = await client.explain("filter.tip");
  assert.equal(why.id, "filter.tip");
  assert.equal(why.shouldDisplay, false);
  assert.equal(why.rules.length, 3);
  assert.equal(why.rules[0].holds, false);
  assert.equal(typeof why.rules[0].detail, "string");
  assert.ok(Array.isArray(why.heldBy));
  assert.ok(Array.isArray(why.lines));

  for (const n of [1, 2, 3]) assert.deepEqual(await client.donate("search.opened"), { count: n, lifetime: n });
  assert.deepEqual(await client.donate("trail.visited", { region: "north" }), { count: 1, lifetime: 1 });
  assert.equal((await client.status(["filter.tip"])).tips[0].shouldDisplay, true);
  assert.deepEqual(await client.configureEvent("search.opened", 10), { id: "search.opened", maxDonations: 10, maxAge: null });

  const shown = await client.displayed("filter.tip", 2);
  assert.equal(shown.id, "filter.tip");
  assert.equal(shown.displayCount, 1);
  assert.equal(shown.displayedDuration, 2);
  assert.equal((await client.displayed("filter.tip")).displayCount, 2);

  const closed = await client.invalidate("login.tip");
  assert.equal(closed.status, "invalidated");
  assert.equal(closed.reason, "tipClosed");
  assert.equal(closed.shouldDisplay, false);
  const reset = await client.resetEligibility("login.tip");
  assert.notEqual(reset.status, "invalidated");
  assert.equal(reset.shouldDisplay, true);
  assert.equal((await client.invalidate("login.tip", "displayCountExceeded")).reason, "displayCountExceeded");
  await client.resetEligibility("login.tip");

  const kept = await client.performAction("filter.tip", "learn-more", { invalidate: false });
  assert.notEqual(kept.status, "invalidated");
  const acted = await client.performAction("filter.tip", "learn-more");
  assert.equal(acted.status, "invalidated");
  assert.equal(acted.reason, "actionPerformed");
  await assert.rejects(client.performAction("login.tip", "no-such-action"), rpcError(ErrorCode.UnknownAction));

  const group = await client.registerGroup({ id: "onboarding", priority: "firstAvailable", tips: ["never.tip", "login.tip"] });
  assert.equal(group.id, "onboarding");
  assert.equal(group.currentTip, "login.tip");
  assert.equal(await client.unregisterGroup("onboarding"), null);

  // Testing overrides.
  assert.equal(await client.showAllTipsForTesting(), null);
  assert.equal((await client.status(["never.tip"])).tips[0].shouldDisplay, true);
  assert.equal(await client.clearTestingOverrides(), null);
  assert.equal(await client.hideAllTipsForTesting(), null);
  assert.equal((await client.status(["login.tip"])).tips[0].shouldDisplay, false);
  assert.equal(await client.showTipsForTesting(["login.tip"]), null);
  assert.equal((await client.status(["login.tip"])).tips[0].shouldDisplay, true);
  assert.equal(await client.hideTipsForTesting(["login.tip"]), null);
  assert.equal(await client.clearTestingOverrides(), null);
  assert.equal((await client.status(["login.tip"])).tips[0].shouldDisplay, true);
  assert.equal((await client.status(["never.tip"])).tips[0].shouldDisplay, false);

  // Virtual clock.
  const now = await client.clockNow();
  assert.equal(now.virtual, true);
  assert.equal(typeof now.now, "number");
  assert.equal((await client.clockAdvance(60)).now, now.now + 60);
  assert.deepEqual(await client.clockSet(1767225600), { now: 1767225600 });
  assert.equal((await client.clockNow()).now, 1767225600);

  assert.deepEqual(await client.unregister(["never.tip", "no.such.tip"]), { ids: ["never.tip"] });
  assert.equal(await client.datastoreReset(), null);
  assert.deepEqual(await client.donate("search.opened"), { count: 1, lifetime: 1 }, "the reset cleared donations");

  // Errors.
  await assert.rejects(client.explain("no.such.tip"), rpcError(ErrorCode.UnknownTip));
  await assert.rejects(client.register([{ id: "bad", title: "Bad", rules: [{ event: "e", count: { "gte ": 3 } }] }]), (e) => {
    assert.ok(e instanceof TipsdError);
    assert.ok([ErrorCode.InvalidParams, ErrorCode.InvalidRule].includes(e.code), e.message);
    return true;
  });
  await assert.rejects(client.request("no/such/method", {}), rpcError(ErrorCode.MethodNotFound));
  // Idempotent per the protocol: an unknown subscription is either "not removed" or -32003.
  const unknownSub = await client.request("tips/unobserve", { subscription: "no-such-subscription" }).catch((e) => e);
  if (unknownSub instanceof TipsdError) assert.equal(unknownSub.code, ErrorCode.UnknownSubscription);
  else assert.deepEqual(unknownSub, { removed: false });

  // shutdown: afterwards every request except exit gets -32006.
  assert.equal(await client.shutdown(), null);
  await assert.rejects(client.status(), rpcError(ErrorCode.ShuttingDown));
  client.exit();
});

test("raw observe/unobserve and actions subscribe/unsubscribe through request()", daemonTest(), async (t) => {
  const daemon = await startDaemon();
  t.after(() => daemon.cleanup());
  const client = await connectUnix(daemon.socketPath, { strict: true, logger: null });
  t.after(() => client.close());
  await client.register([FILTER_TIP]);
  const observed = await client.request("tips/observe", { ids: ["filter.tip"] });
  assert.ok(["string", "number"].includes(typeof observed.subscription));
  assert.deepEqual(observed.tips.map((s) => [s.id, s.shouldDisplay]), [["filter.tip", false]]);
  assert.deepEqual(observed.groups, []);
  assert.deepEqual(await client.request("tips/unobserve", { subscription: observed.subscription }), { removed: true });
  assert.deepEqual(await client.request("tips/unobserve", { subscription: observed.subscription }), { removed: false });
  const actions = await client.request("actions/subscribe", { tipIds: ["filter.tip"] });
  assert.deepEqual(await client.request("actions/unsubscribe", { subscription: actions.subscription }), { removed: true });
  assert.deepEqual(await client.request("actions/unsubscribe", { subscription: actions.subscription }), { removed: false });
});

test("system clock: clock/now says so and clock/advance, clock/set get -32004", daemonTest(), async (t) => {
  const daemon = await startDaemon({ clock: null });
  t.after(() => daemon.cleanup());
  const client = await connectUnix(daemon.socketPath, { strict: true, logger: null });
  t.after(() => client.close());
  const before = Date.now() / 1000;
  const now = await client.clockNow();
  const after = Date.now() / 1000;
  assert.equal(now.virtual, false);
  // The daemon read the system clock during the call (1 s of slack for the resolution of either clock).
  assert.ok(now.now >= before - 1 && now.now <= after + 1, `${now.now} not within [${before}, ${after}]`);
  await assert.rejects(client.clockAdvance(1), rpcError(ErrorCode.VirtualClockDisabled));
  await assert.rejects(client.clockSet(0), rpcError(ErrorCode.VirtualClockDisabled));
});

test("lenient client against the real daemon: errors resolve undefined with a warning", daemonTest(), async (t) => {
  const daemon = await startDaemon();
  t.after(() => daemon.cleanup());
  const warnings = [];
  const client = await connectUnix(daemon.socketPath, { logger: { warn: (m) => warnings.push(m) } });
  t.after(() => client.close());
  assert.equal(await client.invalidate("no.such.tip"), undefined);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /tips\/invalidate/);
  assert.deepEqual(await client.donate("search.opened"), { count: 1, lifetime: 1 });
});
