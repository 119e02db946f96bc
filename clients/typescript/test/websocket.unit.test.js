"use strict";
// The WebSocket transports (issue #11) against the in-process fake daemon (test-support/fake.js): WebSocket-shaped
// objects made by the tests, a fake global `WebSocket` class for `connectWebSocket`, and — where the runtime has
// one (Node >= 22, Node 20 with --experimental-websocket, as clients/run-tests-typescript.sh arranges) — Node's
// real WebSocket against a minimal RFC 6455 server (test-support/ws-server.js). The client's timers run on a
// ManualClock; waits are for conditions (test-support/timing.js).
const test = require("node:test");
const assert = require("node:assert/strict");
const { spawnSync } = require("node:child_process");
const path = require("node:path");
const { connect, connectWebSocket, createClient, webSocketTransport, WebSocketTransport, tipsdSubprotocols } = require("../dist/index");
const { FakeDaemon, recordingLogger, withoutKey } = require("../test-support/fake");
const { ManualClock, barrier, until } = require("../test-support/timing");
const { startWebSocketServer } = require("../test-support/ws-server");

const TOKEN = "0123456789abcdef".repeat(4); // the shape `tipsd token` prints: 64 lowercase hex characters
const URL = "ws://127.0.0.1:8787/";
const fast = { initialDelayMs: 5, factor: 2, maxDelayMs: 1000, jitter: 0 };
const NativeWebSocket = globalThis.WebSocket; // Node's own, when the runtime has one (read before any test swaps it)

const swapped = new WeakMap(); // test → names whose original is already saved

/** Replaces (value) or removes (no value) a global until the end of the test, which restores the original. */
function swapGlobal(t, name, ...value) {
  if (!swapped.has(t)) swapped.set(t, new Set());
  if (!swapped.get(t).has(name)) {
    swapped.get(t).add(name);
    const original = Object.getOwnPropertyDescriptor(globalThis, name);
    t.after(() => {
      delete globalThis[name];
      if (original) Object.defineProperty(globalThis, name, original);
    });
  }
  if (value.length) Object.defineProperty(globalThis, name, { value: value[0], configurable: true, writable: true });
  else delete globalThis[name];
}

/**
 * A WHATWG-like `WebSocket` class bridged to a FakeDaemon: opens in a macrotask, one message per frame both ways.
 * `FakeWebSocket.instances` lists every socket made; `refuse = true` makes new sockets fail as a 401 does in a
 * browser (error, then close 1006).
 */
function fakeWebSocketClass(daemon) {
  class FakeWebSocket {
    constructor(...args) {
      this.args = args;
      this.url = args[0];
      this.readyState = 0;
      this.binaryType = "blob";
      this.protocol = "";
      this.sent = [];
      this.onopen = this.onmessage = this.onclose = this.onerror = null;
      FakeWebSocket.instances.push(this);
      const refuse = FakeWebSocket.refuse;
      setTimeout(() => this.start(refuse), 0);
    }
    async start(refuse) {
      if (this.readyState !== 0) return;
      if (refuse) {
        this.readyState = 3;
        if (this.onerror) this.onerror({ type: "error" });
        if (this.onclose) this.onclose({ code: 1006, reason: "" });
        return;
      }
      this.conn = await daemon.factory();
      this.conn.onMessage = (text) => this.frame(text);
      this.conn.onClose = () => this.serverClose(1006, "");
      this.readyState = 1;
      this.protocol = "tipsd.v1";
      if (this.onopen) this.onopen({});
    }
    /** A frame from the server. */
    frame(data) {
      if (this.readyState === 1 && this.onmessage) this.onmessage({ data });
    }
    send(data) {
      assert.equal(typeof data, "string", "text frames only");
      if (this.readyState !== 1) throw new Error("InvalidStateError");
      this.sent.push(data);
      this.conn.send(data);
    }
    close(code = 1000, reason = "") {
      if (this.readyState === 3) return;
      this.readyState = 3;
      if (this.conn) this.conn.drop();
      setTimeout(() => this.onclose && this.onclose({ code, reason }), 0);
    }
    /** The server closes the connection with `code`. */
    serverClose(code, reason) {
      if (this.readyState === 3) return;
      this.readyState = 3;
      if (this.conn) this.conn.drop();
      if (this.onclose) this.onclose({ code, reason });
    }
  }
  FakeWebSocket.instances = [];
  FakeWebSocket.refuse = false;
  return FakeWebSocket;
}

/** Everything a logger and a traffic tap were given, as one string. */
function everything(logger, tapped = []) {
  return [...logger.warnings, ...logger.errors, ...logger.debugs, ...tapped].join("\n");
}

function recordingTap() {
  const seen = [];
  return {
    seen,
    tap: {
      open(peer) {
        seen.push(JSON.stringify(peer));
        return (dir, message) => seen.push(`${dir} ${message}`);
      },
    },
  };
}

// ─── WebSocket-shaped objects (webSocketTransport with a factory) ─────────────────────────────────────────────

// A WebSocket-shaped object in front of the fake daemon: message per frame.
function fakeWebSocket(daemon, { openAfterMs = 1, failOpen = false, binary = false } = {}) {
  const ws = {
    readyState: 0,
    sent: [],
    onopen: null,
    onmessage: null,
    onclose: null,
    onerror: null,
    send(data) {
      assert.equal(typeof data, "string");
      ws.sent.push(data);
      ws.conn.send(data);
    },
    close(code) {
      ws.readyState = 3;
      ws.conn && ws.conn.drop();
      setTimeout(() => ws.onclose && ws.onclose({ code: code || 1000 }), 0);
    },
  };
  setTimeout(async () => {
    if (failOpen) {
      ws.readyState = 3;
      ws.onerror && ws.onerror({ message: "ECONNREFUSED" });
      ws.onclose && ws.onclose({ code: 1006 });
      return;
    }
    ws.conn = await daemon.factory();
    ws.conn.onMessage = (text) => ws.onmessage && ws.onmessage({ data: binary ? new TextEncoder().encode(text).buffer : text });
    ws.conn.onClose = () => {
      ws.readyState = 3;
      ws.onclose && ws.onclose({ code: 1006, reason: "server went away" });
    };
    ws.readyState = 1;
    ws.onopen && ws.onopen({});
  }, openAfterMs);
  return ws;
}

test("webSocketTransport: waits for open, one message per frame, string and binary frames", async (t) => {
  for (const binary of [false, true]) {
    const daemon = new FakeDaemon();
    const sockets = [];
    const clock = new ManualClock();
    const client = await connect({
      transport: webSocketTransport(() => {
        const ws = fakeWebSocket(daemon, { binary });
        sockets.push(ws);
        return ws;
      }),
      strict: true,
      logger: null,
      reconnect: { initialDelayMs: 5, jitter: 0 },
      timers: clock,
    });
    assert.equal(client.state, "connected");
    assert.deepEqual(await client.donate("e"), { count: 1, lifetime: 1 });
    assert.ok(sockets[0].sent.every((s) => !s.endsWith("\n")), "no framing on frames");
    daemon.crash();
    await until(() => client.state === "disconnected", { what: "the drop noticed" });
    assert.equal(clock.next(), 5, "the retry");
    await until(() => client.state === "connected" && sockets.length === 2, { what: "reconnect over a new WebSocket" });
    assert.deepEqual(await client.donate("e"), { count: 1, lifetime: 1 });
    await client.close();
    assert.equal(sockets[1].readyState, 3);
  }
});

test("webSocketTransport: a socket that fails to open is a failed attempt (no-op mode), not a crash", async () => {
  const daemon = new FakeDaemon();
  const logger = recordingLogger();
  const client = await connect({ transport: webSocketTransport(() => fakeWebSocket(daemon, { failOpen: true })), logger, reconnect: false });
  assert.equal(client.state, "disconnected");
  assert.equal(await client.donate("e"), undefined);
  assert.equal(logger.warnings.length, 1);
  assert.match(logger.warnings[0], /WebSocket failed to open: ECONNREFUSED/);
  await client.close();
});

test("webSocketTransport: open timeout, already-open sockets, and frames holding several lines", async () => {
  // A socket that never opens: the factory gives up after openTimeoutMs (however late the timer fires).
  await assert.rejects(
    Promise.resolve(webSocketTransport(() => ({ readyState: 0, send() {}, close() {}, onmessage: null, onclose: null }), { openTimeoutMs: 20 })()),
    /timed out/,
  );
  const got = [];
  const ws = { readyState: 1, send() {}, close() {}, onmessage: null, onclose: null };
  const transport = await webSocketTransport(() => ws)();
  assert.ok(transport instanceof WebSocketTransport);
  transport.onMessage = (m) => got.push(m);
  ws.onmessage({ data: '{"a":1}\n{"b":2}\n' });
  ws.onmessage({ data: '{"c":3}' });
  ws.onmessage({ data: 42 }); // not text: ignored
  assert.deepEqual(got, ['{"a":1}', '{"b":2}', '{"c":3}']);
  let closed = 0;
  transport.onClose = () => closed++;
  transport.close();
  transport.close();
  assert.equal(closed, 1, "reported once, at once (a WebSocket-shaped object may never fire onclose)");
  assert.throws(() => transport.send("{}"), /closed/);
});

test("WebSocketTransport: an error ends the connection even when no close event follows; close codes are explained", async () => {
  const ws = { readyState: 1, send() {}, close() { ws.closeCalls++; }, closeCalls: 0, onmessage: null, onclose: null, onerror: null };
  const transport = new WebSocketTransport(ws);
  const ended = [];
  transport.onClose = (error) => ended.push(error && error.message);
  ws.onerror({ message: "Received network error or non-101 status code." });
  assert.deepEqual(ended, ["Received network error or non-101 status code"]);
  assert.equal(ws.closeCalls, 1, "the failed socket is closed");
  ws.onclose({ code: 1006, reason: "" }); // a late close event changes nothing
  assert.equal(ended.length, 1);

  const cases = [
    [{ code: 1000, reason: "bye" }, undefined],
    [{ code: 1001, reason: "" }, "code 1001 (going away: tipsd is shutting down)"],
    [{ code: 1009, reason: "message exceeds 1048576 bytes" }, "code 1009 (message too big): message exceeds 1048576 bytes"],
    [{ code: 1008, reason: "" }, "code 1008 (policy violation)"],
    [{ code: 4000, reason: "custom" }, "code 4000: custom"],
  ];
  for (const [event, expected] of cases) {
    const s = { readyState: 1, send() {}, close() {}, onmessage: null, onclose: null };
    const tr = new WebSocketTransport(s);
    let got = "not called";
    tr.onClose = (error) => (got = error && error.message);
    s.onclose(event);
    assert.equal(got, expected, JSON.stringify(event));
  }
});

// ─── connectWebSocket: tipsd's listener through the global WebSocket ──────────────────────────────────────────

test("connectWebSocket: offers exactly tipsd.v1 and tipsd.token.<token>, no headers outside React Native; one JSON text per frame", async (t) => {
  const daemon = new FakeDaemon();
  const FakeWebSocket = fakeWebSocketClass(daemon);
  swapGlobal(t, "WebSocket", FakeWebSocket);
  swapGlobal(t, "navigator"); // Node 21+ has a navigator; this test is about a runtime that is not React Native
  assert.deepEqual(tipsdSubprotocols(TOKEN), ["tipsd.v1", `tipsd.token.${TOKEN}`]);
  const client = await connectWebSocket(URL, { token: `${TOKEN}\n`, strict: true, logger: null }); // pasted with its newline
  t.after(() => client.close());
  assert.equal(client.state, "connected");
  const [ws] = FakeWebSocket.instances;
  assert.deepEqual(ws.args, [URL, ["tipsd.v1", `tipsd.token.${TOKEN}`]], "(url, protocols): nothing else");
  assert.equal(ws.binaryType, "arraybuffer");

  await client.register([{ id: "t", title: "T" }]);
  const changes = [];
  client.observe("t", (c) => changes.push(c.shouldDisplay));
  await client.donate("café", { emoji: "🔎" });
  await barrier(client);
  assert.deepEqual(changes, [false]);
  // Every message the client sent is one frame holding one JSON text (no framing, no batching, no newline).
  assert.ok(ws.sent.length >= 5);
  for (const frame of ws.sent) {
    assert.ok(!frame.includes("\n"), frame);
    const message = JSON.parse(frame);
    assert.ok(!Array.isArray(message) && message.jsonrpc === "2.0", frame);
  }
  assert.deepEqual(ws.sent.map((f) => JSON.parse(f)), ws.conn.sent, "frame for frame what the daemon received");
  assert.deepEqual(withoutKey(ws.conn.sent.find((m) => m.method === "events/donate").params), { id: "café", info: { emoji: "🔎" } });
});

test("connectWebSocket: on React Native the token is also sent as Authorization: Bearer (third argument); options override", async (t) => {
  const daemon = new FakeDaemon();
  const FakeWebSocket = fakeWebSocketClass(daemon);
  swapGlobal(t, "WebSocket", FakeWebSocket);
  swapGlobal(t, "navigator", { product: "ReactNative" });
  const protocols = ["tipsd.v1", `tipsd.token.${TOKEN}`];
  const runs = [
    [{}, [URL, protocols, { headers: { Authorization: `Bearer ${TOKEN}` } }]],
    [{ authorizationHeader: false }, [URL, protocols]],
    [{ headers: { "X-App": "demo" }, protocols: ["extra"] }, [URL, [...protocols, "extra"], { headers: { "X-App": "demo", Authorization: `Bearer ${TOKEN}` } }]],
  ];
  for (const [options, args] of runs) {
    const client = await connectWebSocket(URL, { token: TOKEN, strict: true, logger: null, ...options });
    assert.deepEqual(FakeWebSocket.instances.at(-1).args, args, JSON.stringify(options));
    assert.deepEqual(await client.donate("e"), { count: 1, lifetime: 1 });
    await client.close();
  }
  // Elsewhere (browsers ignore a third argument; `ws` takes it): only when asked.
  swapGlobal(t, "navigator");
  const client = await connectWebSocket(URL, { token: TOKEN, authorizationHeader: true, strict: true, logger: null });
  assert.deepEqual(FakeWebSocket.instances.at(-1).args, [URL, protocols, { headers: { Authorization: `Bearer ${TOKEN}` } }]);
  await client.close();
  // A constructor given in the options is used instead of the global one.
  const Other = fakeWebSocketClass(daemon);
  const other = await connectWebSocket(URL, { token: TOKEN, WebSocket: Other, strict: true, logger: null });
  assert.equal(Other.instances.length, 1);
  await other.close();
});

test("connectWebSocket: a frame may hold a batch (responses and a notification together), text or binary", async (t) => {
  const daemon = new FakeDaemon();
  const FakeWebSocket = fakeWebSocketClass(daemon);
  swapGlobal(t, "WebSocket", FakeWebSocket);
  const client = await connectWebSocket(URL, { token: TOKEN, strict: true, logger: null });
  t.after(() => client.close());
  const actions = [];
  client.onAction((e) => actions.push(e));
  await barrier(client); // actions/subscribe answered
  const subscription = [...daemon.subs].find(([, s]) => s.kind === "actions")[0];
  const held = [];
  daemon.handlers["events/donate"] = (params, conn, message) => {
    held.push({ id: message.id, n: params.info.n });
    return FakeDaemon.NO_REPLY;
  };
  const promises = [1, 2, 3].map((n) => client.donate("e", { n }));
  await until(() => held.length === 3, { what: "three donations sent" });
  const [ws] = FakeWebSocket.instances;
  ws.frame(
    JSON.stringify([
      { jsonrpc: "2.0", id: held[1].id, result: { count: 2 } },
      { jsonrpc: "2.0", method: "tips/actionPerformed", params: { subscription, seq: 1, tipId: "filter.tip", actions: [{ id: "learn-more", title: "Learn more", index: 0 }] } },
      { jsonrpc: "2.0", id: held[0].id, result: { count: 1 } },
    ]),
  );
  ws.frame(new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id: held[2].id, result: { count: 3 } })).buffer); // a binary frame
  assert.deepEqual(await Promise.all(promises), [{ count: 1 }, { count: 2 }, { count: 3 }]);
  assert.deepEqual(actions, [{ tipId: "filter.tip", actions: [{ id: "learn-more", title: "Learn more", index: 0 }] }]);
});

test("connectWebSocket: reconnects on the ManualClock after the daemon closes (1001), through refused attempts, and restores subscriptions", async (t) => {
  const daemon = new FakeDaemon();
  const FakeWebSocket = fakeWebSocketClass(daemon);
  swapGlobal(t, "WebSocket", FakeWebSocket);
  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = await connectWebSocket(URL, { token: TOKEN, logger, reconnect: fast, timers: clock });
  t.after(() => client.close());
  await client.register([{ id: "t", title: "T" }]);
  const changes = [];
  client.observe("t", (c) => changes.push(`${c.cause}:${c.shouldDisplay}`));
  await barrier(client);

  FakeWebSocket.refuse = true; // the daemon is restarting: the next attempt is refused
  FakeWebSocket.instances[0].serverClose(1001, "daemon shutting down");
  assert.equal(client.state, "disconnected");
  assert.equal(await client.donate("e"), undefined, "a no-op while disconnected");
  assert.equal(logger.warnings.length, 1);
  assert.match(logger.warnings[0], /lost the connection to tipsd: code 1001 \(going away: tipsd is shutting down\): daemon shutting down/);
  assert.deepEqual(clock.pending(), [5]);

  assert.equal(clock.next(), 5);
  assert.equal(await client.ready(), false, "the first retry is refused");
  assert.deepEqual(clock.pending(), [5]);
  assert.equal(clock.next(), 5);
  assert.equal(await client.ready(), false, "and the second");
  assert.equal(FakeWebSocket.instances.length, 3);
  assert.equal(client.state, "disconnected");
  assert.deepEqual(clock.pending(), [10], "backoff doubles");
  assert.equal(logger.warnings.length, 1, "one warning per outage");

  daemon.setShouldDisplay("t", true); // changed while the client was away
  FakeWebSocket.refuse = false;
  assert.equal(clock.next(), 10);
  assert.equal(await client.ready(), true, "reconnected");
  assert.equal(FakeWebSocket.instances.length, 4);
  for (const ws of FakeWebSocket.instances) assert.deepEqual(ws.args, [URL, ["tipsd.v1", `tipsd.token.${TOKEN}`]], "the same subprotocols on every attempt");
  await barrier(client);
  assert.equal(daemon.methods("tips/register").length, 2, "registrations replayed");
  assert.equal(daemon.methods("tips/observe").length, 2, "re-observed");
  assert.deepEqual(changes, ["initial:false", "resync:true"]);
  assert.deepEqual(await client.donate("e"), { count: 1, lifetime: 1 });
  assert.deepEqual(clock.pending(), [], "nothing more scheduled");
});

test("connectWebSocket: without a global WebSocket the client is in no-op mode (one warning) and uses one installed later", async (t) => {
  swapGlobal(t, "WebSocket");
  assert.equal(typeof globalThis.WebSocket, "undefined");
  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = await connectWebSocket(URL, { token: TOKEN, logger, reconnect: fast, timers: clock });
  t.after(() => client.close());
  assert.equal(client.state, "disconnected");
  assert.equal(await client.donate("e"), undefined);
  assert.equal(await client.status(), undefined);
  assert.equal(logger.warnings.length, 1);
  assert.match(logger.warnings[0], /cannot reach tipsd: this runtime has no global WebSocket/);
  assert.equal(clock.next(), 5);
  assert.equal(await client.ready(), false, "the second attempt fails too");
  assert.equal(logger.warnings.length, 1, "still one warning");
  assert.match(logger.debugs.join("\n"), /reconnection attempt 2 failed/);

  const daemon = new FakeDaemon();
  swapGlobal(t, "WebSocket", fakeWebSocketClass(daemon)); // a polyfill installed after start-up
  assert.equal(clock.next(), 10);
  assert.equal(await client.ready(), true, "connected through the new global");
  assert.deepEqual(await client.donate("e"), { count: 1, lifetime: 1 });

  // strict: connect() rejects instead.
  swapGlobal(t, "WebSocket");
  await assert.rejects(connectWebSocket(URL, { token: TOKEN, strict: true, logger: null }), (e) => e.code === "ENOTCONNECTED" && /no global WebSocket/.test(e.message));
});

test("importing the package never throws without a WebSocket, and createClient with webSocketTransport is a no-op client", () => {
  const script = `
    delete globalThis.WebSocket;
    const { createClient, webSocketTransport } = require(${JSON.stringify(path.resolve(__dirname, "../dist/index.js"))});
    const client = createClient({ transport: webSocketTransport("ws://127.0.0.1:9/", { token: "${TOKEN}" }), reconnect: false });
    client.donate("e").then(async (r) => { console.log("donate:", r, client.state); await client.close(); });
  `;
  const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "donate: undefined disconnected");
  assert.match(r.stderr, /^\[tipsd\] cannot reach tipsd: this runtime has no global WebSocket/m, "one warning through console.warn");
  assert.equal(r.stderr.match(/\[tipsd\]/g).length, 1);
});

test("the token never appears in a log line, an error or the traffic log", async (t) => {
  const daemon = new FakeDaemon();
  const logger = recordingLogger();
  const { seen, tap } = recordingTap();
  const errors = [];
  const run = async (Ctor, token = TOKEN) => {
    const clock = new ManualClock();
    const client = await connectWebSocket(URL, { token, WebSocket: Ctor, logger, reconnect: fast, timers: clock, trafficTap: tap });
    if (client.connected) {
      await client.donate("e");
      Ctor.instances.at(-1).serverClose(1008, `token ${token} revoked`); // even a server echoing it back
      await until(() => client.state === "disconnected");
    }
    if (client.lastError) errors.push(String(client.lastError), String(client.lastError.cause));
    clock.next(); // one retry each, logged at debug level
    await client.ready();
    await client.close();
  };
  // A connection that works, then is closed by the server with the token in the reason.
  await run(fakeWebSocketClass(daemon));
  // A constructor that throws with the subprotocols in its message, as browsers do for an invalid one.
  const Throwing = class {
    constructor(url, protocols) {
      throw new SyntaxError(`Failed to construct 'WebSocket': The subprotocol '${protocols[1]}' is invalid.`);
    }
  };
  await run(Throwing);
  // An error event quoting the handshake.
  const Quoting = class {
    constructor(url, protocols) {
      this.readyState = 0;
      setTimeout(() => this.onerror({ message: `handshake refused for ${protocols.join(", ")}` }), 0);
    }
    close() {}
  };
  await run(Quoting);
  // A refused handshake (HTTP 401).
  const Refused = fakeWebSocketClass(daemon);
  Refused.refuse = true;
  await run(Refused);
  // Malformed tokens are refused without being quoted.
  for (const bad of ["not a token", "é".repeat(64)]) await run(fakeWebSocketClass(daemon), bad);
  // A missing token (a JavaScript caller) is a clear failure too.
  await run(fakeWebSocketClass(daemon), "");
  const missing = await connectWebSocket(URL, { WebSocket: fakeWebSocketClass(daemon), logger, reconnect: false });
  await missing.close();

  const all = everything(logger, [...seen, ...errors]);
  assert.ok(!all.includes(TOKEN), "the token leaked:\n" + all);
  assert.ok(!all.includes("not a token") && !all.includes("é".repeat(64)), "a malformed token leaked");
  assert.match(all, /<redacted>/);
  assert.match(all, /the tipsd token is malformed/);
  assert.match(all, /no tipsd token given/);
  assert.match(all, /WebSocket failed to open: .*check that tipsd serves --listen at ws:\/\/127\.0\.0\.1:8787\/ and that the token is the one `tipsd token` prints/);
  assert.ok(seen.some((s) => s.startsWith("out ")), "the tap saw the traffic");
});

test("connectWebSocket: a token provider is asked before every attempt (connect, then reconnect); its token, a rotation, its failure", async (t) => {
  const daemon = new FakeDaemon();
  const FakeWebSocket = fakeWebSocketClass(daemon);
  const logger = recordingLogger();
  const clock = new ManualClock();
  const ROTATED = "fedcba9876543210".repeat(4);
  const asked = [];
  const answers = [TOKEN, ROTATED, new Error("the keychain is locked"), 42, ` ${ROTATED}\n`];
  const provider = async (request) => {
    asked.push(request);
    await new Promise((resolve) => setTimeout(resolve, 0)); // asynchronous, as a fetch or a keychain read is
    const answer = answers.shift();
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const client = await connectWebSocket(URL, { token: provider, WebSocket: FakeWebSocket, logger, reconnect: fast, timers: clock });
  t.after(() => client.close());
  assert.equal(client.state, "connected");
  assert.deepEqual(asked, [{ reason: "connect" }]);
  assert.deepEqual(FakeWebSocket.instances[0].args, [URL, ["tipsd.v1", `tipsd.token.${TOKEN}`]]);

  // The daemon restarts with a new token: the provider is asked again, and its new token is offered.
  FakeWebSocket.instances[0].serverClose(1001, "daemon shutting down");
  assert.equal(clock.next(), 5);
  assert.equal(await client.ready(), true);
  assert.deepEqual(asked, [{ reason: "connect" }, { reason: "reconnect" }]);
  assert.deepEqual(FakeWebSocket.instances[1].args, [URL, ["tipsd.v1", `tipsd.token.${ROTATED}`]]);

  // A provider that fails, or answers something that is not a string, fails that attempt without opening a socket;
  // the client retries with backoff and asks again.
  FakeWebSocket.instances[1].serverClose(1006, "");
  assert.equal(clock.next(), 5);
  assert.equal(await client.ready(), false);
  assert.equal(FakeWebSocket.instances.length, 2, "no socket without a token");
  assert.match(client.lastError.message, /cannot reach tipsd: the tipsd token provider failed: the keychain is locked/);
  assert.equal(clock.next(), 5);
  assert.equal(await client.ready(), false);
  assert.match(client.lastError.message, /the tipsd token provider returned number, not a string/);
  assert.equal(clock.next(), 10);
  assert.equal(await client.ready(), true, "the provider's next answer (with whitespace around it) connects");
  assert.deepEqual(FakeWebSocket.instances[2].args, [URL, ["tipsd.v1", `tipsd.token.${ROTATED}`]]);
  assert.equal(asked.length, 5);
  assert.ok(asked.slice(1).every((r) => r.reason === "reconnect"));
  assert.deepEqual(await client.donate("e"), { count: 1, lifetime: 1 });
  const all = everything(logger, [String(client.lastError)]);
  assert.ok(!all.includes(TOKEN) && !all.includes(ROTATED), "a token leaked:\n" + all);
});

// ─── Node's own WebSocket against a real WebSocket server ─────────────────────────────────────────────────────

const noNativeWebSocket = typeof NativeWebSocket !== "function" && "no global WebSocket in this Node (Node 20: --experimental-websocket)";

test("Node's WebSocket: subprotocol handshake, text frames, 401 on a wrong token, reconnection after a drop", { skip: noNativeWebSocket }, async (t) => {
  const daemon = new FakeDaemon();
  const server = await startWebSocketServer({ token: TOKEN, backend: daemon.factory });
  t.after(() => server.close());
  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = await connectWebSocket(server.url, { token: TOKEN, WebSocket: NativeWebSocket, logger, reconnect: fast, timers: clock });
  t.after(() => client.close());
  assert.equal(client.state, "connected", logger.warnings.join("\n"));
  assert.deepEqual(server.handshakes[0], { path: "/", protocols: ["tipsd.v1", `tipsd.token.${TOKEN}`], authorization: undefined });
  await client.register([{ id: "t", title: "T" }]);
  const changes = [];
  client.observe("t", (c) => changes.push(c.shouldDisplay));
  assert.deepEqual(await client.donate("e"), { count: 1, lifetime: 1 });
  await barrier(client);
  const [conn] = server.connections;
  for (const frame of conn.received) assert.equal(JSON.parse(frame).jsonrpc, "2.0");

  conn.drop(); // the daemon vanishes: no close frame
  await until(() => client.state === "disconnected", { what: "the drop noticed" });
  assert.deepEqual(clock.pending(), [5]);
  daemon.setShouldDisplay("t", true);
  clock.next();
  await until(() => client.connected, { what: "reconnected" });
  await barrier(client);
  assert.deepEqual(changes, [false, true]);
  assert.equal(server.handshakes.length, 2);

  // A wrong token: HTTP 401 before the upgrade → no-op mode with one warning, the token unquoted.
  const wrong = "f".repeat(64);
  const refusedLog = recordingLogger();
  const refused = await connectWebSocket(server.url, { token: wrong, WebSocket: NativeWebSocket, logger: refusedLog, reconnect: false });
  assert.equal(refused.state, "disconnected");
  assert.equal(await refused.donate("e"), undefined);
  assert.equal(refusedLog.warnings.length, 1);
  assert.match(refusedLog.warnings[0], /cannot reach tipsd: WebSocket failed to open: .*the token is the one `tipsd token` prints/);
  assert.ok(!everything(refusedLog).includes(wrong) && !everything(logger).includes(TOKEN));
  assert.deepEqual(server.handshakes.at(-1).protocols, ["tipsd.v1", `tipsd.token.${wrong}`]);
  await refused.close();

  // The daemon shutting down: close 1001, explained.
  [...server.connections][0].close(1001, "daemon shutting down");
  await until(() => client.state === "disconnected", { what: "the close noticed" });
  assert.match(logger.warnings.at(-1), /code 1001 \(going away: tipsd is shutting down\): daemon shutting down/);
});
