"use strict";
// The client against a REAL hosted tipsd (`tipsd serve --hosted`, issue #23) and a real PostgreSQL, both started by
// test-support/hosted_node.py, with tokens minted by PyJWT: signing in over the WebSocket (Authorization: Bearer, the
// access_token query parameter, the admin token's subprotocol) and over the Unix socket (initialize's auth); a token
// refreshed before it expires without losing the observe subscription; the daemon ending an expired session and
// the client signing in again; an admin acting on a named account and the accounts/* wrappers.
// The node runs with --jwt-leeway 0, so a token is refused from its `exp` on. Every wait is for a condition
// (test-support/timing.js); the tests that need a token to expire use tokens valid for a few seconds — 10 s where the
// client must refresh first, whose refresh margin (a tenth of the lifetime) leaves it a second to do so.
const test = require("node:test");
const assert = require("node:assert/strict");
const { connectUnix, connectWebSocket } = require("../dist/node");
const { recordingLogger } = require("../test-support/fake");
const { until } = require("../test-support/timing");
const { hostedTest, startHosted } = require("../test-support/hosted");

const NativeWebSocket = globalThis.WebSocket;
const needsWebSocket = typeof NativeWebSocket !== "function" ? { skip: "no global WebSocket in this Node (Node 20: --experimental-websocket)" } : {};

let started;
/** The hosted node, started by the first test that needs it. */
function hosted() {
  if (!started) started = startHosted(["--jwt-leeway", "0"]);
  return started;
}
test.after(async () => {
  if (started) await (await started).close();
});

/** A provider minting a token for `account`: `lifetimes[reason]` seconds (default 3600); records what it is asked. */
function provider(h, account, lifetimes = {}) {
  const asked = [];
  const ask = async ({ reason }) => {
    asked.push(reason);
    return h.token(account, lifetimes[reason] ?? 3600);
  };
  return Object.assign(ask, { asked });
}

/** Observes filter.tip; resolves `seen`, the shouldDisplay values delivered, once the first one arrived. */
async function observeFilterTip(client) {
  const seen = [];
  client.observe("filter.tip", (change) => seen.push(change.shouldDisplay));
  await until(() => seen.length === 1, { what: "filter.tip's initial state" });
  return seen;
}

// ─── Signing in ───────────────────────────────────────────────────────────────────────────────────────────────

test("WebSocket: a JWT signs in as Authorization: Bearer (Node) and as the access_token query parameter (browsers, React Native)", hostedTest(needsWebSocket), async (t) => {
  const h = await hosted();
  // Node's default: the header (a dropped header would leave the session signed out: no auth in initialize).
  const viaHeader = await connectWebSocket(h.url, { token: () => h.token("ts-header"), strict: true, logger: null });
  t.after(() => viaHeader.close());
  assert.equal(viaHeader.auth.account, "ts-header");
  assert.equal(viaHeader.auth.admin, false);
  assert.ok(viaHeader.auth.expiresAt > Date.now() / 1000 + 3000);
  assert.deepEqual(await viaHeader.donate("search.opened"), { count: 1, lifetime: 1 });

  // What a browser or React Native sends: the token in the URL.
  const urls = [];
  function Recording(url, protocols) {
    urls.push(url);
    return new NativeWebSocket(url, protocols);
  }
  const viaQuery = await connectWebSocket(h.url, { token: () => h.token("ts-query"), authorizationHeader: false, WebSocket: Recording, strict: true, logger: null });
  t.after(() => viaQuery.close());
  assert.equal(urls.length, 1);
  assert.match(urls[0], /^ws:\/\/127\.0\.0\.1:\d+\/\?access_token=eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.ok(urls[0].length > 300, "a JWT is far longer than the 115 characters a subprotocol may carry");
  assert.equal(viaQuery.auth.account, "ts-query");
  assert.deepEqual(await viaQuery.donate("search.opened"), { count: 1, lifetime: 1 }, "its own account: not ts-header's donation");

  // In initialize instead (nothing in the URL).
  const viaInitialize = await connectWebSocket(h.url, { token: () => h.token("ts-query"), signIn: "initialize", strict: true, logger: null });
  t.after(() => viaInitialize.close());
  assert.equal(viaInitialize.auth.account, "ts-query");
  assert.deepEqual(await viaInitialize.donate("search.opened"), { count: 2, lifetime: 2 }, "the same account as viaQuery");

  // The admin token is as long as tipsd's own: offered as the subprotocol, as for a single-user daemon.
  const admin = await connectWebSocket(h.url, { token: h.admin, strict: true, logger: null });
  t.after(() => admin.close());
  assert.deepEqual(admin.auth, { account: null, admin: true, expiresAt: null });
});

test("Unix socket: initialize's auth signs in; a refused token is EUNAUTHORIZED with the daemon's reason", hostedTest(), async (t) => {
  const h = await hosted();
  const client = await connectUnix(h.socket, { token: () => h.token("ts-unix"), strict: true, logger: null });
  t.after(() => client.close());
  assert.equal(client.auth.account, "ts-unix");
  assert.deepEqual(await client.donate("search.opened"), { count: 1, lifetime: 1 });

  const expired = await h.token("ts-unix", -60);
  await assert.rejects(connectUnix(h.socket, { token: expired, strict: true, logger: null }), (error) => {
    assert.equal(error.code, "EUNAUTHORIZED");
    assert.equal(error.cause.code, -32013);
    assert.equal(error.cause.data.reason, "expired");
    assert.ok(!error.message.includes(expired));
    return true;
  });
});

// ─── Expiry ───────────────────────────────────────────────────────────────────────────────────────────────────

test("a token about to expire is refreshed on the live connection; the observe subscription outlives the first token", hostedTest(needsWebSocket), async (t) => {
  const h = await hosted();
  const token = provider(h, "ts-refresh", { connect: 10 });
  const client = await connectWebSocket(h.url, { token, strict: true, logger: null });
  t.after(() => client.close());
  const states = [];
  client.onConnectionChange((state) => states.push(state));
  const first = client.auth.expiresAt;
  assert.ok(first <= Date.now() / 1000 + 10);
  const seen = await observeFilterTip(client);

  await until(() => client.auth.expiresAt > first, { what: "the refresh" });
  assert.deepEqual(token.asked, ["connect", "refresh"]);
  assert.ok(client.auth.expiresAt > Date.now() / 1000 + 3000, "the refreshed token's expiry");
  // Past the first token's expiry (the daemon looks every second): a session that was not refreshed is gone by now.
  await until(() => Date.now() > (first + 2) * 1000, { what: "the first token's expiry to pass" });
  for (let i = 0; i < 3; i++) await client.donate("search.opened");
  await until(() => seen.includes(true), { what: "the notification after the refresh" });
  assert.deepEqual(seen, [false, true]);
  assert.deepEqual(states, [], "one connection throughout");
  assert.deepEqual(token.asked, ["connect", "refresh"]);
});

test("the daemon ending an expired session makes the client sign in again with a fresh token and observe again", hostedTest(), async (t) => {
  const h = await hosted();
  const token = provider(h, "ts-expiry", { connect: 2 });
  const logger = recordingLogger();
  const client = await connectUnix(h.socket, { token, autoRefresh: false, logger });
  t.after(() => client.close());
  assert.equal(client.auth.account, "ts-expiry");
  const seen = await observeFilterTip(client);

  await until(() => token.asked.length === 2 && client.connected, { what: "the expiry and a new sign-in" });
  assert.deepEqual(token.asked, ["connect", "reconnect"]);
  assert.equal(client.lastError.code, "EUNAUTHORIZED");
  assert.equal(client.lastError.cause.data.reason, "expired");
  assert.match(logger.warnings.join("\n"), /tipsd ended the session \(expired\): .*; signing in again/);
  assert.ok(client.auth.expiresAt > Date.now() / 1000 + 3000);
  for (let i = 0; i < 3; i++) assert.ok(await client.donate("search.opened"));
  await until(() => seen.includes(true), { what: "the notification on the new session" });
});

test("a refresh the daemon refuses (another account's token) makes the client reconnect with a good one", hostedTest(), async (t) => {
  const h = await hosted();
  const asked = [];
  const token = async ({ reason }) => {
    asked.push(reason);
    return reason === "refresh" ? h.token("ts-someone-else") : h.token("ts-refused", reason === "connect" ? 10 : 3600);
  };
  const logger = recordingLogger();
  const client = await connectUnix(h.socket, { token, logger });
  t.after(() => client.close());
  const seen = await observeFilterTip(client);
  await until(() => asked.length === 3 && client.connected, { what: "the refused refresh and the reconnection" });
  assert.deepEqual(asked, ["connect", "refresh", "reconnect"]);
  assert.match(logger.warnings.join("\n"), /could not refresh the session's token \(auth\/refresh: .*\(-32013\)\); reconnecting/);
  assert.equal(client.auth.account, "ts-refused");
  for (let i = 0; i < 3; i++) assert.ok(await client.donate("search.opened"));
  await until(() => seen.includes(true), { what: "the notification on the new session" });
});

// ─── Admin ────────────────────────────────────────────────────────────────────────────────────────────────────

test("admin: forAccount acts on a user's account (calls and observations); accounts/list, export, import, delete", hostedTest(), async (t) => {
  const h = await hosted();
  const user = await connectUnix(h.socket, { token: () => h.token("ts-grace"), strict: true, logger: null });
  t.after(() => user.close());
  const seen = await observeFilterTip(user);
  await user.donate("search.opened");
  await user.donate("search.opened");

  const admin = await connectUnix(h.socket, { token: h.admin, strict: true, logger: null });
  t.after(() => admin.close());
  assert.deepEqual(admin.auth, { account: null, admin: true, expiresAt: null });
  const grace = admin.forAccount("ts-grace");
  assert.deepEqual(await grace.status(["filter.tip"]), await user.status(["filter.tip"]));
  const adminSeen = await observeFilterTip(grace);
  await grace.donate("search.opened"); // the third: filter.tip becomes displayable for ts-grace
  await until(() => seen.includes(true) && adminSeen.includes(true), { what: "both observers told" });
  await grace.donate("filter.used"); // filter.tip's goal: recorded in the history's donations
  await until(() => seen.at(-1) === false, { what: "filter.tip hidden by filter.used" });

  // accounts/list, a page at a time.
  const listed = [];
  let after = null;
  for (let page = 0; page < 100; page++) {
    const result = await admin.accountsList({ after, limit: 2 });
    assert.ok(result.accounts.length <= 2);
    listed.push(...result.accounts);
    if (result.next === null) break;
    after = result.next;
  }
  const entry = listed.find((a) => a.account === "ts-grace");
  assert.ok(entry && entry.operations > 0 && entry.resident === true, JSON.stringify(listed));

  const exported = await admin.accountsExport("ts-grace");
  assert.equal(exported.account, "ts-grace");
  assert.ok(exported.history.some((e) => e.type === "eligibility" && e.tipId === "filter.tip"));
  assert.deepEqual(
    exported.donations.map((d) => [d.event, typeof d.cursor, typeof d.at]),
    [["filter.used", "number", "number"]],
  );
  const imported = await admin.accountsImport("ts-grace-copy", exported);
  assert.deepEqual(imported, { account: "ts-grace-copy", history: exported.history.length + exported.donations.length });
  assert.deepEqual(await admin.forAccount("ts-grace-copy").status(), await grace.status());
  assert.deepEqual(await admin.accountsDelete("ts-grace-copy"), { account: "ts-grace-copy", closedSessions: 0 });
  // Nothing of it is left but its row, marked erased while the tombstone stands (schema 16).
  assert.equal(await h.sql("SELECT count(*) FROM tipsd.snapshots WHERE account = 'ts-grace-copy'"), "0\n");
  assert.equal(await h.sql("SELECT erased FROM tipsd.accounts WHERE account = 'ts-grace-copy'"), "t\n");
  // A user's session may not call them.
  await assert.rejects(user.accountsList(), (error) => error.code === -32014);
});
