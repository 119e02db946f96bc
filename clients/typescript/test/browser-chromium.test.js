"use strict";
// A real browser loads dist-browser/index.js with <script type="module"> (no bundler) and connects with its own
// WebSocket — token as subprotocol — to test-support/ws-server.js in front of the fake daemon; a wrong token leaves
// the page's client in no-op mode; with the browser's localStorage as its storage (issue #37), a client started
// with no daemon draws the tip observed before and keeps the change made offline. Needs TIPSD_CHROMIUM (a Chromium
// binary), which clients/run-tests-typescript.sh (and so `make test`) sets whenever a Chromium is installed; skipped
// without it.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const http = require("node:http");
const os = require("node:os");
const path = require("node:path");
const { spawn } = require("node:child_process");
const { FakeDaemon } = require("../test-support/fake");
const { TEST_TIMEOUT_MS } = require("../test-support/timing");
const { startWebSocketServer } = require("../test-support/ws-server");

const CHROMIUM = process.env.TIPSD_CHROMIUM;
const root = path.resolve(__dirname, "..");
const TOKEN = "0123456789abcdef".repeat(4);

test("Chromium: <script type=module> imports dist-browser/index.js and talks to tipsd over WebSocket", { skip: !CHROMIUM && "set TIPSD_CHROMIUM to a Chromium binary to run" }, async (t) => {
  const daemon = new FakeDaemon();
  daemon.tips.set("filter.tip", { id: "filter.tip", shouldDisplay: true });
  const ws = await startWebSocketServer({ token: TOKEN, backend: daemon.factory });
  t.after(() => ws.close());
  let report;
  const reported = new Promise((resolve) => (report = resolve));
  const page = `<!doctype html><script type="module">
import { connectWebSocket, createClient, tipVisibilityStore, webSocketTransport } from "/dist-browser/index.js";
const log = [];
const logger = { warn: (m) => log.push(m) };
const result = {};
try {
  const tips = await connectWebSocket(${JSON.stringify(ws.url)}, { token: ${JSON.stringify(TOKEN)}, logger });
  result.state = tips.state;
  result.donate = await tips.donate("search.opened");
  const wrong = await connectWebSocket(${JSON.stringify(ws.url)}, { token: "f".repeat(64), logger, reconnect: false });
  result.wrong = wrong.state;
  await tips.close();
  await wrong.close();
  // Issue #37: offline first with the browser's own localStorage, passed as it is.
  localStorage.clear();
  const quiet = { warn: () => {} };
  const online = await connectWebSocket(${JSON.stringify(ws.url)}, { token: ${JSON.stringify(TOKEN)}, logger: quiet, storage: localStorage });
  await new Promise((resolve) => online.observe("filter.tip", (change) => change.shouldDisplay && resolve()));
  await online.close();
  result.storedKeys = Object.keys(localStorage).sort();
  const offline = createClient({ transport: webSocketTransport("ws://127.0.0.1:9/", { token: ${JSON.stringify(TOKEN)} }), storage: localStorage, logger: quiet, reconnect: false });
  result.offline = { snapshot: tipVisibilityStore(offline, "filter.tip").getSnapshot(), stale: offline.stale, title: offline.storedTip("filter.tip").tip.title };
  result.offline.donated = (await offline.donate("search.opened")) === undefined ? "undefined: stored" : "answered";
  result.offline.queued = offline.queuedChanges;
  result.offline.outbox = JSON.parse(localStorage.getItem("tipsd:outbox")).changes.map((c) => c.method);
  await offline.close();
} catch (e) {
  result.thrown = String(e);
}
result.log = log;
await fetch("/result", { method: "POST", body: JSON.stringify(result) });
</script>`;
  const server = http.createServer((req, res) => {
    if (req.url === "/") {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(page);
    } else if (req.url === "/result" && req.method === "POST") {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        res.end("ok");
        report(JSON.parse(body));
      });
    } else if (/^\/dist-browser\/[a-z0-9-]+\.js(\.map)?$/.test(req.url) && fs.existsSync(path.join(root, req.url))) {
      res.writeHead(200, { "content-type": "text/javascript" });
      res.end(fs.readFileSync(path.join(root, req.url)));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-chromium-"));
  const chrome = spawn(CHROMIUM, ["--headless=new", "--no-sandbox", "--disable-gpu", `--user-data-dir=${profile}`, `http://127.0.0.1:${server.address().port}/`], { stdio: "ignore" });
  const exited = new Promise((resolve) => chrome.once("exit", resolve));
  t.after(async () => {
    chrome.kill();
    await exited;
    try {
      fs.rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
    } catch {
      /* Chromium's helpers may still be writing to it; it is only a temporary directory */
    }
  });
  let timer;
  const result = await Promise.race([
    reported,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no report from Chromium within ${TEST_TIMEOUT_MS} ms`)), TEST_TIMEOUT_MS))),
  ]).finally(() => clearTimeout(timer));
  assert.equal(result.thrown, undefined);
  assert.equal(result.state, "connected");
  assert.deepEqual(result.donate, { count: 1, lifetime: 1 });
  assert.equal(result.wrong, "disconnected");
  assert.equal(result.log.length, 1);
  assert.match(result.log[0], /cannot reach tipsd: WebSocket failed to open/);
  assert.ok(!result.log[0].includes("f".repeat(64)));
  assert.deepEqual(ws.handshakes.map((h) => h.protocols).slice(0, 2), [["tipsd.v1", `tipsd.token.${TOKEN}`], ["tipsd.v1", `tipsd.token.${"f".repeat(64)}`]]);
  assert.equal(ws.handshakes[0].authorization, undefined, "a browser cannot send the header");
  // Offline first: the state observed online was kept in localStorage and drawn with no connection; the change made
  // offline waits there.
  assert.deepEqual(result.storedKeys, ["tipsd:tips"]);
  assert.deepEqual(result.offline, { snapshot: true, stale: true, title: "Title of filter.tip", donated: "undefined: stored", queued: 1, outbox: ["events/donate"] });
});
