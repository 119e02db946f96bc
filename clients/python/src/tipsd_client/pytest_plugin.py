"""pytest plugin (entry point ``pytest11``/``tipsd``): fixtures that run a
real tipsd for bridge-contract tests.

Fixtures
--------
``tipsd``
    A :class:`~tipsd_client.SyncTipsClient` connected (and initialized) to a
    fresh daemon: ``tipsd serve --socket <tmp>/tipsd.sock --datastore :memory:
    --clock virtual``. Plain blocking calls, so no pytest-asyncio is needed.
``tipsd_daemon``
    The running :class:`~tipsd_client.TipsdDaemon` (``.socket_path``,
    ``.process``, ``.log()``) — connect an async client to it yourself.
``tipsd_connect``
    Factory for more clients of the same daemon:
    ``other = tipsd_connect(framing="content-length")``.
``tipsd_bin``
    The binary: ``--tipsd-bin``, ini ``tipsd_bin``, ``$TIPSD_BIN``, ``tipsd`` on
    PATH, or ``.build/debug/tipsd`` in the current directory or a parent.

Per test options: ``@pytest.mark.tipsd(clock="system", datastore=":memory:",
args=["--catalog", "catalog.json"], timeout=30)``.

Timeouts are hang guards, never expectations of speed: the fixtures' clients
give up on a call after ``timeout`` seconds (default ``$TIPSD_TEST_TIMEOUT``,
else 30), and the daemon gets as long to start listening. Raise
``TIPSD_TEST_TIMEOUT`` on a slow or loaded machine; a passing test never waits
for it.

A missing binary is a fixture error; set ``TIPSD_SKIP_IF_MISSING=1`` to skip
those tests instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .daemon import TipsdDaemon, TipsdNotFound, find_tipsd
from .errors import TipsdConnectionError, TipsdError
from .sync import SyncTipsClient

TEST_TIMEOUT_ENV = "TIPSD_TEST_TIMEOUT"


def default_timeout() -> float:
    """The hang guard of the fixtures (and of this project's own tests): ``$TIPSD_TEST_TIMEOUT``
    seconds, else 30. Only a broken daemon ever makes a test wait that long."""
    value = os.environ.get(TEST_TIMEOUT_ENV, "").strip()
    if not value:
        return 30.0
    try:
        seconds = float(value)
    except ValueError:
        raise pytest.UsageError(f"{TEST_TIMEOUT_ENV}={value!r} is not a number of seconds") from None
    if seconds <= 0:
        raise pytest.UsageError(f"{TEST_TIMEOUT_ENV}={value!r} must be positive")
    return seconds


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tipsd")
    group.addoption("--tipsd-bin", action="store", default=None, help="path of the tipsd binary for the tipsd fixtures")
    parser.addini("tipsd_bin", "path of the tipsd binary for the tipsd fixtures", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "tipsd(clock='virtual', datastore=':memory:', args=[], timeout=$TIPSD_TEST_TIMEOUT or 30): "
        "options for the tipsd fixtures",
    )


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    marker = request.node.get_closest_marker("tipsd")
    if marker is not None:
        opts.update(marker.kwargs)
    return opts


@pytest.fixture(scope="session")
def tipsd_bin(pytestconfig: pytest.Config) -> str:
    """Path of the tipsd binary (--tipsd-bin, ini tipsd_bin, $TIPSD_BIN, PATH, .build/debug)."""
    explicit = pytestconfig.getoption("--tipsd-bin") or pytestconfig.getini("tipsd_bin") or None
    try:
        return find_tipsd(explicit)
    except TipsdNotFound as e:
        if os.environ.get("TIPSD_SKIP_IF_MISSING") not in (None, "", "0"):
            pytest.skip(str(e))
        pytest.fail(str(e), pytrace=False)


@pytest.fixture
def tipsd_daemon(request: pytest.FixtureRequest, tipsd_bin: str) -> Iterator[TipsdDaemon]:
    """A fresh `tipsd serve --socket <tmp>/tipsd.sock --datastore :memory: --clock virtual --allow-testing`
    (``@pytest.mark.tipsd(allow_testing=False)`` leaves testing methods refused, as in production)."""
    opts = _marker_options(request)
    daemon = TipsdDaemon(
        tipsd_bin,
        datastore=opts.get("datastore", ":memory:"),
        clock=opts.get("clock", "virtual"),
        args=opts.get("args", ()),
        env=opts.get("env"),
        allow_testing=opts.get("allow_testing", True),
        startup_timeout=opts.get("startup_timeout", max(15.0, opts.get("timeout", default_timeout()))),
    )
    try:
        daemon.start()
    except TipsdConnectionError as e:
        daemon.cleanup()
        pytest.fail(str(e), pytrace=False)
    crashed: str | None = None
    try:
        yield daemon
        code = daemon.returncode
        if code is not None and not daemon.expected_exit:
            crashed = f"tipsd exited during the test with status {code}\n{daemon.log()}"
    finally:
        daemon.cleanup()
    if crashed:
        pytest.fail(crashed, pytrace=False)


@pytest.fixture
def tipsd_connect(request: pytest.FixtureRequest, tipsd_daemon: TipsdDaemon) -> Iterator[Callable[..., SyncTipsClient]]:
    """Factory: tipsd_connect(framing="content-length") -> another SyncTipsClient of the same daemon."""
    opts = _marker_options(request)
    clients: list[SyncTipsClient] = []

    def connect(**kwargs: Any) -> SyncTipsClient:
        kwargs.setdefault("timeout", opts.get("timeout", default_timeout()))
        kwargs.setdefault("client_name", f"pytest:{request.node.name}")
        client = SyncTipsClient.connect(socket_path=tipsd_daemon.socket_path, **kwargs)
        clients.append(client)
        return client

    yield connect
    for client in reversed(clients):
        try:
            client.close()
        except Exception:
            pass


@pytest.fixture
def tipsd(tipsd_daemon: TipsdDaemon, tipsd_connect: Callable[..., SyncTipsClient]) -> Iterator[SyncTipsClient]:
    """A blocking tipsd client, initialized, connected to a fresh daemon (see tipsd_daemon)."""
    client = tipsd_connect()
    yield client
    # Clean teardown: shutdown + exit on our connection, then the fixture
    # chain closes the client and stops the daemon (SIGTERM, wait).
    if tipsd_daemon.returncode is None and not client.async_client.closed:
        try:
            client.shutdown()
        except (TipsdError, TipsdConnectionError, TimeoutError):
            pass
        tipsd_daemon.expected_exit = True  # the daemon may exit after shutdown
    client.close()
