"""The pytest plugin itself: an app team's test file run by pytester."""

import os
import time

from conftest import TIMEOUT

pytest_plugins = ["pytester"]


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); check /proc state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid, timeout=TIMEOUT):
    """Until process `pid` (not our child: no wait() for it) is gone; `timeout` only guards against hanging."""
    deadline = time.monotonic() + timeout
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_app_team_contract_test(pytester, tipsd_bin, tmp_path):
    pidfile = tmp_path / "pids"
    pytester.makepyfile(
        test_bridge=f"""
        import os
        FILTER_TIP = {{"id": "filter.tip", "title": "Filter", "actions": [{{"id": "learn-more", "title": "More"}}],
                      "rules": [{{"event": "search.opened", "count": {{"gte": 3}}}}]}}

        def test_filter_tip_appears_after_three_searches(tipsd, tipsd_daemon):
            with open({str(pidfile)!r}, "a") as f:
                f.write(f"{{tipsd_daemon.process.pid}} {{tipsd_daemon.socket_path}}\\n")
            tipsd.register([FILTER_TIP])
            tips = tipsd.observe(["filter.tip"])
            for _ in range(3):
                tipsd.donate("search.opened")
            assert tips.next().should_display

        def test_each_test_gets_a_fresh_daemon(tipsd, tipsd_daemon):
            with open({str(pidfile)!r}, "a") as f:
                f.write(f"{{tipsd_daemon.process.pid}} {{tipsd_daemon.socket_path}}\\n")
            assert tipsd.status() == []
            assert tipsd.donate("search.opened") == 1
    """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", f"--tipsd-bin={tipsd_bin}")
    result.assert_outcomes(passed=2)
    lines = pidfile.read_text().split()
    pids = [int(p) for p in lines[0::2]]
    sockets = lines[1::2]
    assert len(set(pids)) == 2
    for pid in pids:
        assert _wait_gone(pid), f"tipsd {pid} still running after the fixture tore down"
    for s in sockets:
        assert not os.path.exists(s)


def test_missing_binary_fails_or_skips(pytester, monkeypatch):
    pytester.makepyfile(test_x="def test_x(tipsd):\n    pass\n")
    monkeypatch.setenv("TIPSD_BIN", "/nonexistent/tipsd")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*TIPSD_BIN=/nonexistent/tipsd does not exist*"])
    monkeypatch.setenv("TIPSD_SKIP_IF_MISSING", "1")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)


def test_daemon_crash_is_reported(pytester, tipsd_bin):
    pytester.makepyfile(
        test_crash="""
        import os, signal
        def test_kill(tipsd, tipsd_daemon):
            os.kill(tipsd_daemon.process.pid, signal.SIGKILL)
            tipsd_daemon.process.wait()
    """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", f"--tipsd-bin={tipsd_bin}")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*tipsd exited during the test with status -9*"])


def test_marker_options(pytester, tipsd_bin):
    pytester.makepyfile(
        test_marker="""
        import pytest
        @pytest.mark.tipsd(clock=None)
        def test_system_clock(tipsd):
            assert tipsd.clock()["virtual"] is False

        def test_virtual_by_default(tipsd):
            assert tipsd.clock()["virtual"] is True
    """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", f"--tipsd-bin={tipsd_bin}")
    result.assert_outcomes(passed=2)
