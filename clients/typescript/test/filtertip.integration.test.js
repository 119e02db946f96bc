"use strict";
// Seed 000's FilterTip end to end, over every transport and both framings, against the real daemon.
const test = require("node:test");
const assert = require("node:assert/strict");
const net = require("node:net");
const fs = require("node:fs");
const path = require("node:path");
const { connect, connectUnix, connectWebSocket, stdioTransport, webSocketTransport, FrameDecoder, tipVisibilityStore } =
  require("../dist/node");
const { TIPSD, daemonTest, startDaemon, FILTER_TIP } = require("../test-support/tipsd");
const { TEST_TIMEOUT_MS, until } = require("../test-support/timing");

/**
 * third search.opened → the observe listener gets true; performAction → the onAction listener gets the
 * `actions` array; filter.used → false.
 */
async function filterTipScenario(client) {
  await client.configure("immediate");
  const registered = await client.register([FILTER_TIP]);
  assert.equal(registered.tips[0].shouldDisplay, false);

  const seen = [];
  const unobserve = client.observe("filter.tip", (change) => seen.push(change));
  const actions = [];
  const offAction = client.onAction((event) => actions.push(event));
  const store = tipVisibilityStore(client, "filter.tip");
  let storeChanges = 0;
  const offStore = store.subscribe(() => storeChanges++);

  await until(() => seen.length === 1, { what: "initial state" });
  assert.equal(seen[0].shouldDisplay, false);
  assert.equal(seen[0].cause, "initial");
  assert.equal(seen[0].status, "pending");

  assert.deepEqual(await client.donate("search.opened"), { count: 1, lifetime: 1 });
  assert.deepEqual(await client.donate("search.opened"), { count: 2, lifetime: 2 });
  assert.equal(seen.length, 1, "no change before the third donation");
  assert.deepEqual(await client.donate("search.opened"), { count: 3, lifetime: 3 });
  await until(() => seen.length === 2, { what: "shouldDisplay true after the third donation" });
  assert.equal(seen[1].shouldDisplay, true);
  assert.equal(seen[1].cause, "notification");
  assert.equal(seen[1].status, "available");
  assert.deepEqual(seen[1].tip.actions, [{ id: "learn-more", title: "Learn more", index: 0 }]);
  await until(() => store.getSnapshot() === true, { what: "store true" });

  const state = await client.performAction("filter.tip", "learn-more", { invalidate: false });
  assert.equal(state.id, "filter.tip");
  await until(() => actions.length === 1, { what: "tips/actionPerformed" });
  assert.deepEqual(actions[0], { tipId: "filter.tip", actions: [{ id: "learn-more", title: "Learn more", index: 0 }] });
  assert.ok(Array.isArray(actions[0].actions), "the payload is an array");

  assert.deepEqual(await client.donate("filter.used"), { count: 1, lifetime: 1 });
  await until(() => seen.length === 3, { what: "shouldDisplay false after filter.used" });
  assert.equal(seen[2].shouldDisplay, false);
  await until(() => store.getSnapshot() === false, { what: "store false" });
  assert.equal(storeChanges, 2);

  unobserve();
  offAction();
  offStore();
  return { seen, actions };
}

for (const framing of ["newline", "contentLength"]) {
  test(`FilterTip over the Unix socket, ${framing} framing`, daemonTest(), async (t) => {
    const daemon = await startDaemon();
    t.after(() => daemon.cleanup());
    const client = await connectUnix(daemon.socketPath, { framing, strict: true, logger: null });
    t.after(() => client.close());
    await filterTipScenario(client);
  });

  test(`FilterTip over stdio (a child tipsd serve --stdio), ${framing} framing`, daemonTest(), async (t) => {
    let stderr = "";
    const closes = [];
    const factory = stdioTransport({
      command: TIPSD,
      args: ["--datastore", ":memory:", "--clock", "virtual", "--allow-testing"],
      framing,
      stderr: (text) => (stderr += text),
      killAfterMs: TEST_TIMEOUT_MS, // only a hang guard: after shutdown + exit the child exits 0 by itself
    });
    // Record how the transport closes: a child exiting with status 0 closes without an error.
    const recording = async () => {
      const transport = await factory();
      const wrapped = {
        onMessage: null,
        onClose: null,
        send: (m) => transport.send(m),
        close: () => transport.close(),
      };
      transport.onMessage = (m) => wrapped.onMessage && wrapped.onMessage(m);
      transport.onClose = (e) => {
        closes.push(e ? e.message : "clean");
        if (wrapped.onClose) wrapped.onClose(e);
      };
      return wrapped;
    };
    const client = await connect({ transport: recording, strict: true, logger: null, reconnect: false });
    t.after(() => client.close());
    await filterTipScenario(client);
    // shutdown + exit: the child exits 0 and the transport reports a clean close.
    await client.close({ shutdown: true });
    assert.equal(client.state, "closed");
    await until(() => closes.length === 1, { what: "the child to exit" });
    assert.deepEqual(closes, ["clean"]);
    assert.doesNotMatch(stderr, /\bpanic|fatal error/i);
  });
}

test("FilterTip over a WebSocket-shaped object bridged to the Unix socket", daemonTest(), async (t) => {
  const daemon = await startDaemon();
  t.after(() => daemon.cleanup());
  // What a WebSocket ↔ Unix-socket bridge gives a React Native app: message per frame, RN's WebSocket API.
  const sockets = [];
  function bridgedWebSocket() {
    const decoder = new FrameDecoder();
    const ws = {
      readyState: 0,
      onopen: null,
      onmessage: null,
      onclose: null,
      onerror: null,
      framesIn: 0,
      framesOut: 0,
      send(data) {
        if (ws.readyState !== 1) throw new Error("INVALID_STATE_ERR");
        ws.framesOut++;
        socket.write(data + "\n");
      },
      close() {
        if (ws.readyState >= 2) return;
        ws.readyState = 2;
        socket.end();
      },
    };
    const socket = net.createConnection({ path: daemon.socketPath });
    socket.on("connect", () => {
      ws.readyState = 1;
      ws.onopen && ws.onopen({ type: "open" });
    });
    socket.on("data", (chunk) => {
      for (const message of decoder.push(chunk)) {
        ws.framesIn++;
        ws.onmessage && ws.onmessage({ data: message });
      }
    });
    socket.on("error", (e) => ws.onerror && ws.onerror({ message: e.message }));
    socket.on("close", () => {
      ws.readyState = 3;
      ws.onclose && ws.onclose({ code: 1000, reason: "" });
    });
    sockets.push(ws);
    return ws;
  }
  const client = await connect({ transport: webSocketTransport(bridgedWebSocket), strict: true, logger: null });
  t.after(() => client.close());
  await filterTipScenario(client);
  assert.equal(sockets.length, 1);
  assert.ok(sockets[0].framesIn >= 10 && sockets[0].framesOut >= 10);
});

test("a change caused by time (the virtual clock passing a within window) reaches the listener as a notification", daemonTest(), async (t) => {
  const daemon = await startDaemon();
  t.after(() => daemon.cleanup());
  const client = await connectUnix(daemon.socketPath, { strict: true, logger: null });
  t.after(() => client.close());
  await client.register([FILTER_TIP]);
  const seen = [];
  client.observe("filter.tip", (c) => seen.push(c.shouldDisplay));
  for (let i = 0; i < 3; i++) await client.donate("search.opened");
  await until(() => seen.length === 2);
  assert.deepEqual(seen, [false, true]);
  await client.clockAdvance(2 * 86400); // past the one-day window
  await until(() => seen.length === 3, { what: "the window expiring" });
  assert.deepEqual(seen, [false, true, false]);
});

test("several clients share one engine: a donation from A notifies B (observe all, and groups)", daemonTest(), async (t) => {
  const daemon = await startDaemon();
  t.after(() => daemon.cleanup());
  const a = await connectUnix(daemon.socketPath, { strict: true, logger: null, clientInfo: { name: "A" } });
  const b = await connectUnix(daemon.socketPath, { strict: true, logger: null, clientInfo: { name: "B" } });
  t.after(() => Promise.all([a.close(), b.close()]));
  await a.register([FILTER_TIP]);
  await a.registerGroup({ id: "search", priority: "firstAvailable", tips: ["filter.tip"] });
  const everything = [];
  b.observe({}, (c) => everything.push(c));
  const groups = [];
  b.observe({ groups: ["search"] }, (c) => groups.push(c));
  await until(() => everything.length === 1 && groups.length >= 1, { what: "initial states" });
  assert.deepEqual([everything[0].type, everything[0].id, everything[0].shouldDisplay], ["tip", "filter.tip", false]);
  const initialGroup = groups.find((g) => g.type === "group");
  assert.deepEqual([initialGroup.group, initialGroup.tipId], ["search", null]);
  for (let i = 0; i < 3; i++) await a.donate("search.opened");
  await until(() => everything.length === 2, { what: "B notified of A's donation" });
  assert.equal(everything[1].shouldDisplay, true);
  await until(() => groups.some((g) => g.type === "group" && g.tipId === "filter.tip"), { what: "group current tip" });
  // A tip registered later is observed by the observe-everything subscription too, if it becomes displayable.
  await a.register([{ id: "later.tip", title: "Later", rules: [{ event: "later", count: { gte: 1 } }] }]);
  await a.donate("later");
  await until(() => everything.some((c) => c.id === "later.tip" && c.shouldDisplay), { what: "later.tip" });
});

/** The port of the daemon's `--listen 127.0.0.1:0`, from its log, and the token from the file beside its socket. */
async function webListener(daemon) {
  await until(() => /listen=ws:\/\/127\.0\.0\.1:\d+\//.test(daemon.stderr), { what: "the listen line" });
  const port = Number(/listen=ws:\/\/127\.0\.0\.1:(\d+)\//.exec(daemon.stderr)[1]);
  const token = fs.readFileSync(path.join(daemon.dir, "token"), "utf8").trim();
  return { url: `ws://127.0.0.1:${port}/`, token };
}

test("FilterTip over the daemon's own WebSocket listener (the platform's WebSocket)", daemonTest(), async (t) => {
  assert.equal(typeof globalThis.WebSocket, "function", "Node 20 needs --experimental-websocket (the runner sets it)");
  const daemon = await startDaemon({ args: ["--listen", "127.0.0.1:0"] });
  t.after(() => daemon.cleanup());
  const { url, token } = await webListener(daemon);
  const client = await connectWebSocket(url, { token, strict: true, logger: null });
  t.after(() => client.close());
  await filterTipScenario(client);
  assert.doesNotMatch(daemon.stderr, new RegExp(token), "the token never reaches the daemon's log");
});

test("a wrong token is refused before the upgrade, and the client says so without the token", daemonTest(), async (t) => {
  const daemon = await startDaemon({ args: ["--listen", "127.0.0.1:0"] });
  t.after(() => daemon.cleanup());
  const { url, token } = await webListener(daemon);
  const wrong = "0".repeat(64);
  const warnings = [];
  const logger = { warn: (...a) => warnings.push(a.map(String).join(" ")), debug: () => {} };
  await assert.rejects(
    connectWebSocket(url, { token: wrong, strict: true, logger, reconnect: false }),
    (error) => !String(error.message).includes(wrong) && !String(error.message).includes(token));
  assert.ok(warnings.every((w) => !w.includes(wrong) && !w.includes(token)));
  // The daemon's log is read asynchronously: wait for the line rather than expect it already read.
  await daemon.waitForLog(/refused a WebSocket upgrade.*status=401/);
});
