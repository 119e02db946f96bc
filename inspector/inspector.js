// tipsd's web inspector: served by the daemon at GET / (with /inspector.css), talking JSON-RPC over the daemon's own
// WebSocket. Live without polling: inspect/state {watch: true} arms one inspect/changed per refresh, tips/observe
// flashes shouldDisplay changes as they happen, analytics/subscribe feeds the lifecycle list. No external resource
// (the Content-Security-Policy forbids it); daemon data reaches the page only through textContent, never as HTML.

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

// ─── The token: taken from the URL fragment once (never sent to any server), kept for this tab only ──────────────

function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.has("token")) {
    sessionStorage.setItem("tipsd.token", fragment.get("token"));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("tipsd.token");
}

// ─── A small JSON-RPC 2.0 client over the WebSocket ──────────────────────────────────────────────────────────────

class Connection {
  constructor(token, onNotification, onClose) {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    this.socket = new WebSocket(scheme + location.host + "/", ["tipsd.v1", "tipsd.token." + token]);
    this.pending = new Map();
    this.nextId = 1;
    this.socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.method) return onNotification(message.method, message.params);
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (message.error) waiter.reject(new Error(message.error.message));
      else waiter.resolve(message.result);
    };
    this.socket.onclose = () => {
      for (const waiter of this.pending.values()) waiter.reject(new Error("connection closed"));
      this.pending.clear();
      onClose();
    };
    this.opened = new Promise((resolve, reject) => {
      this.socket.onopen = resolve;
      this.socket.onerror = () => reject(new Error("cannot connect"));
    });
  }

  call(method, params) {
    const id = this.nextId++;
    const message = { jsonrpc: "2.0", id, method };
    if (params !== undefined) message.params = params;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify(message));
    });
  }
}

// ─── State ───────────────────────────────────────────────────────────────────────────────────────────────────────

let connection = null;
let state = null;
let refreshing = false;
let refreshAgain = false;
let metricsTimer = null;
let fleetTimer = null;
let retryDelay = 250;
const feed = [];

function setConnection(text, className) {
  $("connection").textContent = text;
  $("connection").className = "badge " + className;
  document.body.dataset.state = className;
}

async function connect(token) {
  setConnection("connecting", "connecting");
  const current = new Connection(token, notified, () => {
    if (connection !== current) return;
    connection = null;
    setConnection("disconnected — reconnecting", "disconnected");
    setTimeout(() => connect(token), retryDelay);
    retryDelay = Math.min(retryDelay * 2, 5000);
  });
  connection = current;
  try {
    await current.opened;
    const initialized = await current.call("initialize", { protocolVersion: "1.1", clientInfo: { name: "tipsd inspector", version: "1" } });
    retryDelay = 250;
    if (initialized.auth && initialized.auth.admin) {
      // A hosted node's admin: the fleet — every account's metrics pooled, every account's lifecycle events. (One
      // account's own state is its user's to see.)
      document.body.dataset.fleet = "true";
      await current.call("analytics/subscribe", {});
      setConnection("connected — fleet (admin)", "connected");
      await refreshMetrics();
      // No inspect/changed across accounts: the pooled metrics are read again every 10 s.
      clearInterval(fleetTimer);
      fleetTimer = setInterval(refreshMetrics, 10000);
      return;
    }
    await refresh();
    await current.call("tips/observe", {});
    const head = state ? state.history.head : 0;
    await current.call("analytics/subscribe", { after: Math.max(0, head - 40) });
    setConnection("connected", "connected");
    await refreshMetrics();
  } catch (error) {
    if (connection === current) current.socket.close();
  }
}

function notified(method, params) {
  if (method === "inspect/changed") {
    refresh();
    scheduleMetrics();
  } else if (method === "tips/shouldDisplayChanged") {
    const row = document.querySelector(`tr[data-tip="${CSS.escape(params.id)}"]`);
    if (row) {
      row.querySelector(".should-display").replaceChildren(yesNo(params.shouldDisplay));
      row.classList.remove("flash");
      void row.offsetWidth;
      row.classList.add("flash");
    }
  } else if (method === "analytics/event") {
    feed.unshift(params);
    if (feed.length > 200) feed.pop();
    renderFeed();
  }
}

/// One inspect/state at a time; a change during it asks for one more afterwards.
async function refresh() {
  if (!connection) return;
  if (refreshing) {
    refreshAgain = true;
    return;
  }
  refreshing = true;
  try {
    state = await connection.call("inspect/state", { watch: true });
    render();
  } catch (error) {
    // The connection dropped: reconnecting refreshes.
  } finally {
    refreshing = false;
    if (refreshAgain) {
      refreshAgain = false;
      refresh();
    }
  }
}

/// The metrics read the whole history: at most one request per second, after a change.
function scheduleMetrics() {
  if (metricsTimer) return;
  metricsTimer = setTimeout(() => {
    metricsTimer = null;
    refreshMetrics();
  }, 1000);
}

async function refreshMetrics() {
  if (!connection) return;
  try {
    renderMetrics(await connection.call("metrics/get", {}));
  } catch (error) {
    // Retried after the next change.
  }
}

// ─── Rendering (textContent only) ────────────────────────────────────────────────────────────────────────────────

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

const yesNo = (flag) => el("span", { class: flag ? "yes" : "no", text: flag ? "yes" : "no" });
const time = (seconds) => (seconds == null ? "—" : new Date(seconds * 1000).toISOString().replace(".000Z", "Z"));
const percent = (rate) => (rate == null ? "—" : (rate * 100).toFixed(rate < 0.1 ? 1 : 0) + "%");
const signedPercent = (rate) => (rate == null ? "—" : (rate > 0 ? "+" : rate < 0 ? "−" : "") + (Math.abs(rate) * 100).toFixed(0) + " pts");
const duration = (seconds) => {
  if (seconds == null) return "—";
  if (seconds < 120) return seconds.toFixed(seconds < 10 ? 1 : 0) + " s";
  if (seconds < 7200) return (seconds / 60).toFixed(0) + " min";
  if (seconds < 172800) return (seconds / 3600).toFixed(1) + " h";
  return (seconds / 86400).toFixed(1) + " d";
};
const UNIT_SECONDS = { minutes: 60, hours: 3600, days: 86400, weeks: 604800 };
const durationSeconds = (value) => Object.entries(value).reduce((sum, [unit, amount]) => sum + amount * (UNIT_SECONDS[unit] ?? 0), 0);
const schedule = (s) => [s.from ? `from ${s.from}` : null, s.until ? `until ${s.until}` : null].filter(Boolean).join(" ");
const within = (goal) => {
  const [unit, amount] = Object.entries(goal.within)[0];
  return `${goal.event} within ${amount} ${amount === 1 ? unit.slice(0, -1) : unit}`;
};

function button(label, action) {
  return el("button", {
    text: label,
    onclick: async () => {
      try {
        await action();
        $("control-result").textContent = `${label}: done`;
      } catch (error) {
        $("control-result").textContent = `${label}: ${error.message}`;
      }
    },
  });
}

function render() {
  const testing = state.testing;
  $("clock").textContent = `${time(state.now)}${state.virtualClock ? " (virtual clock)" : ""}`;
  $("testing").hidden = !testing;
  $("controls").hidden = !testing;
  $("advance-form").hidden = !(testing && state.virtualClock);

  const s = state.suppression;
  $("suppression").hidden = !s.suppressed;
  $("suppression").textContent = s.suppressed
    ? `Tips suppressed${s.reason ? ` (${s.reason})` : ""} ${s.until != null ? `until ${time(s.until)}` : "until tips/resume"}: no tip displays`
    : "";
  $("resume-button").hidden = !s.suppressed;

  $("tips").tBodies[0].replaceChildren(
    ...state.tips.map((tip) => {
      const why = el("details", {}, el("summary", { text: tip.heldBy.length ? heldBy(tip.heldBy[0]) : tip.lines[1] || "" }),
        el("pre", { text: tip.lines.join("\n") }));
      const actions = testing
        ? el("td", {}, button("invalidate", () => connection.call("tips/invalidate", { id: tip.id })), " ",
            button("reset eligibility", () => connection.call("tips/resetEligibility", { id: tip.id })))
        : el("td");
      return el("tr", { "data-tip": tip.id },
        el("td", {}, el("strong", { text: tip.id }), tip.variant ? el("span", { class: "muted", text: ` · ${tip.variant}` }) : null,
          tip.holdout ? el("span", { class: "badge holdout", text: "holdout" }) : null,
          tip.schedule ? el("div", { class: "muted small", text: schedule(tip.schedule) }) : null),
        el("td", {}, el("span", { class: `status ${tip.status}`, text: tip.status + (tip.reason ? ` (${tip.reason})` : "") })),
        el("td", { class: "should-display" }, yesNo(tip.shouldDisplay)),
        el("td", { class: "num", text: String(tip.displayCount) }),
        el("td", { class: "num", text: duration(tip.displayedDuration) }),
        el("td", {}, why),
        el("td", { class: "muted", text: tip.goal ? within(tip.goal) : "—" }),
        actions);
    }));

  $("events").tBodies[0].replaceChildren(
    ...state.events.map((event) => {
      const role = [...event.goalOf.map((id) => `goal of ${id}`), event.appClosed ? "app closed" : null].filter(Boolean).join(", ");
      const last = event.lastDonation
        ? time(event.lastDonation.at) + (event.lastDonation.info ? " " + JSON.stringify(event.lastDonation.info) : "")
        : "—";
      return el("tr", { "data-event": event.id },
        el("td", { text: event.id }),
        el("td", { class: "num count", text: String(event.count) }),
        el("td", { class: "num", text: String(event.lifetime) }),
        el("td", { class: "muted", text: [event.maxDonations != null ? `newest ${event.maxDonations}` : null,
          event.maxAge ? `younger than ${duration(durationSeconds(event.maxAge))}` : null].filter(Boolean).join(", ") || "—" }),
        el("td", { class: "muted", text: last }),
        el("td", { class: "muted", text: role }),
        el("td", {}, testing ? button("donate", () => connection.call("events/donate", { id: event.id })) : null));
    }));

  $("parameters").tBodies[0].replaceChildren(
    ...state.parameters.map((p) =>
      el("tr", {}, el("td", { text: p.id + (p.transient ? " (transient)" : "") }), el("td", { text: JSON.stringify(p.value) }),
        el("td", { class: "muted", text: JSON.stringify(p.default) }))));
  $("groups").tBodies[0].replaceChildren(
    ...state.groups.map((g) =>
      el("tr", {}, el("td", { text: g.id }), el("td", { text: g.priority }), el("td", { text: g.currentTip ?? "none" }),
        el("td", { class: "muted", text: g.tips.join(", ") + (g.schedule ? ` · ${schedule(g.schedule)}` : "") }))));
  const o = state.overrides;
  const overrides = [o.showAll ? "show all" : null, o.hideAll ? "hide all" : null,
    o.show.length ? "show " + o.show.join(", ") : null, o.hide.length ? "hide " + o.hide.join(", ") : null].filter(Boolean);
  $("overrides").textContent = overrides.length ? overrides.join("; ") : "none";
  const h = state.history;
  $("history-note").textContent = h.enabled
    ? `cursor ${h.head}, kept ${h.days} days${h.appClosedEvent ? ", app closed: " + h.appClosedEvent : ""}`
    : "history off (--history-days 0)";
}

function heldBy(hold) {
  switch (hold.kind) {
    case "cooldown": return `cooldown until ${time(hold.until)}`;
    case "group": return `group ${hold.group} (current: ${hold.currentTip ?? "none"})`;
    case "override": return `override ${hold.override}`;
    case "invalidated": return `invalidated (${hold.reason})`;
    case "schedule": return `${hold.group ? `group ${hold.group}'s ` : ""}schedule closed (${[hold.from != null ? `from ${time(hold.from)}` : null, hold.until != null ? `until ${time(hold.until)}` : null].filter(Boolean).join(" ")})`;
    case "suppressed": return `suppressed ${hold.until != null ? `until ${time(hold.until)}` : "until resumed"}${hold.reason ? ` (${hold.reason})` : ""}`;
    case "holdout": return `holdout ${hold.variant}${hold.exposedSince != null ? `: would show since ${time(hold.exposedSince)}` : ""}`;
    default: return hold.kind;
  }
}

function renderFeed() {
  $("feed").replaceChildren(
    ...feed.slice(0, 60).map((e) => {
      const detail = e.type === "impression" ? `${e.duration} s`
        : e.type === "eligibility" ? `${e.status}${e.reason ? " (" + e.reason + ")" : ""}, shouldDisplay ${e.shouldDisplay}`
        : e.type === "invalidation" ? e.reason
        : e.type === "action" ? `${e.actionId} [${e.actionIndex}]`
        : e.type === "exposure" ? "would have shown (counterfactual)"
        : `variant ${e.variant}`;
      const who = e.account ? `${e.account}  ` : "";
      return el("li", { value: e.cursor, text: `${time(e.at)}  ${who}${e.type.padEnd(12)} ${e.tipId}${e.variant ? " · " + e.variant : ""}  ${detail}` });
    }));
}

// ─── Metrics: numbers and one inline SVG bar chart per tip comparing its variants ───────────────────────────────

function renderMetrics(report) {
  $("metrics-note").textContent = (report.accounts != null ? `across ${report.accounts} accounts · ` : "") + (report.appClosedEvent
    ? `close rate: ${report.appClosedEvent} within ${report.closeWindow} s` + (report.closeRateAlert != null ? `, alert above ${percent(report.closeRateAlert)}` : "")
    : "close rate unavailable (start the daemon with --app-closed-event)");
  $("metrics").replaceChildren(
    ...report.tips.map((tip) => {
      const rows = tip.variants.length ? tip.variants : [{ ...tip.overall, variant: "all" }];
      const o = tip.overall;
      const lines = [
        `${o.impressions} impressions`,
        o.goal ? `goal ${percent(o.goal.rate)}${interval(o.goal)} (${o.goal.converted}/${o.goal.decided}${o.goal.pending ? `, ${o.goal.pending} pending` : ""})` : "no goal declared",
        o.timeToGoal ? `time to first use ${o.timeToGoal.samples ? duration(o.timeToGoal.median) : o.timeToGoal.open ? "open" : "—"}${report.accounts != null ? ` (median of ${o.timeToGoal.samples} accounts)` : ""}` : null,
        ...(tip.comparisons || []).map((c) => `${c.variant} vs ${c.against} ${verdict(c, c.sample?.variant, c.sample?.against)}`),
        tip.lift ? `lift vs holdout ${verdict(tip.lift, tip.lift.sample?.exposed, tip.lift.sample?.holdout)}` : null,
        o.close.available ? `close rate ${percent(o.close.rate)} (${o.close.closes}/${o.close.decided})` : null,
        o.goalRate && o.goalRate.firstImpressionAt != null
          ? `goal per day ${o.goalRate.before?.perDay?.toFixed(2) ?? "—"} before → ${o.goalRate.after?.perDay?.toFixed(2) ?? "—"} after`
          : null,
      ].filter(Boolean);
      return el("div", { class: "metric-card", "data-metrics": tip.tipId },
        el("h3", { text: tip.tipId }),
        el("div", { class: "muted small", text: lines.join(" · ") }),
        o.close.available && o.close.alert ? el("div", { class: "alert", text: "close rate over the alert: fix the copy or the timing" }) : null,
        chart(rows),
        el("div", { class: "legend small muted" }, el("span", { class: "goal" }), "goal rate", el("span", { class: "close" }), "close rate"));
    }));
}

/// A rate's 95% interval across accounts, as ` [12%–40%, 104 accounts]` (nothing without enough accounts).
function interval(rate) {
  if (rate.low == null) return "";
  return ` [${percent(rate.low)}–${percent(rate.high)}${rate.accounts != null ? `, ${rate.accounts} accounts` : ""}]`;
}

/// A difference's intervals (issue #38): the always-valid one first (safe to look at daily), then the fixed-horizon
/// one, and the accounts on each side; "not enough data yet" under the minimum.
// A lift's or comparison's verdict (accounts that did the goal after their first trigger), or, when the sample-ratio
// check failed, a warning in its place: the arms' sizes say the assignment or the trigger is broken.
function verdict(d, accounts, against) {
  if (d.srm?.flagged) {
    const observed = Object.entries(d.srm.observed).map(([name, n]) => `${name} ${n}`).join(", ");
    const expected = Object.entries(d.srm.expected).map(([name, n]) => `${name} ${Math.round(n)}`).join(", ");
    return `⚠ sample ratio mismatch: triggered accounts ${observed} against ${expected} expected (χ² p = ${d.srm.pValue.toExponential(1)}) — no verdict`;
  }
  let text = `${signedPercent(d.difference)}${differenceInterval(d, accounts, against)}`;
  const relative = (x) => (x > 0 ? "+" : x < 0 ? "−" : "") + (Math.abs(x) * 100).toFixed(0) + "%";
  if (d.relative) text += ` (relative ${relative(d.relative.estimate)} [${relative(d.relative.low)}, ${relative(d.relative.high)}])`;
  return text;
}

function differenceInterval(d, accounts, against) {
  if (d.difference == null) return "";
  const sample = accounts != null ? `${accounts} vs ${against} accounts` : "";
  if (d.low == null) {
    return d.notEnoughData ? ` — not enough data yet (${sample}${d.sample?.minimum ? `, ${d.sample.minimum} a side needed` : ""})` : "";
  }
  const kind = d.interval === "alwaysValid" ? "always valid " : "";
  let text = ` [${kind}${signedPercent(d.low)}, ${signedPercent(d.high)}`;
  if (d.fixedHorizon) text += `; fixed horizon ${signedPercent(d.fixedHorizon.low)}, ${signedPercent(d.fixedHorizon.high)}`;
  text += sample ? `; ${sample}]` : "]";
  if (d.cuped) {
    text += ` CUPED ${signedPercent(d.cuped.difference)} [always valid ${signedPercent(d.cuped.low)}, ${signedPercent(d.cuped.high)}; variance −${percent(Math.max(0, d.cuped.varianceReduction))}]`;
  }
  return text;
}

/// Bars per variant: goal rate and close rate (0–100 %), labelled with their sample sizes.
function chart(rows) {
  const width = 340;
  const rowHeight = 34;
  const left = 70;
  const scale = width - left - 90;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(rows.length * rowHeight + 6));
  svg.setAttribute("role", "img");
  const add = (tag, attributes, text) => {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  rows.forEach((row, index) => {
    const y = index * rowHeight + 4;
    add("text", { x: 0, y: y + 18 }, row.holdout ? `${row.variant} (holdout)` : row.variant);
    const goalRate = row.goal?.rate ?? 0;
    const closeRate = row.close.available ? row.close.rate ?? 0 : 0;
    add("rect", { class: "goal", x: left, y, width: Math.max(1, goalRate * scale), height: 12, rx: 2 });
    add("text", { x: left + Math.max(1, goalRate * scale) + 4, y: y + 10 },
      row.goal ? `${percent(row.goal.rate)} n=${row.goal.decided}` : "—");
    add("rect", { class: "close" + (row.close.alert ? " alert" : ""), x: left, y: y + 14, width: Math.max(1, closeRate * scale), height: 12, rx: 2 });
    add("text", { x: left + Math.max(1, closeRate * scale) + 4, y: y + 24 },
      row.close.available ? `${percent(row.close.rate)} n=${row.close.decided}` : "n/a");
  });
  add("line", { class: "axis", x1: left, y1: 0, x2: left, y2: rows.length * rowHeight + 4 });
  return svg;
}

// ─── Start ───────────────────────────────────────────────────────────────────────────────────────────────────────

function start() {
  $("donate-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = $("donate-event").value.trim();
    if (id && connection) connection.call("events/donate", { id }).then(
      (r) => ($("control-result").textContent = `donated ${id}: ${r.count} kept`),
      (e) => ($("control-result").textContent = e.message));
  });
  $("suppress-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const minutes = Number($("suppress-minutes").value);
    if (connection) connection.call("tips/suppress", { seconds: minutes * 60, reason: "inspector" }).then(
      (r) => ($("control-result").textContent = `suppressed until ${time(r.until)}`),
      (e) => ($("control-result").textContent = e.message));
  });
  $("resume-button").addEventListener("click", () => {
    if (connection) connection.call("tips/resume", {}).then(
      () => ($("control-result").textContent = "resumed"),
      (e) => ($("control-result").textContent = e.message));
  });
  $("advance-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const seconds = Number($("advance-seconds").value);
    if (connection) connection.call("clock/advance", { seconds }).then(
      (r) => ($("control-result").textContent = `now ${time(r.now)}`),
      (e) => ($("control-result").textContent = e.message));
  });
  const token = takeToken();
  if (!token) {
    setConnection("no token", "disconnected");
    $("token-form").hidden = false;
    $("token-entry").addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem("tipsd.token", $("token-input").value.trim());
      $("token-input").value = "";
      $("token-form").hidden = true;
      $("main").hidden = false;
      connect(sessionStorage.getItem("tipsd.token"));
    });
    return;
  }
  $("main").hidden = false;
  connect(token);
}

start();
