"""The HTTP/WebSocket listener (issue #11) against the real daemon, with independent clients: Python `websockets`
and `wsproto` (PyPI), and raw sockets for the bad input a library would refuse to send.

Every daemon message read here goes through the contract Observer (validated against protocol/openrpc.json)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
import websockets
import wsproto
import wsproto.events as we

import harness

FILTER = harness.FILTER_TIP


class WebDaemon:
    """`tipsd serve --socket … --listen 127.0.0.1:0`: the port comes from the log, the token from its file."""

    def __init__(self, daemon_factory, *extra):
        self.daemon = daemon_factory("socket", "--listen", "127.0.0.1:0", *extra)
        deadline = time.monotonic() + harness.TIMEOUT
        while True:
            m = re.search(r"listen=wss?://127\.0\.0\.1:(\d+)/", self.daemon.log())
            if m:
                self.port = int(m.group(1))
                break
            assert self.daemon.proc.poll() is None, self.daemon.log()
            assert time.monotonic() < deadline, "no listen line: " + self.daemon.log()
            time.sleep(0.01)
        with open(os.path.join(self.daemon.tmp.name, "token")) as f:
            self.token = f.read().strip()
        self.url = f"ws://127.0.0.1:{self.port}/"

    @property
    def pid(self) -> int:
        return self.daemon.proc.pid

    def subprotocols(self, token: str | None = None) -> list[str]:
        return ["tipsd.v1", "tipsd.token." + (token or self.token)]

    def healthz(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=harness.TIMEOUT) as r:
            assert r.status == 200
            return json.loads(r.read())


@pytest.fixture
def web(daemon_factory):
    return WebDaemon(daemon_factory)


def init(conn):
    r = conn.request("initialize", init_message()["params"])
    assert "result" in r, r
    return r["result"]


def init_message(mid=1, name="ws-test"):
    return {
        "jsonrpc": "2.0",
        "id": mid,
        "method": "initialize",
        "params": {"protocolVersion": "1.0", "clientInfo": {"name": name}},
    }


class WS:
    """A `websockets` client that checks every daemon message against the contract."""

    def __init__(self, conn, observer):
        self.conn, self.observer = conn, observer
        self.ids = 100
        self.inbox: list = []

    async def send(self, message):
        text = json.dumps(message)
        self.observer.sent(text)
        await self.conn.send(text)

    async def recv(self):
        message = json.loads(await asyncio.wait_for(self.conn.recv(), harness.TIMEOUT))
        self.observer.received(message)
        return message

    async def call(self, method, params=None):
        self.ids += 1
        mid = self.ids
        message = {"jsonrpc": "2.0", "id": mid, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while True:
            m = await self.recv()
            if isinstance(m, dict) and m.get("id") == mid:
                return m
            self.inbox.append(m)

    async def next_notification(self, method):
        for i, m in enumerate(self.inbox):
            if m.get("method") == method:
                return self.inbox.pop(i)
        while True:
            m = await self.recv()
            if m.get("method") == method:
                return m
            self.inbox.append(m)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, harness.TIMEOUT * 3))


# --- Independent clients --------------------------------------------------------------------------------------


def test_filter_tip_over_websockets_with_the_token_as_a_subprotocol(web, observer):
    async def body():
        async with websockets.connect(web.url, subprotocols=web.subprotocols()) as conn:
            assert conn.subprotocol == "tipsd.v1"
            app = WS(conn, observer)
            assert "result" in await app.call("initialize", init_message()["params"])
            await app.call("tips/register", {"tips": [FILTER]})
            observed = await app.call("tips/observe", {"ids": ["filter.tip"]})
            assert observed["result"]["tips"][0]["shouldDisplay"] is False
            subscribed = await app.call("actions/subscribe", {})
            for n in range(3):
                assert (await app.call("events/donate", {"id": "search.opened"}))["result"]["count"] == n + 1
            note = await app.next_notification("tips/shouldDisplayChanged")
            assert note["params"]["shouldDisplay"] is True and note["params"]["id"] == "filter.tip"
            state = await app.call("tips/performAction", {"id": "filter.tip", "actionId": "learn-more"})
            assert state["result"]["status"] == "invalidated" and state["result"]["reason"] == "actionPerformed"
            action = await app.next_notification("tips/actionPerformed")
            assert action["params"]["subscription"] == subscribed["result"]["subscription"]
            assert action["params"]["actions"] == [{"id": "learn-more", "title": "Learn more", "index": 0}]
            hidden = await app.next_notification("tips/shouldDisplayChanged")
            assert hidden["params"]["shouldDisplay"] is False

    run(body())


def test_bearer_token_and_a_batch_in_one_frame(web, observer):
    async def body():
        headers = {"Authorization": f"Bearer {web.token}"}
        async with websockets.connect(web.url, additional_headers=headers) as conn:
            app = WS(conn, observer)
            await app.call("initialize", init_message()["params"])
            batch = [
                {"jsonrpc": "2.0", "id": "a", "method": "clock/now"},
                {"jsonrpc": "2.0", "method": "events/donate", "params": {"id": "quiet"}},
                {"jsonrpc": "2.0", "id": "b", "method": "events/donate", "params": {"id": "quiet"}},
            ]
            await app.send(batch)
            replies = await app.recv()
            assert [r["id"] for r in replies] == ["a", "b"]
            assert replies[1]["result"]["count"] == 2

    run(body())


def test_filter_tip_over_wsproto(web, observer):
    """A second, sans-I/O implementation, driven over a plain socket."""
    sock = socket.create_connection(("127.0.0.1", web.port), timeout=harness.TIMEOUT)
    ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    sock.sendall(ws.send(we.Request(host=f"127.0.0.1:{web.port}", target="/", subprotocols=web.subprotocols())))
    pending: list = []

    def events():
        while not pending:
            data = sock.recv(65536)
            assert data, "the daemon closed the connection"
            ws.receive_data(data)
            buffered = ""
            for event in ws.events():
                if isinstance(event, we.AcceptConnection):
                    pending.append(event)
                elif isinstance(event, we.TextMessage):
                    buffered += event.data
                    if event.message_finished:
                        message = json.loads(buffered)
                        observer.received(message)
                        pending.append(message)
                        buffered = ""
                elif isinstance(event, we.Ping):
                    sock.sendall(ws.send(event.response()))
        return pending.pop(0)

    accepted = events()
    assert isinstance(accepted, we.AcceptConnection) and accepted.subprotocol == "tipsd.v1"

    def call(mid, method, params=None):
        message = {"jsonrpc": "2.0", "id": mid, "method": method, **({"params": params} if params is not None else {})}
        observer.sent(json.dumps(message))
        sock.sendall(ws.send(we.TextMessage(data=json.dumps(message))))
        notes = []
        while True:
            m = events()
            if m.get("id") == mid:
                return m, notes
            notes.append(m)

    call(1, "initialize", init_message()["params"])
    call(2, "tips/register", {"tips": [FILTER]})
    call(3, "tips/observe", {"ids": ["filter.tip"]})
    call(4, "actions/subscribe", {"tipIds": ["filter.tip"]})
    notes = []
    for n in range(3):
        notes += call(10 + n, "events/donate", {"id": "search.opened"})[1]
    reply, more = call(20, "tips/performAction", {"id": "filter.tip", "actionId": "learn-more", "invalidate": False})
    notes += more
    assert [n["params"]["shouldDisplay"] for n in notes if n["method"] == "tips/shouldDisplayChanged"] == [True]
    actions = [n for n in notes if n["method"] == "tips/actionPerformed"]
    assert actions and actions[0]["params"]["actions"] == [{"id": "learn-more", "title": "Learn more", "index": 0}]
    sock.sendall(ws.send(we.CloseConnection(code=1000)))
    sock.close()


# --- HTTP -----------------------------------------------------------------------------------------------------


def test_healthz_counts_connections_by_transport(web):
    before = web.healthz()
    assert before["status"] == "ok" and before["version"] and before["uptimeSeconds"] >= 0
    assert before["connections"] == {"total": 0, "unix": 0, "websocket": 0, "stdio": 0}

    async def body():
        async with websockets.connect(web.url, subprotocols=web.subprotocols()):
            unix = web.daemon.connect()
            # The daemon has accepted both once each answers (a barrier).
            unix.request("clock/now")
            counts = web.healthz()["connections"]
            assert counts["websocket"] == 1 and counts["unix"] == 1 and counts["total"] == 2
            unix.close()

    run(body())


def http_status(port: int, request: bytes) -> tuple[bytes, bytes]:
    """Sends a raw request; returns (status line, everything read until the peer closed or went quiet)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=harness.TIMEOUT)
    s.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return data.split(b"\r\n", 1)[0], data


def upgrade_request(port, token=None, host=None, origin=None, protocols=None, extra=b""):
    key = base64.b64encode(os.urandom(16))
    lines = [
        b"GET / HTTP/1.1",
        b"Host: " + (host or f"127.0.0.1:{port}").encode(),
        b"Upgrade: websocket",
        b"Connection: Upgrade",
        b"Sec-WebSocket-Key: " + key,
        b"Sec-WebSocket-Version: 13",
    ]
    if protocols is None and token is not None:
        protocols = f"tipsd.v1, tipsd.token.{token}"
    if protocols is not None:
        lines.append(b"Sec-WebSocket-Protocol: " + protocols.encode())
    if origin is not None:
        lines.append(b"Origin: " + origin.encode())
    return b"\r\n".join(lines) + b"\r\n" + extra + b"\r\n"


@pytest.mark.parametrize(
    "case,status",
    [
        ("no token", b"HTTP/1.1 401 Unauthorized"),
        ("wrong token", b"HTTP/1.1 401 Unauthorized"),
        ("bad origin", b"HTTP/1.1 403 Forbidden"),
        ("bad host", b"HTTP/1.1 403 Forbidden"),
        ("token without tipsd.v1", b"HTTP/1.1 400 Bad Request"),
    ],
)
def test_refused_upgrades_get_their_status_before_any_upgrade(web, case, status):
    request = {
        "no token": upgrade_request(web.port),
        "wrong token": upgrade_request(web.port, token="0" * 64),
        "bad origin": upgrade_request(web.port, token=web.token, origin="http://evil.example"),
        "bad host": upgrade_request(web.port, token=web.token, host=f"rebind.example:{web.port}"),
        "token without tipsd.v1": upgrade_request(web.port, protocols=f"tipsd.token.{web.token}"),
    }[case]
    line, data = http_status(web.port, request)
    assert line == status, data
    assert b"101" not in line
    assert web.token.encode() not in data
    assert web.token not in web.daemon.log(), "the token never appears in the log"


def test_allowed_and_own_origins_are_accepted(daemon_factory):
    web = WebDaemon(daemon_factory, "--allow-origin", "http://localhost:8081")
    for origin in ("http://localhost:8081", f"http://127.0.0.1:{web.port}", f"http://localhost:{web.port}"):
        line, data = http_status(web.port, upgrade_request(web.port, token=web.token, origin=origin))
        assert line == b"HTTP/1.1 101 Switching Protocols", (origin, data)
    line, _ = http_status(web.port, upgrade_request(web.port, token=web.token, host=f"localhost:{web.port}"))
    assert line == b"HTTP/1.1 101 Switching Protocols"


def test_plain_http_edges(web):
    assert (
        http_status(web.port, f"GET /nope HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\n\r\n".encode())[0]
        == b"HTTP/1.1 404 Not Found"
    )
    assert (
        http_status(
            web.port, f"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nContent-Length: 0\r\n\r\n".encode()
        )[0]
        == b"HTTP/1.1 405 Method Not Allowed"
    )
    assert (
        http_status(web.port, b"GET /healthz HTTP/1.1\r\nHost: rebind.example\r\n\r\n")[0] == b"HTTP/1.1 403 Forbidden"
    )
    # Not HTTP at all: libwebsockets refuses it with 403 (an HTTP/1.0 line: the request never named a version).
    assert http_status(web.port, b"HELLO THERE\r\n\r\n")[0] == b"HTTP/1.0 403 Forbidden"
    # A header block over the limit (8 KiB): libwebsockets closes the connection without a response.
    line, data = http_status(
        web.port,
        f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nX-Pad: ".encode() + b"a" * 20000 + b"\r\n\r\n",
    )
    assert data == b""
    assert web.healthz()["status"] == "ok", "still serving"


# --- Frames ---------------------------------------------------------------------------------------------------


def frame(opcode: int, payload: bytes, mask: bool = True, fin: bool = True) -> bytes:
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def read_frames(sock) -> list:
    """Frames until the peer closes: [(opcode, payload)]; a close frame as ("close", code, reason)."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        data += chunk
    frames, i = [], 0
    while i + 2 <= len(data):
        opcode, n, j = data[i] & 0x0F, data[i + 1] & 0x7F, i + 2
        if n == 126:
            n, j = struct.unpack(">H", data[j : j + 2])[0], j + 2
        elif n == 127:
            n, j = struct.unpack(">Q", data[j : j + 8])[0], j + 8
        payload = data[j : j + n]
        frames.append(
            ("close", struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None, payload[2:])
            if opcode == 8
            else (opcode, payload)
        )
        i = j + n
    return frames


def open_socket(web) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", web.port), timeout=harness.TIMEOUT)
    s.sendall(upgrade_request(web.port, token=web.token))
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


@pytest.mark.parametrize(
    "case,code",
    [
        ("invalid UTF-8", 1007),
        ("binary frame", 1003),
        ("oversized message", 1009),
        ("oversized fragmented message", 1009),
    ],
)
def test_bad_frames_close_with_their_code(web, case, code):
    s = open_socket(web)
    s.sendall(
        {
            "invalid UTF-8": frame(1, b'{"jsonrpc":"2.0","id":1,"method":"clock/now","x":"\xff\xfe"}'),
            "binary frame": frame(2, b'{"jsonrpc":"2.0","id":1,"method":"clock/now"}'),
            "oversized message": frame(1, b"[" + b"1," * 600_000 + b"1]"),
            "oversized fragmented message": frame(1, b"[" + b"1," * 300_000, fin=False)
            + frame(0, b"1," * 300_000, fin=False)
            + frame(0, b"1]"),
        }[case]
    )
    closes = [f for f in read_frames(s) if f[0] == "close"]
    s.close()
    assert closes and closes[0][1] == code, closes
    assert web.healthz()["status"] == "ok"


def test_a_fragmented_message_is_reassembled_and_answered(web, observer):
    s = open_socket(web)
    text = json.dumps(init_message(7)).encode()
    observer.sent(text.decode())
    s.sendall(
        frame(1, text[:10], fin=False) + frame(0, text[10:30], fin=False) + frame(9, b"ping") + frame(0, text[30:])
    )
    s.sendall(frame(8, struct.pack(">H", 1000)))
    frames = read_frames(s)
    s.close()
    texts = [json.loads(p) for op, p, *_ in frames if op == 1]
    for t in texts:
        observer.received(t)
    assert texts and texts[0]["id"] == 7 and "result" in texts[0]
    assert (10, b"ping") in [(f[0], f[1]) for f in frames if f[0] != "close"], "the ping is answered with a pong"


def test_an_unmasked_client_frame_is_answered_as_libwebsockets_4_1_does(web):
    """RFC 6455 §5.1 says a server closes on an unmasked client frame (1002); libwebsockets 4.1 (Debian 12)
    accepts it and unmasks nothing. The behaviour is stated here so a change of library shows up."""
    s = open_socket(web)
    s.sendall(frame(1, json.dumps(init_message(3)).encode(), mask=False))
    s.settimeout(harness.TIMEOUT)
    head = s.recv(2)
    s.close()
    assert head[0] == 0x81, head


def test_daemon_shutdown_closes_with_1001_after_in_flight_replies(web):
    s = open_socket(web)
    s.sendall(frame(1, json.dumps(init_message(1)).encode()))
    s.sendall(
        frame(1, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "events/donate", "params": {"id": "last"}}).encode())
    )
    # Both answered before the signal (a barrier), then SIGTERM.
    s.sendall(frame(1, json.dumps({"jsonrpc": "2.0", "id": 3, "method": "clock/now"}).encode()))
    got = b""
    while got.count(b'"id":') < 3:
        got += s.recv(65536)
    web.daemon.proc.send_signal(signal.SIGTERM)
    closes = [f for f in read_frames(s) if f[0] == "close"]
    s.close()
    assert closes and closes[0][1] == 1001, closes
    assert web.daemon.wait() == 0


# --- Vanishing peers ------------------------------------------------------------------------------------------


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def listening_addresses(pid: int, port: int) -> list[str]:
    """The local addresses of the process's listening TCP sockets on `port`, as /proc/net/tcp{,6} give them."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                address, hex_port = fields[1].split(":")
                if fields[3] == "0A" and int(hex_port, 16) == port and fields[9] in inodes:
                    found.append(address)
    return found


def test_listen_on_127_0_0_1_binds_that_address_only(daemon_factory):
    # libwebsockets 4.1 built with IPv6 bound an IPv4 --listen address to every interface.
    web = WebDaemon(daemon_factory)
    assert listening_addresses(web.pid, web.port) == ["0100007F"]  # 127.0.0.1, in /proc/net/tcp's byte order


def test_a_thousand_abrupt_resets_during_a_notification_burst(daemon_factory, observer):
    # A thousand connections from one address as fast as they go: the per-peer rate limit is not what this tests.
    web = WebDaemon(daemon_factory, "--peer-connection-rate", "0")
    donor = web.daemon.connect()
    init(donor)
    donor.request("parameters/define", {"parameters": [{"id": "flag", "default": False}]})
    donor.request(
        "tips/register", {"tips": [{"id": "toggle.tip", "title": "T", "rules": [{"parameter": "flag", "eq": True}]}]}
    )
    # Warm up, then take the baseline.
    for _ in range(20):
        s = open_socket(web)
        s.close()
    donor.request("clock/now")
    base_fds, base_rss = open_fds(web.pid), proc_status(web.pid, "VmRSS")
    observe = frame(1, json.dumps(init_message(1)).encode()) + frame(
        1, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tips/observe", "params": {}}).encode()
    )
    resets = {"n": 0}
    stop = threading.Event()

    def chaos():
        while resets["n"] < 1000 and not stop.is_set():
            s = socket.create_connection(("127.0.0.1", web.port), timeout=harness.TIMEOUT)
            s.sendall(upgrade_request(web.port, token=web.token))
            head = b""
            while b"\r\n\r\n" not in head:  # frames only after the handshake (RFC 6455 4.1)
                head += s.recv(1)
            s.sendall(observe)
            if resets["n"] % 3:
                s.recv(256)  # mid-response
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # RST
            resets["n"] += 1

    workers = [threading.Thread(target=chaos) for _ in range(2)]
    for w in workers:
        w.start()
    toggles = 0
    while any(w.is_alive() for w in workers):
        donor.request("parameters/set", {"id": "flag", "value": toggles % 2 == 0})
        toggles += 1
    for w in workers:
        w.join()
    assert resets["n"] >= 1000 and toggles > 0

    # Healthy: a fresh WebSocket client is served, and so is the donor.
    async def check():
        async with websockets.connect(web.url, subprotocols=web.subprotocols()) as conn:
            app = WS(conn, observer)
            await app.call("initialize", init_message()["params"])
            assert (await app.call("tips/status", {"ids": ["toggle.tip"]}))["result"]["tips"]

    run(check())
    assert "result" in donor.request("clock/now")
    deadline = time.monotonic() + harness.TIMEOUT
    while open_fds(web.pid) > base_fds and time.monotonic() < deadline:
        time.sleep(0.05)
    assert open_fds(web.pid) <= base_fds, f"fds {open_fds(web.pid)} vs baseline {base_fds}"
    assert proc_status(web.pid, "VmRSS") < base_rss + 16 * 1024, "RSS back near its baseline"
    assert web.healthz()["connections"]["websocket"] == 0


CLIENT = r"""
import json, socket, sys, base64, os
port, token = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: tipsd.v1, tipsd.token.%s\r\n\r\n"
           % (port, key, token)).encode())
def frame(text):
    data = text.encode(); m = os.urandom(4)
    head = bytes([0x81, 0x80 | len(data)]) if len(data) < 126 else bytes([0x81, 0x80 | 126]) + len(data).to_bytes(2, "big")
    return head + m + bytes(b ^ m[i % 4] for i, b in enumerate(data))
head = b""
while b"\r\n\r\n" not in head:  # a client sends frames only after the server's handshake (RFC 6455 4.1)
    head += s.recv(1)
s.sendall(frame(json.dumps({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1.0","clientInfo":{"name":"stopped"}}})))
s.sendall(frame(json.dumps({"jsonrpc":"2.0","id":2,"method":"tips/observe","params":{}})))
print("ready", flush=True)
sys.stdin.read()
"""


def test_a_quiet_client_that_answers_pings_stays_connected(daemon_factory):
    """A healthy observer says nothing for a long time: it answers the daemon's pings (an ordinary client library
    does) and stays connected. Found by issue #34's drill: libwebsockets never reported the empty pongs that answer
    empty pings, and the deadline ran from the last frame heard, so quiet observers were closed every two intervals."""
    import logging

    from websockets.protocol import State

    web = WebDaemon(daemon_factory, "--ping-interval", "0.2")
    pings: list[str] = []

    class Pings(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("< PING"):
                pings.append(record.getMessage())

    logger = logging.getLogger("websockets.client")
    handler = Pings()
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)

    async def body():
        async with websockets.connect(web.url, subprotocols=web.subprotocols(), ping_interval=None) as ws:
            await ws.send(json.dumps(init_message()))
            assert "result" in json.loads(await ws.recv())
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tips/observe", "params": {}}))
            assert "result" in json.loads(await ws.recv())
            # Twenty intervals of silence from the client (the library answers pings by itself).
            deadline = time.monotonic() + 4.0
            while time.monotonic() < deadline:
                assert ws.state is State.OPEN, f"closed after {len(pings)} pings"
                await asyncio.sleep(0.05)
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "clock/now"}))
            assert json.loads(await ws.recv())["id"] == 3

    try:
        asyncio.run(body())
    finally:
        logger.removeHandler(handler)
    assert len(pings) >= 5, pings
    assert "stopped answering pings" not in web.daemon.log()


def test_a_stopped_client_is_found_by_the_ping_timeout(daemon_factory):
    web = WebDaemon(daemon_factory, "--ping-interval", "0.3")
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, str(web.port), web.token], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert client.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + harness.TIMEOUT
        while web.healthz()["connections"]["websocket"] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(client.pid, signal.SIGSTOP)
        # Changes keep coming for it while it is stopped.
        donor = web.daemon.connect()
        init(donor)
        donor.request("tips/register", {"tips": [{"id": "t", "title": "T"}]})
        while web.healthz()["connections"]["websocket"] != 0:
            assert time.monotonic() < deadline, web.daemon.log()
            donor.request("tips/invalidate", {"id": "t"})
            donor.request("tips/resetEligibility", {"id": "t"})
            # Each /healthz is a new connection from 127.0.0.1: polling without a pause passes the per-peer
            # connection rate (200/s, bursts of 400) on a slow machine and the listener answers 429.
            time.sleep(0.02)
        assert "stopped answering pings" in web.daemon.log()
        assert "result" in donor.request("clock/now")
    finally:
        os.kill(client.pid, signal.SIGCONT)
        client.kill()
        client.wait()


# --- Listening addresses and TLS ------------------------------------------------------------------------------


def test_a_non_loopback_listen_address_needs_tls():
    r = subprocess.run(
        [harness.tipsd_bin(), "serve", "--stdio", "--datastore", ":memory:", "--listen", "0.0.0.0:0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=harness.TIMEOUT,
    )
    assert r.returncode == 2
    assert b"needs TLS" in r.stderr


def test_ipv6_loopback(daemon_factory):
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    d = daemon_factory("socket", "--listen", "[::1]:0")
    deadline = time.monotonic() + harness.TIMEOUT
    while not (m := re.search(r"listen=ws://\[::1\]:(\d+)/", d.log())):
        assert time.monotonic() < deadline, d.log()
        time.sleep(0.01)
    port = int(m.group(1))
    token = open(os.path.join(d.tmp.name, "token")).read().strip()

    async def body():
        async with websockets.connect(f"ws://[::1]:{port}/", subprotocols=["tipsd.v1", "tipsd.token." + token]) as c:
            await c.send(json.dumps(init_message()))
            assert "result" in json.loads(await c.recv())

    run(body())


def test_wss_with_a_certificate(daemon_factory, tmp_path, observer):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    web = WebDaemon(daemon_factory, "--tls-cert", str(cert), "--tls-key", str(key))
    context = ssl.create_default_context(cafile=str(cert))
    context.check_hostname = False

    async def body():
        async with websockets.connect(
            f"wss://127.0.0.1:{web.port}/", ssl=context, subprotocols=web.subprotocols()
        ) as conn:
            app = WS(conn, observer)
            assert (await app.call("initialize", init_message()["params"]))["result"]["serverInfo"]["name"] == "tipsd"

    run(body())
    with pytest.raises(websockets.exceptions.InvalidHandshake):
        # Plain ws:// to a TLS listener is not served.
        run(websockets.connect(web.url, subprotocols=web.subprotocols(), open_timeout=5).__aenter__())


def test_the_token_file_is_private_and_tipsd_token_prints_it(web):
    path = os.path.join(web.daemon.tmp.name, "token")
    assert os.stat(path).st_mode & 0o777 == 0o600
    r = subprocess.run(
        [harness.tipsd_bin(), "token", "--token-file", path], capture_output=True, timeout=harness.TIMEOUT
    )
    assert r.returncode == 0 and r.stdout.decode().strip() == web.token
    assert re.fullmatch(r"[0-9a-f]{64}", web.token)
    r = subprocess.run(
        [harness.tipsd_bin(), "token", "--socket", web.daemon.socket_path], capture_output=True, timeout=harness.TIMEOUT
    )
    assert r.stdout.decode().strip() == web.token
