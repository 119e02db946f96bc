"use strict";
// Issue #22: the client wraps every method of protocol/openrpc.json and states the protocol version it speaks in
// one place, the document's. Each method is called through its wrapper against the real daemon, and the wrapper
// must send that method (the traffic tap sees what goes out) and resolve to the daemon's result (the traffic check
// of clients/run-tests-typescript.sh validates those results against the document's schemas).
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { connectUnix, PROTOCOL_VERSION, fileTrafficTap } = require("../dist/node");
const { daemonTest, startDaemon, FILTER_TIP } = require("../test-support/tipsd");
const { until } = require("../test-support/timing");

const OPENRPC = process.env.TIPSD_OPENRPC || path.resolve(__dirname, "../../../protocol/openrpc.json");
const document = JSON.parse(fs.readFileSync(OPENRPC, "utf8"));

test("PROTOCOL_VERSION, the one place the client states its protocol version, is the document's", () => {
  assert.equal(PROTOCOL_VERSION, document.info.version);
  const sources = path.resolve(__dirname, "../src");
  for (const file of fs.readdirSync(sources)) {
    const text = fs.readFileSync(path.join(sources, file), "utf8");
    const stated = text.match(/(?:protocol|version)[ ,]+v?\d+\.\d+\b/gi) || [];
    assert.deepEqual(stated, [], `${file} states a protocol version besides PROTOCOL_VERSION`);
  }
});

const TEMPLATE = { id: "trail.new.{trailId}", title: "{trailName} is now available" };
const VARIANTS = { control: { title: "You can narrow this down" }, friendly: { title: "Find what you want faster" } };

/** Awaits a hosted-only call on a daemon that is not hosted: it must be refused with -32014; returns the error. */
async function hostedOnly(promise) {
  try {
    await promise;
  } catch (error) {
    assert.equal(error.code, -32014, `${error.message}`);
    return error;
  }
  assert.fail("a hosted-only method succeeded on a daemon that is not hosted");
}

/**
 * One call per method of the document, through the client's public API. `c` is the client, `s` what earlier
 * calls left for later ones. Unsubscribing is done by the functions `observe`, `onAction` and `onAnalyticsEvent`
 * return; `initialize` by connecting; the client-to-server notifications by `exit()` and `notify()`.
 */
const WRAPPERS = {
  initialize: async (c) => c.initializeResult, // sent by connectUnix before anything else
  initialized: async (c) => c.notify("initialized", undefined),
  "$/cancelRequest": async (c) => c.notify("$/cancelRequest", { id: 1 }),
  "rpc.discover": (c) => c.discover(),
  "catalog/reload": (c) => c.reloadCatalog(),
  "tips/configure": (c) => c.configure("immediate"),
  "tips/register": (c) => c.register([{ ...FILTER_TIP, variants: VARIANTS }]),
  "tips/instantiate": (c) => c.instantiate(TEMPLATE.id, { trailId: "north", trailName: "North Ridge" }),
  "tips/unregister": (c) => c.unregister(["trail.new.north"]),
  "groups/register": (c) => c.registerGroup({ id: "search", priority: "ordered", tips: ["filter.tip"] }),
  "groups/unregister": (c) => c.unregisterGroup("search"),
  "parameters/define": (c) => c.defineParameters([{ id: "isLoggedIn", default: false }]),
  "parameters/set": (c) => c.setParameter("isLoggedIn", true),
  "events/donate": (c) => c.donate("search.opened"),
  "events/configure": (c) => c.configureEvent("search.opened", 100),
  "tips/invalidate": (c) => c.invalidate("filter.tip"),
  "tips/resetEligibility": (c) => c.resetEligibility("filter.tip"),
  "tips/displayed": (c) => c.displayed("filter.tip", 2),
  "tips/status": (c) => c.status(),
  "tips/explain": (c) => c.explain("filter.tip"),
  "tips/observe": async (c, s) => {
    const changes = [];
    s.unobserve = c.observe("filter.tip", (change) => changes.push(change));
    await until(() => changes.length === 1, { what: "the observe result" });
    return changes[0];
  },
  "tips/unobserve": async (c, s) => s.unobserve(),
  "actions/subscribe": async (c, s) => {
    const actions = [];
    s.offAction = c.onAction((event) => actions.push(event));
    await c.performAction("filter.tip", "learn-more", { invalidate: false });
    await until(() => actions.length === 1, { what: "the action" });
    return actions[0];
  },
  "tips/performAction": (c) => c.performAction("filter.tip", "learn-more", { invalidate: false }),
  "actions/unsubscribe": async (c, s) => s.offAction(),
  "tips/setVariant": (c) => c.setVariant("filter.tip", "friendly"),
  "sync/status": (c) => c.syncStatus(),
  "sync/push": (c) => hostedOnly(c.syncPush("device:coverage", [])),
  "sync/pull": (c) => hostedOnly(c.syncPull({ device: "device:coverage", after: 0 })),
  // Hosted mode's methods: a daemon serving one user's state answers them with -32014 (forbidden).
  "auth/refresh": (c) => hostedOnly(c.authRefresh("token")),
  "accounts/list": (c) => hostedOnly(c.accountsList({ limit: 10 })),
  "accounts/export": (c) => hostedOnly(c.accountsExport("alice")),
  "accounts/import": (c) => hostedOnly(
    c.accountsImport("bob", { account: "alice", exportedAt: 0, state: { version: 1, cursor: 0 }, history: [] })),
  "accounts/delete": (c) => hostedOnly(c.accountsDelete("alice")),
  "catalogs/publish": (c) => hostedOnly(c.catalogsPublish("default", { tips: [] }, { note: "coverage" })),
  "catalogs/diff": (c) => hostedOnly(c.catalogsDiff("default", 1, 2)),
  "catalogs/rollback": (c) => hostedOnly(c.catalogsRollback("default", 1)),
  "catalogs/schedule": (c) => hostedOnly(c.catalogsSchedule("default", 1, 2_000_000_000)),
  "catalogs/history": (c) => hostedOnly(c.catalogsHistory("default")),
  "audit/list": (c) => hostedOnly(c.auditList({ limit: 10 })),
  "webhooks/create": (c) =>
    hostedOnly(c.webhooksCreate({ app: "default", url: "https://hooks.invalid/tipsd", events: ["catalog.published"] })),
  "webhooks/list": (c) => hostedOnly(c.webhooksList()),
  "webhooks/delete": (c) => hostedOnly(c.webhooksDelete("default", 1)),
  "webhooks/test": (c) => hostedOnly(c.webhooksTest("default", 1)),
  "webhooks/replay": (c) => hostedOnly(c.webhooksReplay("default", 0)),
  "analytics/subscribe": async (c, s) => {
    const events = [];
    s.offAnalytics = c.onAnalyticsEvent((event) => events.push(event), { after: 0 });
    await until(() => events.length > 0, { what: "the replayed history" });
    assert.ok(events.every((e, i) => i === 0 || e.cursor > events[i - 1].cursor), "in cursor order");
    return events[0];
  },
  "analytics/unsubscribe": async (c, s) => s.offAnalytics(),
  "analytics/read": (c) => c.analyticsRead({ after: 0, limit: 10 }),
  "tips/suppress": (c) => c.suppress({ seconds: 60, reason: "checkout" }),
  "tips/resume": (c) => c.resume(),
  "metrics/get": (c) => c.metrics({ tips: ["filter.tip"] }),
  "inspect/state": (c) => c.inspectState(),
  "testing/showAllTips": (c) => c.showAllTipsForTesting(),
  "testing/hideAllTips": (c) => c.hideAllTipsForTesting(),
  "testing/clear": (c) => c.clearTestingOverrides(),
  "testing/showTips": (c) => c.showTipsForTesting(["filter.tip"]),
  "testing/hideTips": (c) => c.hideTipsForTesting(["filter.tip"]),
  "datastore/reset": (c) => c.datastoreReset(),
  "clock/now": (c) => c.clockNow(),
  "clock/advance": (c) => c.clockAdvance(60),
  "clock/set": (c) => c.clockSet(2_000_000_000),
  shutdown: (c) => c.shutdown(),
  exit: async (c) => c.exit(),
};

test("the wrappers cover exactly the document's methods", () => {
  const documented = document.methods.map((m) => m.name).sort();
  assert.deepEqual(Object.keys(WRAPPERS).sort(), documented);
});

test("every wrapper sends its method and resolves to the daemon's result", daemonTest(), async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-ts-"));
  const catalog = path.join(dir, "tips.json");
  fs.writeFileSync(catalog, JSON.stringify({ tips: [{ ...FILTER_TIP, variants: VARIANTS }], templates: [TEMPLATE] }));
  const daemon = await startDaemon({ dir, args: ["--catalog", catalog] });
  t.after(async () => {
    await daemon.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const sent = [];
  const logToFile = fileTrafficTap().open({ kind: "socket", path: daemon.socketPath });
  const trafficTap = {
    open: () => (dir, message) => {
      if (logToFile) logToFile(dir, message); // still checked against the document by the runner
      if (dir === "out") sent.push(JSON.parse(message).method);
    },
  };
  const client = await connectUnix(daemon.socketPath, { strict: true, logger: null, trafficTap, restoreRegistrations: false });
  t.after(() => client.close());
  const state = {};
  for (const [method, call] of Object.entries(WRAPPERS)) {
    const before = sent.length;
    const result = await call(client, state);
    const isNotification = document.methods.find((m) => m.name === method).result.name === "noReply";
    const byUnsubscribe = ["tips/unobserve", "actions/unsubscribe", "analytics/unsubscribe"].includes(method);
    if (!isNotification && !byUnsubscribe) assert.notEqual(result, undefined, `${method}: no result`);
    if (method === "initialize") assert.equal(sent[0], "initialize");
    else await until(() => sent.slice(before).includes(method), { what: `${method} to be sent` });
  }
});
