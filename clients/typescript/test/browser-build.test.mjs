// The browser build (issue #11): `tsc -p tsconfig.browser.json` compiles the core (src/index.ts and what it imports)
// to ES2020 modules in dist-browser/, which a page loads with <script type="module"> and no bundler. This test
// walks the import graph from dist-browser/index.js, checks that every import is a relative `.js` file that
// exists and that nothing Node-only is in it, then imports the build as ESM and drives `connectWebSocket`.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);
const { FakeDaemon } = require("../test-support/fake.js");

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(here, "../dist-browser");
const entry = path.join(dist, "index.js");
const TOKEN = "0123456789abcdef".repeat(4);

function specifiers(source) {
  const found = [];
  const re = /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)/gm;
  for (let m; (m = re.exec(source)); ) found.push(m[1] ?? m[2] ?? m[3]);
  return found;
}

test("dist-browser: ES modules whose imports are relative .js files, with nothing Node-only", () => {
  assert.ok(fs.existsSync(entry), `no ${entry}: build it with \`tsc -p clients/typescript/tsconfig.browser.json\` (clients/run-tests-typescript.sh does)`);
  assert.equal(JSON.parse(fs.readFileSync(path.join(dist, "package.json"), "utf8")).type, "module", "dist-browser/package.json marks the files as ES modules for Node");
  const seen = new Set();
  const queue = [entry];
  while (queue.length) {
    const file = queue.shift();
    if (seen.has(file)) continue;
    seen.add(file);
    const source = fs.readFileSync(file, "utf8");
    const rel = path.relative(dist, file);
    assert.doesNotMatch(source, /\brequire\s*\(/, `${rel} calls require()`);
    assert.doesNotMatch(source, /\bmodule\.exports\b|\bexports\.[A-Za-z_$]|Object\.defineProperty\(exports/, `${rel} is CommonJS`);
    assert.doesNotMatch(source, /["'](?:node:[a-z_/]+|net|fs|child_process|os|path|tls|http)["']/, `${rel} names a Node module`);
    assert.doesNotMatch(source, /\bprocess\.(?:env|argv|pid|platform)\b/, `${rel} reads process`);
    for (const spec of specifiers(source)) {
      assert.match(spec, /^\.\.?\/.*\.js$/, `${rel} imports "${spec}": browsers resolve only relative URLs with their extension`);
      const target = path.resolve(path.dirname(file), spec);
      assert.ok(fs.existsSync(target), `${rel} imports "${spec}", which was not emitted`);
      queue.push(target);
    }
  }
  const names = [...seen].map((f) => path.relative(dist, f)).sort();
  assert.ok(!names.includes("node.js"), "node.js is not reachable from index.js");
  assert.ok(names.includes("websocket.js") && names.includes("client.js"), names.join(", "));
  assert.ok(!fs.existsSync(path.join(dist, "node.js")), "node.ts is not compiled into the browser build");
});

test("dist-browser/index.js imports as ESM and exports connectWebSocket (and not the Node transports)", async () => {
  const m = await import(pathToFileURL(entry).href);
  for (const name of ["connectWebSocket", "webSocketTransport", "WebSocketTransport", "tipsdSubprotocols", "createClient", "connect", "TipsClient", "tipVisibilityStore", "FrameDecoder", "setTrafficTap"]) {
    assert.equal(typeof m[name], "function", name);
  }
  for (const name of ["connectUnix", "connectStdio", "unixSocketTransport", "stdioTransport", "fileTrafficTap"]) assert.equal(m[name], undefined, name);
  assert.deepEqual(m.tipsdSubprotocols(TOKEN), ["tipsd.v1", `tipsd.token.${TOKEN}`]);
});

test("dist-browser: connectWebSocket works through a global WebSocket class", async (t) => {
  const { connectWebSocket } = await import(pathToFileURL(entry).href);
  const daemon = new FakeDaemon();
  const made = [];
  class PageWebSocket {
    constructor(...args) {
      made.push(args);
      this.readyState = 0;
      setTimeout(async () => {
        this.conn = await daemon.factory();
        this.conn.onMessage = (data) => this.onmessage && this.onmessage({ data });
        this.conn.onClose = () => this.onclose && this.onclose({ code: 1006, reason: "" });
        this.readyState = 1;
        this.onopen && this.onopen({});
      }, 0);
    }
    send(data) {
      this.conn.send(data);
    }
    close() {
      this.readyState = 3;
      if (this.conn) this.conn.drop();
    }
  }
  const original = Object.getOwnPropertyDescriptor(globalThis, "WebSocket");
  Object.defineProperty(globalThis, "WebSocket", { value: PageWebSocket, configurable: true, writable: true });
  t.after(() => {
    delete globalThis.WebSocket;
    if (original) Object.defineProperty(globalThis, "WebSocket", original);
  });
  const tips = await connectWebSocket("ws://127.0.0.1:8787/", { token: TOKEN, strict: true, logger: null });
  assert.deepEqual(made, [["ws://127.0.0.1:8787/", ["tipsd.v1", `tipsd.token.${TOKEN}`]]]);
  assert.deepEqual(await tips.donate("search.opened"), { count: 1, lifetime: 1 });
  await tips.close();
});

test("dist-browser: loads in a fresh ESM context without a WebSocket; the client is a no-op with one warning", () => {
  const script = `
    delete globalThis.WebSocket;
    const { connectWebSocket } = await import(${JSON.stringify(pathToFileURL(entry).href)});
    const warnings = [];
    const tips = await connectWebSocket("ws://127.0.0.1:9/", { token: "${TOKEN}", reconnect: false, logger: { warn: (m) => warnings.push(m) } });
    console.log(JSON.stringify({ state: tips.state, donate: (await tips.donate("e")) ?? null, warnings }));
    await tips.close();
  `;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.state, "disconnected");
  assert.equal(out.donate, null);
  assert.equal(out.warnings.length, 1);
  assert.match(out.warnings[0], /no global WebSocket/);
  assert.ok(!out.warnings[0].includes(TOKEN));
});
