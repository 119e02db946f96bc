"use strict";
// The traffic tap (issue #5): the core's injectable hook and the Node file tap behind TIPSD_TRAFFIC_LOG, against
// the scripted echo peer (test-support/echo-daemon.js), so nothing here reaches the run's own traffic log.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { connectStdio, fileTrafficTap, getTrafficTap, setTrafficTap, StreamTransport } = require("../dist/node");
const { withoutKey } = require("../test-support/fake");

const ECHO = path.resolve(__dirname, "../test-support/echo-daemon.js");

test("a tap given in the options sees every message of its connection, both ways, with the peer", async () => {
  const seen = [];
  const peers = [];
  const trafficTap = {
    open(peer) {
      peers.push(peer);
      return (dir, message) => seen.push([dir, JSON.parse(message).method || JSON.parse(message).result.method || "initialize"]);
    },
  };
  const client = await connectStdio({ command: ECHO, framing: "contentLength", trafficTap, strict: true, logger: null, reconnect: false });
  await client.request("events/donate", { id: "x" });
  await client.close();
  assert.deepEqual(peers, [{ kind: "stdio", command: [ECHO, "serve", "--stdio"], framing: "contentLength" }]);
  assert.deepEqual(seen, [
    ["out", "initialize"],
    ["in", "initialize"],
    ["out", "events/donate"],
    ["in", "events/donate"],
  ]);
});

test("a tap that throws never disturbs the connection; trafficTap: null turns the default off", () => {
  const written = [];
  const sink = { write: (b) => written.push(b), end() {} };
  const throwing = new StreamTransport(sink, { trafficTap: { open: () => () => { throw new Error("tap broke"); } } });
  throwing.send('{"jsonrpc":"2.0","method":"x"}');
  assert.equal(written.length, 1);
  // Loading @tipsd/client/node installed the environment-driven file tap as the default.
  const previous = getTrafficTap();
  assert.ok(previous);
  let opened = 0;
  setTrafficTap({ open: () => void opened++ });
  try {
    new StreamTransport(sink, { trafficTap: null }).send('{"jsonrpc":"2.0","method":"x"}');
    assert.equal(opened, 0);
    new StreamTransport(sink).send('{"jsonrpc":"2.0","method":"x"}');
    assert.equal(opened, 1);
  } finally {
    setTrafficTap(previous);
  }
});

test("fileTrafficTap appends one JSON line per message in the Python client's format", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-tap-"));
  try {
    const log = path.join(dir, "traffic.jsonl");
    const trafficTap = fileTrafficTap(log);
    const a = await connectStdio({ command: ECHO, trafficTap, strict: true, logger: null, reconnect: false });
    const b = await connectStdio({ command: ECHO, trafficTap, strict: true, logger: null, reconnect: false });
    await a.request("events/donate", { id: "café" });
    await b.request("tips/status", {});
    await Promise.all([a.close(), b.close()]);
    const lines = fs.readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(new Set(lines.map((l) => l.conn)).size, 2);
    for (const l of lines) {
      assert.match(l.conn, new RegExp(`^${process.pid}-\\d+$`));
      assert.equal(l.peer.kind, "stdio");
      assert.ok(l.dir === "out" || l.dir === "in");
      assert.equal(typeof l.t, "number");
      assert.equal(l.test, process.argv[1]);
      assert.equal(typeof l.msg, "object");
    }
    const reply = lines.find((l) => l.dir === "in" && l.msg.result && l.msg.result.method === "events/donate");
    assert.deepEqual(withoutKey(reply.msg.result.params), { id: "café" });
    // The echo peer marks itself as a fake (serverInfo "fake-tipsd"): the traffic check skips it.
    const init = lines.find((l) => l.dir === "in" && l.msg.result && l.msg.result.serverInfo);
    assert.equal(init.msg.result.serverInfo.name, "fake-tipsd");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
