import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import harness  # noqa: E402


@pytest.fixture(scope="session")
def contract():
    return harness.Contract()


@pytest.fixture
def observer(contract):
    obs = harness.Observer(contract)
    yield obs
    obs.assert_clean()


@pytest.fixture
def daemon_factory(observer):
    started = []

    def start(transport="stdio", *extra_args, base_args=None):
        d = harness.Daemon(transport, extra_args, observer=observer, base_args=base_args)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


def pytest_report_header(config):
    return f"tipsd: {harness.tipsd_bin()}"
