"""Issue #13 against the real daemon: the analytics stream across a forwarder disconnect and a kill -9, `/metrics`
read with PyPI's prometheus_client parser, and the command-line views (`tipsd metrics`, `inspect`, `report`).

No timing assumptions: every wait is for a message, a line or a process exit, with harness.TIMEOUT as a hang guard;
"at least once, in order" is checked on what arrived, whatever the interleaving."""

from __future__ import annotations

import json
import pathlib
import queue
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import harness
from test_websocket import WebDaemon

GOAL_TIP = {
    **harness.FILTER_TIP,
    "goal": {"event": "filter.used", "within": {"hours": 24}},
    "options": {"ignoresDisplayFrequency": True},
}


class Restartable:
    """`tipsd serve` on a fixed socket and datastore that outlive the process: kill -9 it, start it again."""

    def __init__(self, directory: pathlib.Path, observer, *extra: str):
        self.directory = directory
        self.socket_path = str(directory / "tipsd.sock")
        self.datastore = str(directory / "tipsd.sqlite")
        self.observer = observer
        self.extra = list(extra)
        self.proc: subprocess.Popen | None = None
        self.logs: list[pathlib.Path] = []

    def start(self) -> None:
        # Subscription ids (and their seq) are per daemon run: a restarted daemon issues sub-1 again.
        self.observer.seq.clear()
        log = self.directory / f"stderr-{len(self.logs)}.log"
        self.logs.append(log)
        args = [
            harness.tipsd_bin(),
            "serve",
            "--socket",
            self.socket_path,
            "--datastore",
            self.datastore,
            "--clock",
            "virtual",
            "--clock-start",
            "1000000",
            "--allow-testing",
        ] + self.extra
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))

    def connect(self) -> harness.Connection:
        import socket

        deadline = time.monotonic() + harness.TIMEOUT
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.socket_path)
                break
            except (ConnectionRefusedError, FileNotFoundError):
                s.close()
                assert self.proc.poll() is None, self.log()
                assert time.monotonic() < deadline, "the daemon did not start: " + self.log()
                time.sleep(0.01)
        conn = harness.Connection(s.sendall, s.recv, "newline", self.observer, lambda: s.close())
        conn.socket = s
        reply = conn.request("initialize", {"protocolVersion": "1.1", "clientInfo": {"name": "measuring"}})
        assert "result" in reply, reply
        return conn

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=harness.TIMEOUT)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=harness.TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self) -> str:
        return "\n".join(log.read_text(errors="replace")[-2000:] for log in self.logs if log.exists())


@pytest.fixture
def restartable(tmp_path, observer):
    daemons: list[Restartable] = []

    def make(*extra: str) -> Restartable:
        d = Restartable(tmp_path, observer, *extra)
        daemons.append(d)
        d.start()
        return d

    yield make
    for d in daemons:
        d.stop()


def take_events(conn: harness.Connection, until) -> list[dict]:
    """`analytics/event` params in arrival order, until `until(events)` holds (other messages are ignored)."""
    events: list[dict] = []
    while not until(events):
        m = conn.receive()
        if isinstance(m, dict) and m.get("method") == "analytics/event":
            events.append(m["params"])
    return events


def impressions(events: list[dict]) -> list[float]:
    return [e["duration"] for e in events if e["type"] == "impression"]


def test_the_stream_delivers_every_event_at_least_once_in_order_across_a_disconnect_and_a_kill_9(restartable):
    daemon = restartable()
    producer = daemon.connect()
    assert "result" in producer.request("tips/register", {"tips": [GOAL_TIP]})
    forwarder = daemon.connect()
    subscribed = forwarder.request("analytics/subscribe", {"after": 0})["result"]
    assert subscribed["oldest"] == 1

    # Phase 1: 30 acknowledged impressions (duration = their number) while the forwarder reads.
    acknowledged: list[int] = []
    for n in range(30):
        assert "result" in producer.request("tips/displayed", {"id": "filter.tip", "duration": n})
        acknowledged.append(n)
    first = take_events(forwarder, lambda ev: 15 in impressions(ev))
    # The forwarder "processes" up to the impression numbered 15, stores that cursor, and is cut off (RST).
    processed = [e for e in first if e["cursor"] <= next(e["cursor"] for e in first if e.get("duration") == 15)]
    cursor = processed[-1]["cursor"]
    forwarder.socket.setsockopt(__import__("socket").SOL_SOCKET, __import__("socket").SO_LINGER, b"\1\0\0\0\0\0\0\0")
    forwarder.close()

    # Phase 2: 30 more while no forwarder listens, then some never acknowledged, then kill -9.
    for n in range(30, 60):
        assert "result" in producer.request("tips/displayed", {"id": "filter.tip", "duration": n})
        acknowledged.append(n)
    for n in range(1000, 1020):
        producer.send(
            {
                "jsonrpc": "2.0",
                "id": f"unacked-{n}",
                "method": "tips/displayed",
                "params": {"id": "filter.tip", "duration": n},
            }
        )
    daemon.kill9()

    # Phase 3: the daemon restarts on the same datastore; more impressions; the forwarder resumes from its cursor.
    daemon.start()
    producer = daemon.connect()
    assert "result" in producer.request("tips/register", {"tips": [GOAL_TIP]})
    for n in range(60, 90):
        assert "result" in producer.request("tips/displayed", {"id": "filter.tip", "duration": n})
        acknowledged.append(n)
    forwarder = daemon.connect()
    resumed = forwarder.request("analytics/subscribe", {"after": cursor})["result"]
    assert resumed["oldest"] == 1 and resumed["head"] > cursor
    second = take_events(forwarder, lambda ev: 89 in impressions(ev))

    cursors = [e["cursor"] for e in second]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors), "in cursor order, no repeats"
    assert cursors[0] == cursor + 1, "the replay starts right after the stored cursor"
    seen = impressions(processed) + impressions(second)
    missing = sorted(set(acknowledged) - set(seen))
    assert not missing, f"acknowledged impressions never delivered: {missing}"
    # Anything of the unacknowledged batch that was committed is delivered too, in order; nothing is invented.
    assert set(seen) - set(acknowledged) <= set(range(1000, 1020))
    # What the stream delivered is exactly what analytics/read pulls from the same cursor (committed entries).
    pulled: list[dict] = []
    after = cursor
    while True:
        page = producer.request("analytics/read", {"after": after, "limit": 50})["result"]
        pulled += page["events"]
        if not page["events"]:
            break
        after = page["next"]
    assert [e["cursor"] for e in pulled][: len(cursors)] == cursors


def test_a_live_subscriber_gets_events_from_now_and_unsubscribes(restartable):
    daemon = restartable()
    app = daemon.connect()
    app.request("tips/register", {"tips": [GOAL_TIP]})
    app.request("tips/displayed", {"id": "filter.tip"})
    live = daemon.connect()
    sub = live.request("analytics/subscribe")["result"]
    assert sub["head"] == 2
    app.request("tips/performAction", {"id": "filter.tip", "actionId": "learn-more"})
    events = take_events(live, lambda ev: len(ev) == 3)
    assert [e["type"] for e in events] == ["action", "invalidation", "eligibility"]
    assert events[0]["actionId"] == "learn-more" and events[0]["actionIndex"] == 0 and events[0]["variant"] is None
    assert live.request("analytics/unsubscribe", {"subscription": sub["subscription"]})["result"] == {"removed": True}
    app.request("tips/resetEligibility", {"id": "filter.tip"})
    live.expect_nothing()


def scrape(web: WebDaemon, token: str | None) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{web.port}/metrics")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=harness.TIMEOUT) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def samples(text: str) -> dict:
    """(sample name, sorted label items) → value, as prometheus_client parses the text."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_prometheus_metrics_parse_and_their_counters_match_the_traffic(daemon_factory):
    web = WebDaemon(daemon_factory, "--app-closed-event", "app.backgrounded")
    status, body = scrape(web, None)
    assert status == 401 and "token" in body
    conn = web.daemon.connect()
    assert "result" in conn.request("initialize", {"protocolVersion": "1.1", "clientInfo": {"name": "prom"}})
    conn.request("tips/register", {"tips": [GOAL_TIP]})
    for _ in range(7):
        assert "result" in conn.request("events/donate", {"id": "search.opened"})
    for _ in range(3):
        assert "result" in conn.request("tips/status", {})
    for _ in range(2):
        assert conn.request("tips/status", {"ids": ["no.such.tip"]})["error"]["code"] == -32001
    conn.request("tips/displayed", {"id": "filter.tip", "duration": 2})
    conn.request("events/donate", {"id": "app.backgrounded"})
    observe = conn.request("tips/observe", {})
    status, text = scrape(web, web.token)
    assert status == 200
    values = samples(text)
    families = {f.name: f.type for f in text_string_to_metric_families(text)}

    def requests(method: str, outcome: str) -> float:
        return values.get(("tipsd_requests_total", (("method", method), ("outcome", outcome))), 0)

    assert requests("initialize", "ok") == 1
    assert requests("tips/register", "ok") == 1
    assert requests("events/donate", "ok") == 8
    assert requests("tips/status", "ok") == 3 and requests("tips/status", "error") == 2
    assert requests("tips/displayed", "ok") == 1 and requests("tips/observe", "ok") == 1
    total = sum(v for (name, _), v in values.items() if name == "tipsd_requests_total")
    assert total == 17
    assert families["tipsd_requests"] == "counter"
    assert families["tipsd_request_duration_seconds"] == "histogram"
    assert values[("tipsd_request_duration_seconds_count", ())] == total
    assert values[("tipsd_request_duration_seconds_bucket", (("le", "+Inf"),))] == total
    assert families["tipsd_commit_duration_seconds"] == "histogram"
    commits = values[("tipsd_commit_duration_seconds_count", ())]
    assert commits >= 1 and values[("tipsd_commit_batch_size_count", ())] == commits
    # Every durable request staged writes or history: the batches hold at least one entry each.
    assert values[("tipsd_commit_batch_size_sum", ())] >= commits
    assert values[("tipsd_connections", (("transport", "unix"),))] == 1
    assert values[("tipsd_connections", (("transport", "websocket"),))] == 0
    assert values[("tipsd_connections_accepted_total", (("transport", "unix"),))] == 1
    assert values[("tipsd_subscriptions", (("kind", "observe"),))] == 1
    assert values[("tipsd_history_events_total", (("type", "impression"),))] == 1
    assert values[("tipsd_history_events_total", (("type", "donation"),))] == 1
    assert values[("tipsd_datastore_size_bytes", ())] > 0
    assert observe["result"]["subscription"]
    # Scraping is not a request: a second scrape counts the same requests.
    assert (
        samples(scrape(web, web.token)[1])[("tipsd_requests_total", (("method", "events/donate"), ("outcome", "ok")))]
        == 8
    )


def tipsd(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [harness.tipsd_bin(), *args], capture_output=True, text=True, timeout=harness.TIMEOUT, **kwargs
    )


def test_tipsd_metrics_prints_a_table_csv_and_json_and_report_writes_a_static_page(restartable, tmp_path):
    daemon = restartable("--app-closed-event", "app.backgrounded")
    app = daemon.connect()
    app.request("tips/register", {"tips": [GOAL_TIP]})
    app.request("tips/displayed", {"id": "filter.tip"})
    app.request("tips/displayed", {"id": "filter.tip"})
    app.request("clock/advance", {"seconds": 60})
    app.request("events/donate", {"id": "filter.used"})
    table = tipsd("metrics", "--socket", daemon.socket_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == [
        "TIP",
        "VARIANT",
        "IMPR",
        "GOAL",
        "TIME",
        "TO",
        "GOAL",
        "CLOSE",
        "GOAL/DAY",
        "BEFORE→AFTER",
    ]
    assert lines[1].split()[:5] == ["filter.tip", "all", "2", "50%", "(1/2)"]
    header = lines[0]
    assert lines[1].index("50%") == header.index("GOAL "), "columns are aligned"
    csv = tipsd("metrics", "--socket", daemon.socket_path, "--csv")
    rows = [line.split(",") for line in csv.stdout.splitlines()]
    assert rows[0][:4] == ["tip", "variant", "impressions", "goal_rate"] and rows[1][:4] == [
        "filter.tip",
        "all",
        "2",
        "0.5",
    ]
    as_json = json.loads(tipsd("metrics", "--socket", daemon.socket_path, "--json", "--since", "1h").stdout)
    # One install is one account (issue #38): its raw counts, and no interval before 100 accounts, saying so.
    assert as_json["tips"][0]["overall"]["goal"] == {
        "converted": 1,
        "decided": 2,
        "pending": 0,
        "rate": 0.5,
        "low": None,
        "high": None,
        "interval": "fixedHorizon",
        "accounts": 1,
        "notEnoughData": True,
    }
    assert as_json["method"]["unit"] == "account" and as_json["method"]["minimumAccounts"] == 100
    assert as_json["since"] == 1000060 - 3600
    report = tmp_path / "report.html"
    written = tipsd("report", "--socket", daemon.socket_path, "--html", str(report))
    assert written.returncode == 0, written.stderr
    html = report.read_text()
    assert html.startswith("<!doctype html>") and "filter.tip" in html and "<svg" in html
    for external in ("<script", "src=", "href=", "@import", "url("):
        assert external not in html, f"the report must be self-contained: found {external!r}"
    text = tipsd("inspect", "--socket", daemon.socket_path)
    assert text.returncode == 0 and "filter.tip" in text.stdout and "\x1b[" not in text.stdout


def test_inspect_watch_redraws_on_changes_and_survives_a_daemon_restart(restartable):
    daemon = restartable()
    app = daemon.connect()
    app.request("tips/register", {"tips": [GOAL_TIP]})
    watcher = subprocess.Popen(
        [harness.tipsd_bin(), "inspect", "--watch", "--json", "--socket", daemon.socket_path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in watcher.stdout], daemon=True).start()

    def next_state(condition) -> dict:
        while True:
            state = json.loads(lines.get(timeout=harness.TIMEOUT))
            if condition(state):
                return state

    def status(state: dict) -> str | None:
        return next((t["status"] for t in state["tips"] if t["id"] == "filter.tip"), None)

    try:
        assert status(next_state(lambda s: True)) == "pending"
        for _ in range(3):
            app.request("events/donate", {"id": "search.opened"})
        next_state(lambda s: status(s) == "available")
        daemon.kill9()
        daemon.start()
        app = daemon.connect()
        app.request("tips/register", {"tips": [GOAL_TIP]})
        app.request("tips/invalidate", {"id": "filter.tip"})
        state = next_state(lambda s: status(s) == "invalidated")
        assert state["tips"][0]["reason"] == "tipClosed"
    finally:
        watcher.terminate()
        watcher.wait(timeout=harness.TIMEOUT)
    assert "reconnect" in watcher.stderr.read()
