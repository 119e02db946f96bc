"use strict";
// Starting and stopping the real tipsd for integration tests.
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const net = require("node:net");
const { spawn, spawnSync } = require("node:child_process");
const { TEST_TIMEOUT_MS } = require("./timing");

const TIPSD = process.env.TIPSD_BIN || path.resolve(__dirname, "../../../.build/debug/tipsd");

let availability;
/**
 * Undefined when the daemon binary exists and answers `initialize` over stdio; otherwise the reason it cannot
 * be used. With TIPSD_REQUIRE=1 (set by clients/run-tests-typescript.sh) integration tests fail instead of
 * skipping.
 */
function unavailable() {
  if (availability !== undefined) return availability || undefined;
  if (!fs.existsSync(TIPSD)) {
    availability = `tipsd binary not found at ${TIPSD}`;
  } else {
    const r = spawnSync(TIPSD, ["serve", "--stdio", "--datastore", ":memory:"], {
      input: '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1.0","clientInfo":{"name":"probe"}}}\n',
      timeout: TEST_TIMEOUT_MS,
      encoding: "utf8",
    });
    availability = /"serverInfo"/.test(r.stdout || "") ? "" : `tipsd at ${TIPSD} does not answer initialize yet (stdout: ${JSON.stringify((r.stdout || "").slice(0, 120))})`;
  }
  return availability || undefined;
}

/** Options for node:test's `test()`: skip (with the reason) when the daemon is unusable, unless required. */
function daemonTest(extra = {}) {
  const reason = unavailable();
  if (reason && process.env.TIPSD_REQUIRE !== "1") return { ...extra, skip: reason };
  return extra;
}

/** True when a connection to the Unix socket is accepted (it is closed at once). */
function canConnect(socketPath) {
  return new Promise((resolve) => {
    const socket = net.createConnection({ path: socketPath });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

function tempDir() {
  // Unix socket paths are limited to ~108 bytes: keep the directory short.
  return fs.mkdtempSync(path.join(os.tmpdir(), "tipsd-ts-"));
}

/**
 * Starts `tipsd serve --socket` and resolves once it accepts connections (giving up after TEST_TIMEOUT_MS).
 * Options: dir (default: a new temp dir, removed by cleanup()), socketPath, datastore (default ":memory:"),
 * clock ("virtual" by default; null for the system clock), allowTesting (default true: passes --allow-testing so
 * testing/*, datastore/reset and clock/* are answered), args (extra).
 */
async function startDaemon(options = {}) {
  const dir = options.dir || tempDir();
  const socketPath = options.socketPath || path.join(dir, "tipsd.sock");
  const args = ["serve", "--socket", socketPath, "--datastore", options.datastore || ":memory:"];
  const clock = options.clock === undefined ? "virtual" : options.clock;
  if (clock) args.push("--clock", clock);
  if (options.allowTesting !== false) args.push("--allow-testing");
  if (options.args) args.push(...options.args);
  const proc = spawn(TIPSD, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (d) => {
    stderr += d;
    if (process.env.TIPSD_LOGS === "1") process.stderr.write(d);
  });
  let exited = null;
  const exit = new Promise((resolve) => proc.on("exit", (code, signal) => resolve((exited = { code, signal }))));
  const deadline = Date.now() + TEST_TIMEOUT_MS;
  while (!fs.existsSync(socketPath)) {
    if (exited) throw new Error(`tipsd exited (${JSON.stringify(exited)}) before creating ${socketPath}:\n${stderr}`);
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`tipsd did not create ${socketPath} within ${TEST_TIMEOUT_MS} ms (TIPSD_TEST_TIMEOUT):\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  // The file appears at bind(), before listen(): until then a connection is refused. Wait for one to succeed.
  while (!(await canConnect(socketPath))) {
    if (exited) throw new Error(`tipsd exited (${JSON.stringify(exited)}) before listening on ${socketPath}:\n${stderr}`);
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`tipsd did not accept connections on ${socketPath} within ${TEST_TIMEOUT_MS} ms (TIPSD_TEST_TIMEOUT):\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  const daemon = {
    dir,
    socketPath,
    proc,
    get stderr() {
      return stderr;
    },
    get exited() {
      return exited;
    },
    exit,
    /** Resolves once the daemon's log matches `pattern` (its lines arrive asynchronously: never assert on
     * `stderr` right after an action); rejects after TEST_TIMEOUT_MS with the log so far. */
    async waitForLog(pattern) {
      const until = Date.now() + TEST_TIMEOUT_MS;
      while (!pattern.test(stderr)) {
        if (Date.now() > until) throw new Error(`the daemon's log never matched ${pattern}:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    /** Stops the daemon (SIGTERM by default) and waits for it to exit (SIGKILL after TEST_TIMEOUT_MS: a hang guard). */
    async stop(signal = "SIGTERM") {
      if (!exited) {
        proc.kill(signal);
        const timer = setTimeout(() => proc.kill("SIGKILL"), TEST_TIMEOUT_MS);
        await exit;
        clearTimeout(timer);
      }
      return exited;
    },
    /** Stops the daemon and removes the temp dir (unless the dir was given). */
    async cleanup() {
      await daemon.stop();
      if (!options.dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return daemon;
}

/** The seed 000 FilterTip. */
const FILTER_TIP = {
  id: "filter.tip",
  title: "You can narrow this down",
  message: "When you have too many results, the filter at the top can cut them quickly.",
  image: "line.3.horizontal.decrease.circle",
  actions: [{ id: "learn-more", title: "Learn more" }],
  rules: [
    { event: "search.opened", count: { gte: 3 } },
    { event: "filter.used", count: { eq: 0 } },
    { event: "search.opened", within: { days: 1 }, count: { gte: 1 } },
  ],
};

/** Wraps a transport factory so a test can hold incoming messages (as if the client had not read them yet). */
function holdingTransport(factory) {
  const control = {
    holding: false,
    held: [],
    current: null,
    hold() {
      control.holding = true;
    },
    /** Delivers everything held, synchronously, then stops holding. */
    release() {
      control.holding = false;
      const held = control.held.splice(0);
      for (const m of held) if (control.current && control.current.deliver) control.current.deliver(m);
    },
    factory: async () => {
      const inner = await factory();
      const outer = {
        onMessage: null,
        onClose: null,
        send: (m) => inner.send(m),
        close: () => inner.close(),
        deliver: (m) => outer.onMessage && outer.onMessage(m),
      };
      inner.onMessage = (m) => {
        if (control.holding) control.held.push(m);
        else outer.deliver(m);
      };
      inner.onClose = (e) => outer.onClose && outer.onClose(e);
      control.current = outer;
      return outer;
    },
  };
  return control;
}

module.exports = { TIPSD, unavailable, daemonTest, startDaemon, canConnect, tempDir, FILTER_TIP, holdingTransport };
