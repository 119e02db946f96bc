"use strict";
// Hosted mode's client side (issue #23) against the in-process fake daemon (test-support/fake.js): how a token is
// presented at the WebSocket upgrade (subprotocol, Authorization header, access_token query parameter) or in
// initialize, when the session's token is refreshed (auth/refresh, on a ManualClock), what happens when that fails or
// when the daemon ends the session, and an admin acting on named accounts. The real hosted daemon, PostgreSQL and
// PyJWT tokens are in hosted.integration.test.js.
const test = require("node:test");
const assert = require("node:assert/strict");
const { connect, connectWebSocket, refreshDelayMs, webSocketTransport } = require("../dist/index");
const { FakeDaemon, recordingLogger, withoutKey } = require("../test-support/fake");
const { ManualClock, barrier, until } = require("../test-support/timing");
const { startWebSocketServer } = require("../test-support/ws-server");

const URL = "ws://127.0.0.1:8787/";
// The shape of an app's JWT: three base64url parts, far longer than tipsd's own 64-character token.
const JWT = `eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS0xIn0.${"eyJzdWIiOiJhbGljZSJ9".repeat(12)}.${"c2lnbmF0dXJl".repeat(20)}`;
const DAEMON_TOKEN = "0123456789abcdef".repeat(4);
const fast = { initialDelayMs: 5, maxDelayMs: 20, jitter: 0 };
const NativeWebSocket = globalThis.WebSocket;

function swapGlobal(t, name, ...value) {
  const original = Object.getOwnPropertyDescriptor(globalThis, name);
  t.after(() => {
    delete globalThis[name];
    if (original) Object.defineProperty(globalThis, name, original);
  });
  if (value.length) Object.defineProperty(globalThis, name, { value: value[0], configurable: true, writable: true });
  else delete globalThis[name];
}

/** A WebSocket class that records its constructor's arguments and opens onto the fake daemon. */
function recordingWebSocket(daemon) {
  class RecordingWebSocket {
    constructor(...args) {
      this.args = args;
      this.readyState = 0;
      this.onopen = this.onmessage = this.onclose = this.onerror = null;
      RecordingWebSocket.instances.push(this);
      setTimeout(async () => {
        this.conn = await daemon.factory();
        this.conn.onMessage = (data) => this.readyState === 1 && this.onmessage && this.onmessage({ data });
        this.conn.onClose = () => {
          this.readyState = 3;
          if (this.onclose) this.onclose({ code: 1006, reason: "" });
        };
        this.readyState = 1;
        if (this.onopen) this.onopen({});
      }, 0);
    }
    send(data) {
      this.conn.send(data);
    }
    close() {
      if (this.readyState === 3) return;
      this.readyState = 3;
      if (this.conn) this.conn.close();
    }
  }
  RecordingWebSocket.instances = [];
  return RecordingWebSocket;
}

/** Makes the fake daemon sign sessions in: initialize reports `auth`, auth/refresh answers with `refreshed`. */
function signingDaemon(auth, refresh) {
  const daemon = new FakeDaemon();
  daemon.handlers.initialize = (params, conn) => ({ ...daemon.builtin(conn, "initialize", params), auth: auth(params) });
  daemon.handlers["auth/refresh"] = refresh;
  return daemon;
}

// ─── Presenting the token at the upgrade ──────────────────────────────────────────────────────────────────────

test("a JWT is sent as Authorization: Bearer on Node, as access_token on React Native; tipsd's own token stays a subprotocol", async (t) => {
  const daemon = new FakeDaemon();
  const Recording = recordingWebSocket(daemon);
  swapGlobal(t, "WebSocket", Recording);
  swapGlobal(t, "navigator");
  const open = async (url, options) => {
    const client = await connectWebSocket(url, { strict: true, logger: null, ...options });
    await client.close();
    return Recording.instances.at(-1).args;
  };
  // Node (a WebSocket constructor that is not Node's own takes the headers as its third argument, as `ws` does).
  assert.deepEqual(await open(URL, { token: JWT }), [URL, ["tipsd.v1"], { headers: { Authorization: `Bearer ${JWT}` } }]);
  assert.deepEqual(await open(URL, { token: DAEMON_TOKEN }), [URL, ["tipsd.v1", `tipsd.token.${DAEMON_TOKEN}`]]);
  // Where headers cannot be sent (browsers; asked for here with authorizationHeader: false): the query parameter,
  // added to the URL's own query and kept before its fragment.
  assert.deepEqual(await open(URL, { token: JWT, authorizationHeader: false }), [`${URL}?access_token=${JWT}`, ["tipsd.v1"]]);
  assert.deepEqual(await open("ws://h:1/tips?app=demo#top", { token: JWT, authorizationHeader: false }), [`ws://h:1/tips?app=demo&access_token=${JWT}#top`, ["tipsd.v1"]]);
  // A token that URL encoding changes is encoded.
  const odd = `${JWT}+/=`;
  assert.deepEqual((await open(URL, { token: odd, authorizationHeader: false }))[0], `${URL}?access_token=${encodeURIComponent(odd)}`);
  // React Native: the query parameter for a JWT; tipsd's own token as before (subprotocol and header).
  swapGlobal(t, "navigator", { product: "ReactNative" });
  assert.deepEqual(await open(URL, { token: JWT }), [`${URL}?access_token=${JWT}`, ["tipsd.v1"]]);
  assert.deepEqual(await open(URL, { token: DAEMON_TOKEN }), [URL, ["tipsd.v1", `tipsd.token.${DAEMON_TOKEN}`], { headers: { Authorization: `Bearer ${DAEMON_TOKEN}` } }]);
  assert.deepEqual(await open(URL, { token: JWT, authorizationHeader: true }), [URL, ["tipsd.v1"], { headers: { Authorization: `Bearer ${JWT}` } }]);
  // signIn: "initialize": nothing at the upgrade but the subprotocol; the token goes in initialize's auth.
  assert.deepEqual(await open(URL, { token: JWT, signIn: "initialize" }), [URL, ["tipsd.v1"]]);
  const initialize = daemon.methods("initialize").at(-1);
  assert.deepEqual(initialize.params.auth, { token: JWT });
  assert.ok(daemon.methods("initialize").slice(0, -1).every((m) => m.params.auth === undefined), "only signIn: initialize puts the token in initialize");
});

const noNativeWebSocket = typeof NativeWebSocket !== "function" && "no global WebSocket in this Node (Node 20: --experimental-websocket)";

test("Node's own WebSocket sends a JWT as Authorization: Bearer (its headers go in the second argument)", { skip: noNativeWebSocket }, async (t) => {
  const daemon = new FakeDaemon();
  const server = await startWebSocketServer({ token: JWT, backend: daemon.factory });
  t.after(() => server.close());
  const client = await connectWebSocket(server.url, { token: JWT, WebSocket: NativeWebSocket, strict: true, logger: null });
  t.after(() => client.close());
  assert.equal(client.state, "connected");
  assert.deepEqual(server.handshakes[0], { path: "/", protocols: ["tipsd.v1"], authorization: `Bearer ${JWT}` });
  assert.deepEqual(await client.donate("e"), { count: 1, lifetime: 1 });
});

test("the JWT never appears in an error, even when it travels in the URL", async (t) => {
  const logger = recordingLogger();
  const Refusing = class {
    constructor(url) {
      this.readyState = 0;
      setTimeout(() => this.onerror({ message: `connection to ${url} refused` }), 0);
    }
    close() {}
  };
  const client = await connectWebSocket(URL, { token: JWT, authorizationHeader: false, WebSocket: Refusing, logger, reconnect: false });
  await client.close();
  const all = [...logger.warnings, ...logger.debugs, String(client.lastError)].join("\n");
  assert.match(all, /connection to ws:\/\/127\.0\.0\.1:8787\/\?access_token=<redacted> refused/);
  assert.ok(!all.includes(JWT.slice(0, 40)), all);
});

// ─── Signing in inside initialize ─────────────────────────────────────────────────────────────────────────────

test("the token option signs in inside initialize (any transport); a refused sign-in is EUNAUTHORIZED and retried", async (t) => {
  const asked = [];
  let refuse = true;
  const daemon = new FakeDaemon();
  daemon.handlers.initialize = (params, conn) => {
    if (refuse) throw { code: -32013, message: "the token expired", data: { reason: "expired" } };
    return { ...daemon.builtin(conn, "initialize", params), auth: { account: "alice", admin: false, expiresAt: null } };
  };
  const clock = new ManualClock();
  const logger = recordingLogger();
  const client = await connect({ transport: daemon.factory, token: async (request) => (asked.push(request.reason), ` ${JWT}\n`), timers: clock, reconnect: fast, logger });
  t.after(() => client.close());
  assert.equal(client.state, "disconnected");
  assert.equal(client.lastError.code, "EUNAUTHORIZED");
  assert.equal(client.lastError.cause.data.reason, "expired");
  assert.deepEqual(daemon.methods("initialize")[0].params.auth, { token: JWT }, "trimmed");
  refuse = false;
  clock.next();
  assert.equal(await client.ready(), true);
  assert.deepEqual(asked, ["connect", "reconnect"]);
  assert.deepEqual(client.auth, { account: "alice", admin: false, expiresAt: null });
  assert.deepEqual(clock.pending(), [], "no expiry, no refresh");
  assert.ok(!logger.warnings.join("\n").includes(JWT.slice(0, 40)));
});

// ─── Refreshing before expiry ─────────────────────────────────────────────────────────────────────────────────

test("refreshDelayMs: 60 s before the expiry, or a tenth of the remaining lifetime when that is shorter", () => {
  assert.equal(refreshDelayMs(3600, 0), 3_540_000);
  assert.equal(refreshDelayMs(300, 0), 270_000);
  assert.equal(refreshDelayMs(3, 0), 2700);
  assert.equal(refreshDelayMs(1000, 999_500), 450);
  assert.equal(refreshDelayMs(1000, 1_000_000), 0);
  assert.equal(refreshDelayMs(1000, 2_000_000), 0, "already expired: at once");
});

test("a session is refreshed before its token expires, on the same connection; its subscriptions stay", async (t) => {
  let expiresAt = 3600;
  const daemon = signingDaemon(
    () => ({ account: "alice", admin: false, expiresAt }),
    (params) => {
      assert.equal(params.token, `${JWT}.${asked.length}`);
      expiresAt += 3600;
      return { account: "alice", admin: false, expiresAt };
    },
  );
  const asked = [];
  const clock = new ManualClock();
  const provider = async (request) => {
    asked.push(request.reason);
    return `${JWT}.${asked.length}`;
  };
  const client = await connect({ transport: Object.assign(daemon.factory, { token: provider }), timers: clock, reconnect: fast, logger: null });
  t.after(() => client.close());
  const seen = [];
  client.observe("t", (change) => seen.push(change.shouldDisplay));
  await barrier(client);
  assert.deepEqual(clock.pending(), [3_540_000], "60 s before the expiry");
  clock.next();
  await until(() => client.auth.expiresAt === 7200, { what: "the refresh" });
  assert.deepEqual(asked, ["refresh"], "the transport's provider, asked for a refresh");
  assert.deepEqual(clock.pending(), [3_600_000], "the next refresh, 60 s before the new expiry");
  clock.next();
  await until(() => client.auth.expiresAt === 10800, { what: "the second refresh" });
  assert.deepEqual(asked, ["refresh", "refresh"]);
  assert.equal(daemon.connects, 1, "one connection throughout");
  assert.equal(daemon.methods("tips/observe").length, 1, "subscribed once");
  daemon.setShouldDisplay("t", true);
  await barrier(client);
  assert.deepEqual(seen, [true], "the subscription still notifies");
  await client.close();
  assert.deepEqual(clock.pending(), [], "close() cancels the refresh");
});

test("a refresh that fails reconnects at once with a token asked for 'reconnect'; the subscriptions are made again", async (t) => {
  const daemon = signingDaemon(
    () => ({ account: "alice", admin: false, expiresAt: 100 }),
    () => {
      throw { code: -32013, message: "the token is not valid", data: { reason: "badSignature" } };
    },
  );
  const asked = [];
  const clock = new ManualClock();
  const logger = recordingLogger();
  const client = await connect({ transport: daemon.factory, token: (request) => (asked.push(request.reason), JWT), timers: clock, reconnect: fast, logger });
  t.after(() => client.close());
  client.observe("t", () => {});
  await barrier(client);
  assert.deepEqual(clock.pending(), [90_000], "a tenth of a 100 s lifetime before the expiry");
  clock.next();
  await until(() => daemon.connects === 2 && client.connected, { what: "the reconnection" });
  assert.deepEqual(asked, ["connect", "refresh", "reconnect"]);
  assert.match(logger.warnings.join("\n"), /could not refresh the session's token \(auth\/refresh: the token is not valid \(-32013\)\); reconnecting/);
  assert.ok(!logger.warnings.some((w) => /lost the connection/.test(w)), "an expected reconnection is not an outage");
  await barrier(client);
  assert.equal(daemon.methods("tips/observe").length, 2, "observed again on the new connection");
});

test("the daemon ending an expired session (-32013, id null, then a close) makes the client sign in again at once", async (t) => {
  const daemon = signingDaemon(() => ({ account: "alice", admin: false, expiresAt: 100 }), () => ({}));
  const asked = [];
  const clock = new ManualClock();
  const logger = recordingLogger();
  const client = await connect({ transport: daemon.factory, token: (request) => (asked.push(request.reason), JWT), timers: clock, reconnect: fast, logger, autoRefresh: false });
  t.after(() => client.close());
  assert.deepEqual(clock.pending(), [], "autoRefresh: false");
  const [conn] = daemon.connections;
  conn.deliver({ jsonrpc: "2.0", id: null, error: { code: -32013, message: "the session's token expired; sign in again", data: { reason: "expired" } } });
  conn.drop();
  await until(() => daemon.connects === 2 && client.connected, { what: "signed in again" });
  assert.deepEqual(clock.pending(), [], "no backoff wait");
  assert.deepEqual(asked, ["connect", "reconnect"]);
  assert.equal(client.lastError.code, "EUNAUTHORIZED");
  assert.equal(client.lastError.cause.data.reason, "expired");
  assert.deepEqual(logger.warnings, ["tipsd ended the session (expired): the session's token expired; sign in again; signing in again"]);
});

test("a fixed token that expires cannot be refreshed: one warning, no timer", async (t) => {
  const daemon = signingDaemon(() => ({ account: "alice", admin: false, expiresAt: 100 }), () => ({}));
  const clock = new ManualClock();
  const logger = recordingLogger();
  const client = await connect({ transport: daemon.factory, token: JWT, timers: clock, logger });
  t.after(() => client.close());
  assert.deepEqual(clock.pending(), []);
  assert.deepEqual(logger.warnings, ["the session's token expires at 1970-01-01T00:01:40.000Z and cannot be refreshed: give a token provider (a function) instead of a string"]);
});

test("webSocketTransport carries its token source for the client's refresh", () => {
  const provider = () => JWT;
  assert.equal(webSocketTransport(URL, { token: provider }).token, provider);
  assert.equal(webSocketTransport(URL, { token: JWT }).token, JWT);
  assert.equal(webSocketTransport(URL).token, undefined);
});

// ─── Admin sessions ───────────────────────────────────────────────────────────────────────────────────────────

test("forAccount and the account option name the account of every account-scoped request and subscription", async (t) => {
  const daemon = new FakeDaemon();
  const echo = (params) => params ?? {};
  for (const method of ["accounts/list", "accounts/export", "tips/invalidate", "clock/now", "auth/refresh"]) daemon.handlers[method] = echo;
  const admin = await connect({ transport: daemon.factory, strict: true, logger: null });
  t.after(() => admin.close());
  const alice = admin.forAccount("alice");
  assert.equal(alice.account, "alice");
  assert.equal(admin.account, undefined);
  assert.equal(alice.state, "connected", "the view shares the connection");
  await alice.donate("e");
  await alice.status(["t"]);
  await alice.clockNow();
  await admin.donate("e");
  assert.deepEqual(
    daemon.log
      .filter((m) => ["events/donate", "tips/status", "clock/now"].includes(m.method))
      .map((m) => (m.method === "events/donate" ? withoutKey(m.params) : m.params)),
    [{ id: "e", account: "alice" }, { ids: ["t"], account: "alice" }, { account: "alice" }, { id: "e" }],
  );
  // accounts/* and auth/refresh act on no account: never given one.
  assert.deepEqual(await alice.accountsList({ limit: 2 }), { limit: 2 });
  assert.deepEqual(await alice.accountsExport("bob"), { account: "bob" });
  assert.deepEqual(await alice.authRefresh(JWT), { token: JWT });
  // Subscriptions: made and ended on the account.
  const stop = alice.observe("t", () => {});
  const stopActions = alice.onAction(() => {});
  await barrier(admin);
  stop();
  stopActions();
  await barrier(admin);
  for (const method of ["tips/observe", "actions/subscribe", "tips/unobserve", "actions/unsubscribe"]) {
    assert.equal(daemon.methods(method).at(-1).params.account, "alice", method);
  }
  assert.throws(() => admin.forAccount(""), /non-empty string/);
  // The account option: the whole client acts on one account.
  const bob = await connect({ transport: daemon.factory, strict: true, logger: null, account: "bob" });
  t.after(() => bob.close());
  await bob.invalidate("t");
  assert.deepEqual(withoutKey(daemon.methods("tips/invalidate").at(-1).params), { id: "t", account: "bob" });
});
