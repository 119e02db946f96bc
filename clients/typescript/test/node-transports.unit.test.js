"use strict";
// The Node transports (Unix socket, child process over stdio) against a minimal scripted peer
// (test-support/echo-daemon.js), independent of the real daemon.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");
const { spawn } = require("node:child_process");
const { connect, connectStdio, unixSocketTransport, stdioTransport } = require("../dist/node");
const { recordingLogger } = require("../test-support/fake");
const { ManualClock, until } = require("../test-support/timing");
const { canConnect } = require("../test-support/tipsd");

const ECHO = path.resolve(__dirname, "../test-support/echo-daemon.js");

async function echoServer(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-echo-"));
  const socketPath = path.join(dir, "echo.sock");
  const proc = spawn(process.execPath, [ECHO, "serve", "--socket", socketPath], { stdio: "ignore" });
  t.after(() => {
    proc.kill("SIGTERM");
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await until(() => fs.existsSync(socketPath) && canConnect(socketPath), { what: "echo socket listening" });
  return socketPath;
}

for (const framing of ["newline", "contentLength"]) {
  test(`unixSocketTransport, ${framing}: requests, UTF-8, notifications`, async (t) => {
    const socketPath = await echoServer(t);
    const client = await connect({ transport: unixSocketTransport(socketPath, { framing }), strict: true, logger: null });
    t.after(() => client.close());
    // An explicit key is sent as it is (the client adds one only when the call has none).
    const r = await client.request("events/donate", { id: "café", info: { emoji: "🔎" }, idempotencyKey: "k-café" });
    assert.deepEqual(r, {
      method: "events/donate",
      params: { id: "café", info: { emoji: "🔎" }, idempotencyKey: "k-café" },
      framing,
      unicode: "é🔎",
    });
    const got = [];
    client.onAction((e) => got.push(e));
    await until(() => client.connected);
    await client.request("push", undefined);
    // The push notification's subscription "x" is unknown to this client: dropped, not delivered.
    assert.deepEqual(got, []);
    const many = await Promise.all(Array.from({ length: 200 }, (_, i) => client.request("events/donate", { id: `e${i}` })));
    assert.deepEqual(many.map((m) => m.params.id), Array.from({ length: 200 }, (_, i) => `e${i}`));
  });
}

test("unixSocketTransport: the bytes on the wire use the chosen framing", async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-wire-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const framing of ["newline", "contentLength"]) {
    const socketPath = path.join(dir, `${framing}.sock`);
    let received = "";
    const server = net.createServer((s) => s.on("data", (d) => (received += d.toString("utf8")))).listen(socketPath);
    await new Promise((r) => server.once("listening", r));
    const transport = await unixSocketTransport(socketPath, { framing })();
    transport.send('{"jsonrpc":"2.0","id":1,"method":"initialize"}');
    const expected =
      framing === "newline"
        ? '{"jsonrpc":"2.0","id":1,"method":"initialize"}\n'
        : 'Content-Length: 46\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"initialize"}';
    await until(() => received.length >= expected.length); // a stream may deliver the bytes in several chunks
    assert.equal(received, expected);
    let closed = false;
    transport.onClose = () => (closed = true);
    transport.close();
    await until(() => closed);
    server.close();
  }
});

test("unixSocketTransport: connecting to a missing socket rejects; the lenient client is in no-op mode", async () => {
  const missing = path.join(os.tmpdir(), `tipsd-missing-${process.pid}.sock`);
  await assert.rejects(Promise.resolve(unixSocketTransport(missing)()), /ENOENT|ECONNREFUSED/);
  const logger = recordingLogger();
  const client = await connect({ transport: unixSocketTransport(missing), logger, reconnect: false });
  assert.equal(await client.donate("x"), undefined);
  assert.equal(logger.warnings.length, 1);
  assert.match(logger.warnings[0], /ENOENT/);
  await client.close();
});

for (const framing of ["newline", "contentLength"]) {
  test(`stdioTransport, ${framing}: spawns, talks, shutdown+exit → status 0`, async () => {
    let stderr = "";
    const client = await connectStdio({ command: ECHO, framing, stderr: (s) => (stderr += s), strict: true, logger: null, reconnect: false });
    const r = await client.request("tips/status", { ids: ["a"] });
    assert.equal(r.framing, framing);
    assert.deepEqual(r.params, { ids: ["a"] });
    await until(() => stderr.includes("stdio ready"));
    const closed = new Promise((resolve) => client.onConnectionChange((s) => s === "closed" && resolve()));
    await client.close({ shutdown: true });
    await closed;
  });
}

test("stdioTransport: a child that dies is reported, and replaced on reconnection", async () => {
  let spawned = 0;
  const factory = stdioTransport({ command: ECHO });
  const counting = () => {
    spawned++;
    return factory();
  };
  const logger = recordingLogger();
  const clock = new ManualClock();
  const client = await connect({ transport: counting, logger, reconnect: { initialDelayMs: 10, jitter: 0 }, timers: clock });
  assert.equal(await client.request("crash", undefined), undefined); // the child exits with status 3 mid-request
  assert.match(logger.warnings.join("\n"), /lost the connection to tipsd: tipsd exited with status 3/);
  assert.equal(client.state, "disconnected");
  assert.equal(clock.next(), 10, "the retry");
  await until(() => client.connected, { what: "a fresh child" });
  assert.equal(spawned, 2);
  assert.equal((await client.request("tips/status", {})).method, "tips/status");
  await client.close();
});

test("stdioTransport: a missing executable is a failed attempt, not a crash", async () => {
  await assert.rejects(Promise.resolve(stdioTransport({ command: "/nonexistent/tipsd" })()), /ENOENT/);
  const logger = recordingLogger();
  const client = await connectStdio({ command: "/nonexistent/tipsd", logger, reconnect: false });
  assert.equal(client.state, "disconnected");
  assert.equal(await client.donate("x"), undefined);
  await client.close();
});
