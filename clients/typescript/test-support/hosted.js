"use strict";
// A hosted tipsd (`tipsd serve --hosted`) for integration tests: test-support/hosted_node.py starts a private
// PostgreSQL and one node with protocol/tests/hosted.py's fixtures and mints tokens with PyJWT on request — the
// tokens are never made by tipsd's own code, nor by this client.
const path = require("node:path");
const readline = require("node:readline");
const { spawn, spawnSync } = require("node:child_process");
const { TEST_TIMEOUT_MS } = require("./timing");
const { daemonTest, TIPSD } = require("./tipsd");

const PYTHON = process.env.PYTHON || "python3";
const SCRIPT = path.join(__dirname, "hosted_node.py");

let availability;
/** Undefined when python3 has PyJWT and cryptography and PostgreSQL's server programs exist; else why not. */
function hostedUnavailable() {
  if (availability !== undefined) return availability || undefined;
  const probe = spawnSync(
    PYTHON,
    ["-c", "import sys; sys.path.insert(0, sys.argv[1]); import jwt, cryptography, pgcluster; sys.exit(0 if pgcluster.find_bin() else 3)", path.resolve(__dirname, "../../../protocol/tests")],
    { encoding: "utf8", timeout: TEST_TIMEOUT_MS },
  );
  availability =
    probe.status === 0
      ? ""
      : probe.status === 3
        ? "PostgreSQL's server programs were not found (Debian: apt install postgresql)"
        : `${PYTHON} cannot import PyJWT and cryptography (pip install 'pyjwt[crypto]'): ${(probe.stderr || "").trim().split("\n").pop()}`;
  return availability || undefined;
}

/** node:test options for a hosted test: skipped (with the reason) when unusable, unless TIPSD_REQUIRE=1. */
function hostedTest(extra = {}) {
  const options = daemonTest(extra);
  if (options.skip) return options;
  const reason = hostedUnavailable();
  if (reason && process.env.TIPSD_REQUIRE !== "1") return { ...extra, skip: reason };
  return options;
}

/**
 * Starts PostgreSQL and a hosted node (extra `tipsd serve` arguments in `args`). Resolves to
 * `{socket, port, url, admin, token(sub, lifetime?), sql(query), restart(), log(), close()}`: `token` mints a JWT for the
 * account `sub`, valid `lifetime` seconds (default 3600).
 */
async function startHosted(args = []) {
  const child = spawn(PYTHON, [SCRIPT, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, TIPSD_BIN: TIPSD },
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const lines = readline.createInterface({ input: child.stdout });
  const waiting = new Map();
  let ready;
  const first = new Promise((resolve, reject) => {
    ready = { resolve, reject };
  });
  lines.on("line", (line) => {
    const message = JSON.parse(line);
    if (ready) {
      const r = ready;
      ready = undefined;
      r.resolve(message);
      return;
    }
    const pending = waiting.get(message.id);
    waiting.delete(message.id);
    if (!pending) return;
    if (message.error) pending.reject(new Error(`hosted_node.py: ${message.error}`));
    else pending.resolve(message);
  });
  exited.then(({ code, signal }) => {
    const error = new Error(`hosted_node.py exited (${signal || code}):\n${stderr}`);
    if (ready) ready.reject(error);
    for (const pending of waiting.values()) pending.reject(error);
    waiting.clear();
  });
  let timer;
  const info = await Promise.race([
    first,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the hosted node did not start within ${TEST_TIMEOUT_MS * 4} ms:\n${stderr}`)), TEST_TIMEOUT_MS * 4);
    }),
  ]).finally(() => clearTimeout(timer));

  let nextId = 1;
  const ask = (request) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      child.stdin.write(JSON.stringify({ id, ...request }) + "\n");
    });
  return {
    ...info,
    token: async (sub, lifetime = 3600) => (await ask({ token: sub, lifetime })).token,
    sql: async (query) => (await ask({ sql: query })).rows,
    /** kill -9 the node and start it again on the same port; resolves once it is healthy. */
    restart: async () => (await ask({ restart: true })).port,
    log: () => stderr,
    async close() {
      child.stdin.end();
      const killer = setTimeout(() => child.kill("SIGTERM"), TEST_TIMEOUT_MS);
      await exited;
      clearTimeout(killer);
    },
  };
}

module.exports = { hostedTest, startHosted };
