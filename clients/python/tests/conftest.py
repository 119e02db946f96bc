import asyncio
import os
import pathlib
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from fake_server import FakeServer  # noqa: E402
from tipsd_client.pytest_plugin import default_timeout  # noqa: E402

# The one hang guard of this suite ($TIPSD_TEST_TIMEOUT, else 30 s; the same value the tipsd fixtures use for their
# clients). Every wait in these tests is for a condition and passes as soon as it holds; TIMEOUT only turns a hang
# into a failure. Tests never assert that something is fast, and prove "nothing arrived" with a barrier round trip
# (client.barrier(), sub.expect_none()), never by waiting.
TIMEOUT = default_timeout()


def run(coro_fn, *args, timeout=None):
    """Run an async test body (no pytest-asyncio needed), guarded against hanging (default 3 x TIMEOUT: the body's
    own waits are each guarded by TIMEOUT and report more precisely)."""

    async def guarded():
        return await asyncio.wait_for(coro_fn(*args), 3 * TIMEOUT if timeout is None else timeout)

    return asyncio.run(guarded())


@pytest.fixture
def arun():
    return run


FAKE_STDIO = [sys.executable, os.path.join(HERE, "fake_server.py"), "--stdio"]


def fake_server():
    return FakeServer()


# ---------------------------------------------------------------------------
# Issue #5: every response and notification the real daemon sends during this
# suite must validate against protocol/openrpc.json. The client's traffic tap
# ($TIPSD_TRAFFIC_LOG) records each connection's messages for the whole session
# (pytester subprocesses inherit it); pytest_sessionfinish validates them with
# traffic_check.py and fails the run listing every mismatch.
# TIPSD_TRAFFIC_CHECK=0 turns this off; TIPSD_OPENRPC=path checks another copy
# of the document; a TIPSD_TRAFFIC_LOG you set yourself is used (and kept).

_traffic: dict = {}


def pytest_configure(config):
    if os.environ.get("TIPSD_TRAFFIC_CHECK", "1").lower() in ("0", "no", "false", "off"):
        return
    existing = os.environ.get("TIPSD_TRAFFIC_LOG")
    if existing:
        path = pathlib.Path(existing)
        _traffic.update(path=path, offset=path.stat().st_size if path.exists() else 0, ours=False)
    else:
        fd, name = tempfile.mkstemp(prefix="tipsd-traffic-", suffix=".jsonl")
        os.close(fd)
        os.environ["TIPSD_TRAFFIC_LOG"] = name
        _traffic.update(path=pathlib.Path(name), offset=0, ours=True, set_env=True)
    _traffic["daemon_tests"] = 0


def pytest_runtest_call(item):
    # Count tests that reached their body with the real daemon's fixtures.
    if _traffic and "tipsd_bin" in getattr(item, "fixturenames", ()):
        _traffic["daemon_tests"] += 1


def pytest_sessionfinish(session, exitstatus):
    if not _traffic or "report" in _traffic:
        return
    try:
        from traffic_check import check_log, openrpc_path

        report = check_log(_traffic["path"], _traffic["offset"])
    except ImportError as e:
        _traffic["failure"] = (
            f"cannot validate the daemon's traffic: {e} (pip install jsonschema, or set TIPSD_TRAFFIC_CHECK=0)"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    except Exception as e:  # a broken document or log: still fail loudly, with the cause
        _traffic["failure"] = f"cannot validate the daemon's traffic ({_traffic['path']}): {type(e).__name__}: {e}"
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    _traffic["report"] = report
    _traffic["document"] = openrpc_path()
    if _traffic["daemon_tests"] and not report.connections:
        _traffic["failure"] = (
            f"{_traffic['daemon_tests']} tests ran against the daemon but the traffic tap "
            f"recorded no daemon connection in {_traffic['path']}"
        )
    if report.mismatches or "failure" in _traffic:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        _traffic["ours"] = False  # keep the log for inspection
    if _traffic["ours"]:
        try:
            _traffic["path"].unlink()
        except OSError:
            pass


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _traffic or ("report" not in _traffic and "failure" not in _traffic):
        return
    tr = terminalreporter
    report = _traffic.get("report")
    failed = "failure" in _traffic or (report is not None and report.mismatches)
    tr.section("tipsd traffic vs protocol/openrpc.json", sep="=", red=bool(failed), green=not failed, bold=True)
    if "failure" in _traffic:
        tr.write_line("FAILED: " + _traffic["failure"], red=True, bold=True)
    if report is None:
        return
    tr.write_line(f"checked {report.summary()} against {_traffic['document']}")
    if report.mismatches:
        tr.write_line(
            f"FAILED: {len(report.mismatches)} messages from the daemon disagree with the document "
            "(method  JSON pointer: message):",
            red=True,
            bold=True,
        )
        tr.write_line(report.format_mismatches())
    if failed:
        tr.write_line(f"traffic log kept at {_traffic['path']}")
        # Count it as a failure in the short summary and the final "N passed, 1 failed" line
        # (the exit status is already set by pytest_sessionfinish).
        if "failure" in _traffic:
            reason = _traffic["failure"]
        else:
            reason = f"{len(report.mismatches)} daemon messages disagree with {_traffic['document']}"
        tr.stats.setdefault("failed", []).append(
            pytest.TestReport(
                nodeid="tests/conftest.py::traffic_vs_openrpc",
                location=(__file__, 0, "tipsd traffic vs openrpc"),
                keywords={},
                outcome="failed",
                longrepr=reason,
                when="call",
            )
        )


def pytest_unconfigure(config):
    if _traffic.get("set_env"):
        os.environ.pop("TIPSD_TRAFFIC_LOG", None)
