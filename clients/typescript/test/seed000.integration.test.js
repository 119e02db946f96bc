"use strict";
// Issue #29: seed 000's bridge, unchanged, on Android and the web. The seed's wrapper (`tipKit.donate`,
// `tipKit.invalidate`, `tipKit.onAction` over `requireOptionalNativeModule("RorkTipKit")`), its caller (the search
// screen's effect) and its visibility hook (plus the useSyncExternalStore version) live in test-support/seed000,
// compiled with tsc --strict by clients/run-tests-typescript.sh into dist-seed000/. They run twice, unchanged:
// with no native module (every call a no-op, nothing thrown) and with `tipsdNativeModule` registered as the native
// module, against a real daemon.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");
const { spawnSync } = require("node:child_process");
const { connectUnix, fileStorage, tipsdNativeModule, tipsdClientOf } = require("../dist/node");
const { network } = require("../test-support/network");
const { daemonTest, startDaemon, FILTER_TIP } = require("../test-support/tipsd");
const { barrier, until } = require("../test-support/timing");

const SEED = path.resolve(__dirname, "../dist-seed000");
const BUILT = fs.existsSync(path.join(SEED, "modules/rork-tipkit/index.js"));
const needsBuild = BUILT ? {} : { skip: "dist-seed000 is not built (clients/run-tests-typescript.sh builds it)" };
const LEARN_MORE = [{ id: "learn-more", title: "Learn more", index: 0 }];

/** The seed's app, loaded afresh: its modules read `requireOptionalNativeModule("RorkTipKit")` when first imported. */
function loadApp() {
  for (const file of Object.keys(require.cache)) {
    if (file.startsWith(SEED + path.sep) && !file.includes(`${path.sep}node_modules${path.sep}`)) delete require.cache[file];
  }
  const react = require(path.join(SEED, "node_modules/react"));
  const router = require(path.join(SEED, "node_modules/expo-router"));
  router.pushed.length = 0;
  return {
    tipKit: require(path.join(SEED, "modules/rork-tipkit")).tipKit,
    SearchScreen: require(path.join(SEED, "app/search")).default,
    FilterButton: require(path.join(SEED, "app/filter-button")).default,
    render: react.render,
    pushed: router.pushed,
  };
}

/** Registers (or, with undefined, leaves out) the native module, as the app's platform would. */
function platform(t, RorkTipKit) {
  const saved = globalThis.expo;
  globalThis.expo = { modules: RorkTipKit === undefined ? {} : { RorkTipKit } };
  t.after(() => {
    globalThis.expo = saved;
  });
}

/** console.warn calls during the test (the seed's wrapper warns when a call fails). */
function recordWarnings(t) {
  const warnings = [];
  const original = console.warn;
  console.warn = (...args) => warnings.push(args.map(String).join(" "));
  t.after(() => {
    console.warn = original;
  });
  return warnings;
}

/** Opens the search screen `times` times (mount, then unmount): each visit donates `search.opened`. */
function visitSearch(app, times) {
  for (let i = 0; i < times; i++) app.render(app.SearchScreen).unmount();
}

test("seed 000's wrapper and caller without the native module: every call is a no-op and nothing is thrown", needsBuild, async (t) => {
  platform(t, undefined);
  const warnings = recordWarnings(t);
  const app = loadApp();
  const button = app.render(app.FilterButton);
  visitSearch(app, 3);
  const search = app.render(app.SearchScreen);
  const payloads = [];
  const off = app.tipKit.onAction((payload) => payloads.push(payload));
  assert.equal(typeof off, "function");
  assert.equal(await app.tipKit.donate("search.opened"), undefined);
  assert.equal(await button.output.close(), undefined, "invalidate");
  off();
  off();
  search.unmount();
  await Promise.resolve();
  assert.deepEqual([button.output.popover, button.output.popoverFromStore], [null, null]);
  assert.equal(button.renders, 1, "nothing ever changes");
  assert.deepEqual(payloads, []);
  assert.deepEqual(app.pushed, []);
  assert.deepEqual(warnings, []);
  button.unmount();
});

/** A daemon serving seed 000's FilterTip from its catalog, on a Unix socket and a WebSocket listener. */
async function startFilterTipDaemon(t, options = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-ts-"));
  const catalog = path.join(dir, "tips.json");
  fs.writeFileSync(catalog, JSON.stringify({ displayFrequency: "immediate", tips: [FILTER_TIP] }));
  const daemon = await startDaemon({ dir, ...options, args: ["--catalog", catalog, "--listen", "127.0.0.1:0"] });
  t.after(async () => {
    await daemon.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await until(() => /listen=ws:\/\/127\.0\.0\.1:\d+\//.test(daemon.stderr), { what: "the listen line" });
  const port = Number(/listen=ws:\/\/127\.0\.0\.1:(\d+)\//.exec(daemon.stderr)[1]);
  return { daemon, url: `ws://127.0.0.1:${port}/`, tokenFile: path.join(dir, "token") };
}

test("seed 000's wrapper and caller with tipsdNativeModule against a real daemon: donations, actions as an array, remove(), invalidation", daemonTest(needsBuild), async (t) => {
  const { daemon, url, tokenFile } = await startFilterTipDaemon(t);
  const ops = await connectUnix(daemon.socketPath, { strict: true, logger: null, clientInfo: { name: "ops" } });
  t.after(() => ops.close());
  const tokenRequests = [];
  const RorkTipKit = tipsdNativeModule({
    url,
    token: async (request) => {
      tokenRequests.push(request.reason);
      return fs.promises.readFile(tokenFile, "utf8"); // as `tipsd token` prints it, newline included
    },
    logger: null,
  });
  const client = tipsdClientOf(RorkTipKit);
  t.after(() => client.close());
  platform(t, RorkTipKit);
  const warnings = recordWarnings(t);
  const app = loadApp();

  // The filter button is on screen from the start; the search screen is opened twice, then a third time.
  const button = app.render(app.FilterButton);
  t.after(() => button.unmount());
  const view = () => [button.output.popover, button.output.popoverFromStore];
  visitSearch(app, 2);
  assert.equal(await client.waitUntilConnected(), true, "connected over the WebSocket with the provider's token");
  const searchOpened = async () => (await ops.inspectState()).events.find((e) => e.id === "search.opened")?.lifetime ?? 0;
  await until(async () => (await searchOpened()) === 2, { what: "two search.opened donations" });
  await barrier(client); // every shouldDisplay change so far has reached the hooks' listeners
  await Promise.resolve();
  assert.deepEqual(view(), [null, null], "two visits: not yet");
  assert.equal((await ops.status(["filter.tip"])).tips[0].shouldDisplay, false);

  const search = app.render(app.SearchScreen); // the third visit; it stays open
  await until(() => view()[0] !== null && view()[1] !== null, { what: "the popover after the third search.opened" });
  assert.deepEqual(view(), ["You can narrow this down", "You can narrow this down"]);
  assert.equal(await searchOpened(), 3);

  // An action tapped elsewhere (another client of the daemon) reaches the seed's onAction listeners.
  const first = [];
  const second = [];
  const offFirst = app.tipKit.onAction((payload) => first.push(payload));
  app.tipKit.onAction((payload) => second.push(payload));
  await barrier(client); // the adapter's actions/subscribe has been answered
  await ops.performAction("filter.tip", "learn-more", { invalidate: false });
  await until(() => app.pushed.length === 1 && first.length === 1 && second.length === 1, { what: "the action" });
  assert.deepEqual(app.pushed, ["/help/filter"], "the seed's caller navigated");
  assert.deepEqual(first[0], { tipId: "filter.tip", actionId: "learn-more", actions: LEARN_MORE });
  assert.ok(Array.isArray(first[0].actions), "actions is an array");

  // remove() stops delivery: the next action reaches the listener still subscribed, not the removed one. Both
  // are fed by the same notification, so once `second` has it, `first` would have too.
  offFirst();
  await ops.performAction("filter.tip", "learn-more", { invalidate: false });
  await until(() => second.length === 2, { what: "the second action" });
  assert.equal(first.length, 1, "no delivery after remove()");
  assert.deepEqual(app.pushed, ["/help/filter", "/help/filter"]);

  // The close button invalidates (tipClosed): the popover goes away.
  await button.output.close();
  await until(() => view()[0] === null && view()[1] === null, { what: "the popover to hide" });
  const state = (await ops.status(["filter.tip"])).tips[0];
  assert.deepEqual([state.status, state.reason, state.shouldDisplay], ["invalidated", "tipClosed", false]);

  search.unmount();
  assert.deepEqual(warnings, [], "the seed's wrapper never saw a failure");
  assert.deepEqual(tokenRequests, ["connect"]);
});

test("tipsdNativeModule: calls made before the daemon answers wait for the first connection; onTipDisplayChange catches up late listeners", daemonTest(needsBuild), async (t) => {
  const { daemon } = await startFilterTipDaemon(t);
  const RorkTipKit = tipsdNativeModule({ socketPath: daemon.socketPath, logger: null });
  t.after(() => tipsdClientOf(RorkTipKit).close());
  assert.equal(tipsdClientOf(RorkTipKit).state, "connecting");
  // Three donations before the connection is up: they are sent once it is.
  const early = [RorkTipKit.donateEvent("search.opened"), RorkTipKit.donateEvent("search.opened"), RorkTipKit.donateEvent("search.opened")];
  assert.deepEqual(await Promise.all(early), [undefined, undefined, undefined]);
  const seen = [];
  const first = RorkTipKit.addListener("onTipDisplayChange", (e) => seen.push(["first", e.tipId, e.shouldDisplay]));
  await until(() => seen.length === 1, { what: "the first listener's initial value" });
  assert.deepEqual(seen, [["first", "filter.tip", true]]);
  // A listener added later is told the current values too (as the first one was), then the changes.
  const late = RorkTipKit.addListener("onTipDisplayChange", (e) => seen.push(["late", e.tipId, e.shouldDisplay]));
  await until(() => seen.length === 2, { what: "the late listener's catch-up" });
  assert.deepEqual(seen[1], ["late", "filter.tip", true]);
  assert.equal(RorkTipKit.listenerCount("onTipDisplayChange"), 2);
  await RorkTipKit.invalidateTip("filter.tip");
  await until(() => seen.length === 4, { what: "both listeners told of the invalidation" });
  assert.deepEqual(seen.slice(2).sort(), [["first", "filter.tip", false], ["late", "filter.tip", false]]);
  first.remove();
  late.remove();
  assert.equal(RorkTipKit.listenerCount("onTipDisplayChange"), 0);
  const status = await tipsdClientOf(RorkTipKit).status(["filter.tip"]);
  assert.equal(status.tips[0].reason, "tipClosed", "invalidateTip's default reason");
});

test("issue #37: seed 000's app on Android keeps its donations through airplane mode and a restart (tipsdNativeModule with storage)", daemonTest(needsBuild), async (t) => {
  const { daemon, url, tokenFile } = await startFilterTipDaemon(t);
  const ops = await connectUnix(daemon.socketPath, { strict: true, logger: null, clientInfo: { name: "ops" } });
  t.after(() => ops.close());
  const storageDir = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-seed000-storage-"));
  t.after(() => fs.rmSync(storageDir, { recursive: true, force: true }));
  const device = network(); // airplane mode from the start
  /** The app's module, as its entry file would make it (AsyncStorage on a phone; files here). */
  const start = () => {
    const RorkTipKit = tipsdNativeModule({
      url,
      token: () => fs.promises.readFile(tokenFile, "utf8"),
      storage: fileStorage(storageDir),
      WebSocket: device.WebSocket,
      reconnect: { initialDelayMs: 20, maxDelayMs: 200, jitter: 0 },
      logger: null,
    });
    platform(t, RorkTipKit);
    return { RorkTipKit, client: tipsdClientOf(RorkTipKit), app: loadApp() };
  };
  const searchOpened = async () => (await ops.inspectState()).events.find((e) => e.id === "search.opened")?.lifetime ?? 0;
  const warnings = recordWarnings(t);

  // Two searches in airplane mode; the app is then killed.
  const first = start();
  visitSearch(first.app, 2);
  await until(() => first.client.queuedChanges === 2, { what: "two donations stored" });
  assert.notEqual(first.client.state, "connected");
  await first.client.close();

  // Started again, still offline: one more search.
  const second = start();
  t.after(() => second.client.close());
  assert.equal(second.client.queuedChanges, 2, "the first run's donations were kept");
  const button = second.app.render(second.app.FilterButton);
  t.after(() => button.unmount());
  visitSearch(second.app, 1);
  await until(() => second.client.queuedChanges === 3, { what: "the third donation stored" });
  assert.equal(await searchOpened(), 0, "nothing reached the daemon while offline");
  assert.deepEqual([button.output.popover, button.output.popoverFromStore], [null, null]);

  // The network comes back: the three donations reach the daemon, once each, and the popover shows.
  device.offline = false;
  second.client.reconnectNow();
  assert.equal(await second.client.flush(), true);
  assert.equal(await searchOpened(), 3);
  await until(() => button.output.popover !== null && button.output.popoverFromStore !== null, { what: "the popover" });
  assert.equal(button.output.popover, "You can narrow this down");
  assert.deepEqual(warnings, [], "the seed's wrapper never saw a failure");

  // The stored state shows at once on the next start, before any connection (airplane mode again).
  device.offline = true;
  await second.client.close();
  const third = start();
  t.after(() => third.client.close());
  const again = third.app.render(third.app.FilterButton);
  t.after(() => again.unmount());
  await until(() => again.output.popover !== null && again.output.popoverFromStore !== null, { what: "the stored popover" });
  assert.equal(third.client.connected, false);
  assert.equal(third.client.stale, true);
});

test("tipsdNativeModule without a daemon: calls resolve, listeners attach, one warning; the token provider is asked on each attempt", needsBuild, async (t) => {
  // A port nothing listens on.
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = server.address().port;
  await new Promise((resolve) => server.close(resolve));
  const warnings = [];
  const reasons = [];
  const RorkTipKit = tipsdNativeModule({
    url: `ws://127.0.0.1:${port}/`,
    token: (request) => {
      reasons.push(request.reason);
      return "0123456789abcdef".repeat(4);
    },
    logger: { warn: (message) => warnings.push(message) },
    reconnect: { initialDelayMs: 1, maxAttempts: 3, jitter: 0 },
  });
  t.after(() => tipsdClientOf(RorkTipKit).close());
  assert.equal(await RorkTipKit.donateEvent("search.opened"), undefined);
  assert.equal(await RorkTipKit.invalidateTip("filter.tip"), undefined);
  const subscription = RorkTipKit.addListener("onTipAction", () => assert.fail("no action without a daemon"));
  assert.equal(RorkTipKit.listenerCount("onTipAction"), 1);
  subscription.remove();
  assert.equal(RorkTipKit.listenerCount("onTipAction"), 0);
  await until(() => reasons.length === 3 && warnings.some((w) => /giving up/.test(w)), { what: "three attempts" });
  assert.deepEqual(reasons, ["connect", "reconnect", "reconnect"]);
  assert.equal(warnings.filter((w) => /cannot reach tipsd/.test(w)).length, 1, "one warning for the outage");
});

test("the seed-000 type check fails when the adapter drifts from the native module's surface", { ...needsBuild, skip: needsBuild.skip || (!process.env.TSC && "TSC is not set (clients/run-tests-typescript.sh sets it)") }, (t) => {
  // drift.ts against a copy of the seed's module declaration with one member renamed: tsc --strict must refuse it.
  const source = path.resolve(__dirname, "../test-support/seed000");
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-drift-"));
  t.after(() => fs.rmSync(scratch, { recursive: true, force: true }));
  const declaration = fs.readFileSync(path.join(source, "RorkTipKitModule.d.ts"), "utf8");
  assert.match(declaration, /invalidateTip\(tipId: string\): Promise<void>;/);
  fs.writeFileSync(path.join(scratch, "RorkTipKitModule.d.ts"), declaration.replace("invalidateTip(tipId: string)", "dismissTip(tipId: string)"));
  fs.copyFileSync(path.join(source, "drift.ts"), path.join(scratch, "drift.ts"));
  fs.writeFileSync(
    path.join(scratch, "tsconfig.json"),
    JSON.stringify({
      extends: path.join(source, "tsconfig.json"),
      compilerOptions: { noEmit: true, rootDir: scratch, baseUrl: source },
      include: [path.join(scratch, "*.ts")],
    }),
  );
  const r = spawnSync(process.env.TSC, ["-p", scratch, "--strict"], { encoding: "utf8" });
  assert.notEqual(r.status, 0, "tsc accepted a drifted surface:\n" + r.stdout);
  assert.match(r.stdout, /drift\.ts.*(invalidateTip|dismissTip)/s);
});
