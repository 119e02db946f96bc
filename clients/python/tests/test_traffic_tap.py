"""The TIPSD_TRAFFIC_LOG tap (against the fake server) and the session's
traffic checker (traffic_check.py) on hand-made logs."""

import json

from conftest import FAKE_STDIO, TIMEOUT, fake_server, run
from tipsd_client import TipsClient
from traffic_check import DEFAULT_OPENRPC, Contract, check_log


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tap_logs_both_directions_per_connection(tmp_path, monkeypatch):
    log = tmp_path / "traffic.jsonl"
    monkeypatch.setenv("TIPSD_TRAFFIC_LOG", str(log))

    async def body():
        async with fake_server() as srv:
            async with (
                TipsClient.connect(socket_path=srv.socket_path, framing="content-length") as a,
                TipsClient.connect(socket_path=srv.socket_path) as b,
            ):
                await a.donate("x")
                await b.batch([("test/echo", {"k": 1}), ("test/echo", {"k": 2})])
        c = await TipsClient.connect(stdio_command=FAKE_STDIO, connect_timeout=TIMEOUT)
        await c.close(timeout=TIMEOUT)

    run(body)
    lines = _lines(log)
    conns = {line["conn"] for line in lines}
    assert len(conns) == 3
    assert {line["dir"] for line in lines} == {"out", "in"}
    assert {line["peer"]["kind"] for line in lines} == {"socket", "stdio"}
    assert all("test_traffic_tap.py::test_tap_logs_both_directions" in line["test"] for line in lines)
    donate = [
        line
        for line in lines
        if line["dir"] == "out" and isinstance(line["msg"], dict) and line["msg"].get("method") == "events/donate"
    ]
    assert donate and donate[0]["peer"]["framing"] == "content-length"
    batches = [line for line in lines if isinstance(line["msg"], list)]
    assert {line["dir"] for line in batches} == {"out", "in"}


def test_tap_is_off_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("TIPSD_TRAFFIC_LOG", raising=False)

    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            assert c.transport._tap is None
            await c.donate("x")

    run(body)


def _write(path, conn, peer, entries):
    with open(path, "a") as f:
        for direction, msg in entries:
            f.write(json.dumps({"conn": conn, "peer": peer, "dir": direction, "msg": msg}) + "\n")


def test_checker_reports_mismatches_and_skips_the_fake(tmp_path):
    log = tmp_path / "traffic.jsonl"
    daemon = {"kind": "socket", "path": str(tmp_path / "tipsd.sock")}
    req = lambda i, m, p=None: {"jsonrpc": "2.0", "id": i, "method": m, **({"params": p} if p else {})}  # noqa: E731
    _write(
        log,
        "1-1",
        daemon,
        [
            ("out", req(1, "events/donate", {"id": "e"})),
            ("in", {"jsonrpc": "2.0", "id": 1, "result": {"count": "one", "lifetime": 1}}),  # wrong type
            ("out", [req(2, "events/donate", {"id": "e"}), req(3, "tips/explain", {"id": "t"})]),
            (
                "in",
                [
                    {"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "unknown tip"}},
                    {"jsonrpc": "2.0", "id": 2, "result": {"count": 2, "lifetime": 2}},
                ],
            ),  # fine
            ("out", req(4, "clock/now")),
            ("in", {"jsonrpc": "2.0", "id": 4, "error": {"code": -32001, "message": "?"}}),  # not a clock/now error
            ("in", {"jsonrpc": "2.0", "method": "tips/shouldDisplayChanged", "params": {}}),  # missing members
            ("in", {"jsonrpc": "2.0", "method": "tips/nonsense", "params": {}}),
        ],
    )
    # The same garbage from the fake server is not the daemon's business.
    _write(
        log,
        "1-2",
        {"kind": "socket", "path": str(tmp_path / "fake.sock")},
        [
            ("out", req(1, "events/donate", {"id": "e"})),
            ("in", {"jsonrpc": "2.0", "id": 1, "result": {"count": "one", "lifetime": 1}}),
        ],
    )
    report = check_log(log, contract=Contract(DEFAULT_OPENRPC))
    assert report.connections == 1 and report.skipped_connections == 1
    found = {(m.method, m.pointer) for m in report.mismatches}
    assert ("events/donate (result)", "/result/count") in found
    assert ("clock/now (error)", "/error/code") in found
    assert any(m.startswith("tips/shouldDisplayChanged (notification)") for m, _ in found)
    assert ("tips/nonsense", "/") in found
    assert not any(m.startswith("tips/explain") for m, _ in found)
    assert "events/donate (result)  /result/count" in report.format_mismatches()


def test_checker_suite_filter_and_require_traffic(tmp_path, capsys):
    # Logs from the Swift tests' RPCClient carry "suite"; --suite checks only those connections.
    from traffic_check import main

    log = tmp_path / "traffic.jsonl"
    bad = [
        ("out", {"jsonrpc": "2.0", "id": 1, "method": "events/donate", "params": {"id": "e"}}),
        ("in", {"jsonrpc": "2.0", "id": 1, "result": {"count": "one", "lifetime": 1}}),
    ]
    good = [bad[0], ("in", {"jsonrpc": "2.0", "id": 1, "result": {"count": 1, "lifetime": 1}})]
    peer = {"kind": "socket", "path": str(tmp_path / "tipsd.sock")}
    for conn, suite, entries in (("1-1", "TipsServerTests", good), ("1-2", "TipsHardeningTests", bad)):
        with open(log, "a") as f:
            for direction, msg in entries:
                f.write(json.dumps({"conn": conn, "peer": peer, "dir": direction, "suite": suite, "msg": msg}) + "\n")
    report = check_log(log, contract=Contract(DEFAULT_OPENRPC), suites=["TipsServerTests"])
    assert (report.connections, report.other_suite_connections, report.mismatches) == (1, 1, [])
    assert "1 connections of suites other than TipsServerTests skipped" in report.summary()
    assert len(check_log(log, contract=Contract(DEFAULT_OPENRPC)).mismatches) == 1
    assert main(["--suite", "TipsServerTests", "--require-traffic", str(log)]) == 0
    assert main([str(log)]) == 1
    assert main(["--suite", "Nothing", str(log)]) == 0
    assert main(["--suite", "Nothing", "--require-traffic", str(log)]) == 1
    out = capsys.readouterr().out
    assert "FAILED: the traffic log" in out and "events/donate (result)  /result/count" in out
