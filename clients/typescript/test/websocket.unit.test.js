"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { connect, webSocketTransport, WebSocketTransport } = require("../dist/index");
const { FakeDaemon, recordingLogger } = require("../test-support/fake");
const { ManualClock, until } = require("../test-support/timing");

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
    assert.deepEqual(await client.donate("e"), { count: 1 });
    assert.ok(sockets[0].sent.every((s) => !s.endsWith("\n")), "no framing on frames");
    daemon.crash();
    await until(() => client.state === "disconnected", { what: "the drop noticed" });
    assert.equal(clock.next(), 5, "the retry");
    await until(() => client.state === "connected" && sockets.length === 2, { what: "reconnect over a new WebSocket" });
    assert.deepEqual(await client.donate("e"), { count: 1 });
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
  assert.match(logger.warnings[0], /WebSocket closed before opening: ECONNREFUSED/);
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
