"use strict";
// An in-process stand-in for tipsd for unit tests: a transport factory whose "server" side answers JSON-RPC
// with a tiny model (tips with a shouldDisplay flag, observe/actions subscriptions) plus per-test overrides.
// It is not the daemon: integration tests in test/*.integration.test.js drive the real binary.
// Like the daemon, it answers a connection's requests in order and delivers the notifications a request causes
// before that request's reply (see barrier() in timing.js). Requests are handled in a microtask; connection
// closes are reported in a macrotask (setTimeout 0), as a socket's would be.

// The serverInfo name of every fake peer: the traffic check (clients/python/tests/traffic_check.py) skips
// connections whose initialize result carries it, so only the real daemon's replies are validated.
const FAKE_SERVER_NAME = "fake-tipsd";

class FakeConnection {
  constructor(daemon) {
    this.daemon = daemon;
    this.onMessage = null;
    this.onClose = null;
    this.closed = false;
    this.initialized = false;
    this.sent = []; // parsed messages the client sent
    this.held = null; // when an array, server→client messages are held here instead of delivered
  }
  // Client → server.
  send(text) {
    if (this.closed) throw new Error("closed");
    const message = JSON.parse(text);
    this.sent.push(message);
    this.daemon.log.push(message);
    queueMicrotask(() => this.daemon.handle(this, message));
  }
  close() {
    this.drop();
  }
  // Server → client.
  deliver(message) {
    if (this.closed) return;
    const text = JSON.stringify(message);
    if (this.held) this.held.push(text);
    else if (this.onMessage) this.onMessage(text);
  }
  /** Delivers held messages together, in one synchronous run (as one chunk from a socket would be). */
  release() {
    const held = this.held || [];
    this.held = null;
    for (const text of held) if (!this.closed && this.onMessage) this.onMessage(text);
  }
  drop(error) {
    if (this.closed) return;
    this.closed = true;
    this.daemon.connections.delete(this);
    for (const [key, sub] of this.daemon.subs) if (sub.conn === this) this.daemon.subs.delete(key);
    const onClose = this.onClose;
    if (onClose) setTimeout(() => onClose(error), 0);
  }
}

class FakeDaemon {
  constructor() {
    this.down = false; // when true, the factory rejects (daemon absent)
    this.tips = new Map(); // id → {id, shouldDisplay, status}
    this.connections = new Set();
    this.subs = new Map(); // subscription id → {conn, kind, ids?, seq}
    this.nextSub = 1;
    this.handlers = {}; // method → (params, conn) => result (throw {code, message} for an error)
    this.log = []; // every message any client sent
    this.connects = 0;
    this.factory = () => {
      if (this.down) return Promise.reject(Object.assign(new Error("connect ENOENT fake.sock"), { code: "ENOENT" }));
      this.connects++;
      const conn = new FakeConnection(this);
      this.connections.add(conn);
      return Promise.resolve(conn);
    };
  }

  methods(name) {
    return this.log.filter((m) => m.method === name);
  }

  tipState(id) {
    const t = this.tips.get(id) || { id, shouldDisplay: false, status: "pending" };
    return {
      id,
      shouldDisplay: t.shouldDisplay,
      status: t.status || (t.shouldDisplay ? "available" : "pending"),
      displayCount: 0,
      displayedDuration: 0,
      tip: { id, title: `Title of ${id}`, message: null, image: null, actions: [{ id: "learn-more", title: "Learn more", index: 0 }] },
    };
  }

  handle(conn, message) {
    if (conn.closed) return;
    if (message.id === undefined) return; // notification
    const reply = (body) => conn.deliver(Object.assign({ jsonrpc: "2.0", id: message.id }, body));
    try {
      const override = this.handlers[message.method];
      if (override) {
        const result = override(message.params, conn, message);
        if (result === FakeDaemon.NO_REPLY) return;
        reply({ result: result === undefined ? null : result });
        return;
      }
      reply({ result: this.builtin(conn, message.method, message.params || {}) });
    } catch (e) {
      reply({ error: { code: e.code || -32603, message: e.message || String(e), ...(e.data !== undefined ? { data: e.data } : {}) } });
    }
  }

  builtin(conn, method, params) {
    switch (method) {
      case "initialize":
        conn.initialized = true;
        return { protocolVersion: "1.0", serverInfo: { name: FAKE_SERVER_NAME, version: "0" }, capabilities: { methods: [], notifications: [], framings: ["newline"], virtualClock: false, maxMessageSize: 1048576 } };
      case "tips/register":
        for (const t of params.tips) if (!this.tips.has(t.id)) this.tips.set(t.id, { id: t.id, shouldDisplay: false });
        return { tips: params.tips.map((t) => this.tipState(t.id)) };
      case "tips/observe": {
        const subscription = `sub-${this.nextSub++}`;
        this.subs.set(subscription, { conn, kind: "tips", ids: params.ids, seq: 0 });
        const ids = params.ids || [...this.tips.keys()];
        return { subscription, tips: ids.filter((id) => this.tips.has(id)).map((id) => this.tipState(id)), groups: [] };
      }
      case "tips/unobserve":
      case "actions/unsubscribe":
        return { removed: this.subs.delete(params.subscription) };
      case "actions/subscribe": {
        const subscription = this.nextSub++; // numbers here, strings for observe: the client must handle both
        this.subs.set(subscription, { conn, kind: "actions", tipIds: params.tipIds, seq: 0 });
        return { subscription };
      }
      case "events/donate":
        return { count: 1, lifetime: 1 }; // the daemon's reply to an event's first donation
      case "tips/status":
        return { tips: (params.ids || [...this.tips.keys()]).map((id) => this.tipState(id)) };
      case "tips/configure":
      case "parameters/set":
      case "events/configure":
        return params;
      case "parameters/define":
        return { ids: params.parameters.map((p) => p.id) };
      case "tips/unregister":
        return { ids: params.ids.filter((id) => this.tips.delete(id)) };
      case "groups/register":
        return { id: params.id, currentTip: null };
      case "shutdown":
        return null;
      case "tips/performAction":
        this.performAction(params.id, params.actionId);
        return this.tipState(params.id);
      default:
        throw { code: -32601, message: `unknown method ${method}` };
    }
  }

  /** Changes a tip and notifies every matching tips subscription. */
  setShouldDisplay(id, shouldDisplay) {
    const t = this.tips.get(id) || { id };
    t.shouldDisplay = shouldDisplay;
    this.tips.set(id, t);
    for (const [subscription, sub] of this.subs) {
      if (sub.kind !== "tips" || (sub.ids && !sub.ids.includes(id))) continue;
      const s = this.tipState(id);
      sub.conn.deliver({ jsonrpc: "2.0", method: "tips/shouldDisplayChanged", params: { subscription, seq: ++sub.seq, id, shouldDisplay, status: s.status, tip: s.tip } });
    }
  }

  performAction(tipId, actionId) {
    for (const [subscription, sub] of this.subs) {
      if (sub.kind !== "actions" || (sub.tipIds && !sub.tipIds.includes(tipId))) continue;
      sub.conn.deliver({ jsonrpc: "2.0", method: "tips/actionPerformed", params: { subscription, seq: ++sub.seq, tipId, actions: [{ id: actionId, title: "Learn more", index: 0 }] } });
    }
  }

  /** Drops every connection, as a daemon crash would. */
  crash() {
    for (const conn of [...this.connections]) conn.drop(new Error("ECONNRESET"));
  }
}
FakeDaemon.NO_REPLY = Symbol("no reply");

/** A logger that records what it is given. */
function recordingLogger() {
  const logger = {
    warnings: [],
    errors: [],
    debugs: [],
    warn: (...a) => logger.warnings.push(a.map(String).join(" ")),
    error: (...a) => logger.errors.push(a.map(String).join(" ")),
    debug: (...a) => logger.debugs.push(a.map(String).join(" ")),
  };
  return logger;
}

/**
 * A change's params without the idempotency key the client adds (issue #34), after checking it is there: for tests
 * that compare params exactly.
 */
function withoutKey(params) {
  if (!params || typeof params.idempotencyKey !== "string" || params.idempotencyKey.length < 16) {
    throw new Error(`a change was sent without an idempotency key: ${JSON.stringify(params)}`);
  }
  const { idempotencyKey, ...rest } = params;
  return rest;
}

module.exports = { FAKE_SERVER_NAME, FakeDaemon, FakeConnection, recordingLogger, withoutKey };
