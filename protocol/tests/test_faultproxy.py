"""The drill's fault proxy (faultproxy.py) on its own, against a loopback echo server: each mode does what the drill
relies on. Every wait is for a condition or a socket timeout well past what the mode promises."""

from __future__ import annotations

import socket
import socketserver
import threading
import time

import pytest

from faultproxy import FaultProxy


class Echo(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                while data := self.request.recv(65536):
                    self.request.sendall(data)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server_address[1]


@pytest.fixture
def echo():
    server = Echo()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(echo):
    p = FaultProxy(echo.port, name="test")
    yield p
    p.close()


def connect(proxy: FaultProxy, timeout: float = 5) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=timeout)
    return s


def roundtrip(s: socket.socket, data: bytes = b"ping") -> bytes:
    s.sendall(data)
    received = b""
    while len(received) < len(data):
        chunk = s.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def closed_by_peer(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_it_listens_on_loopback_only(proxy):
    assert proxy.bound_address == "127.0.0.1"


def test_pass_and_delay(proxy):
    s = connect(proxy)
    assert roundtrip(s) == b"ping"
    proxy.delay(300)
    started = time.monotonic()
    assert roundtrip(s) == b"ping"
    assert time.monotonic() - started >= 0.55  # both ways
    proxy.heal()
    assert roundtrip(s) == b"ping"


def test_drop_holds_bytes_until_healed(proxy):
    s = connect(proxy, timeout=0.5)
    proxy.drop()
    s.sendall(b"held")
    with pytest.raises(TimeoutError):
        s.recv(4)
    proxy.heal()
    s.settimeout(5)
    assert s.recv(4) == b"held"


def test_cut_closes_every_connection_and_refuses_new_ones_until_healed(proxy):
    s = connect(proxy)
    assert roundtrip(s) == b"ping"
    proxy.cut()
    assert closed_by_peer(s)
    t = connect(proxy)
    assert closed_by_peer(t)
    proxy.heal()
    u = connect(proxy)
    assert roundtrip(u) == b"ping"


def test_blackhole_forwards_nothing_and_healing_closes_what_it_broke(proxy):
    s = connect(proxy, timeout=0.5)
    assert roundtrip(s) == b"ping"
    proxy.blackhole()
    s.sendall(b"lost")
    with pytest.raises(TimeoutError):
        s.recv(4)
    fresh = connect(proxy, timeout=0.5)
    fresh.sendall(b"gone")
    with pytest.raises(TimeoutError):
        fresh.recv(4)
    proxy.heal()
    s.settimeout(5)
    fresh.settimeout(5)
    assert closed_by_peer(s) and closed_by_peer(fresh)
    assert roundtrip(connect(proxy)) == b"ping"


def test_retarget_moves_new_connections_and_closes_old_ones(proxy):
    other = Echo()
    try:
        s = connect(proxy)
        assert roundtrip(s) == b"ping"
        proxy.retarget(other.port)
        assert closed_by_peer(s)
        # Held open (a socket nothing refers to may be closed at once), so the proxy counts it.
        moved = connect(proxy)
        assert roundtrip(moved) == b"ping"
        deadline = time.monotonic() + 5
        while proxy.connections != 1:
            assert time.monotonic() < deadline, proxy.connections
            time.sleep(0.01)
    finally:
        other.shutdown()
        other.server_close()
