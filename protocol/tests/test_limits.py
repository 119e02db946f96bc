"""Multi-connection behaviour and limits over the Unix socket (things one transcript connection cannot show)."""

import json
import socket
import time

import pytest

import harness

INIT = {"protocolVersion": "1.0", "clientInfo": {"name": "limits"}}


def init(conn):
    r = conn.request("initialize", INIT)
    assert "result" in r, r
    return r["result"]


def test_too_many_connections(daemon_factory):
    d = daemon_factory("socket", "--max-connections", "1")
    first = d.connect()
    init(first)
    second = d.connect()
    m = second.receive()
    assert m["id"] is None and m["error"]["code"] == -32010, m
    with pytest.raises(EOFError):
        second.receive()
    assert first.request("clock/now")["result"]["virtual"] is True


@pytest.mark.parametrize("framing", ["newline", "content-length"])
def test_every_client_sees_every_change(daemon_factory, framing):
    d = daemon_factory("socket")
    a, b = d.connect(framing), d.connect("newline")
    init(a), init(b)
    a.request("tips/register", {"tips": [harness.FILTER_TIP]})
    sub = b.request("tips/observe", {"ids": ["filter.tip"]})["result"]["subscription"]
    act = b.request("actions/subscribe")["result"]["subscription"]
    for _ in range(3):
        a.request("events/donate", {"id": "search.opened"})
    n = b.receive()
    assert n["method"] == "tips/shouldDisplayChanged" and n["params"]["subscription"] == sub and n["params"]["seq"] == 1
    assert n["params"]["shouldDisplay"] is True
    a.request("tips/performAction", {"id": "filter.tip", "actionId": "learn-more"})
    got = sorted((b.receive(), b.receive()), key=lambda m: m["method"])
    assert got[0]["method"] == "tips/actionPerformed" and got[0]["params"]["subscription"] == act
    assert got[0]["params"]["actions"] == [{"id": "learn-more", "title": "Learn more", "index": 0}]
    assert got[1]["params"]["seq"] == 2 and got[1]["params"]["reason"] == "actionPerformed"
    a.expect_nothing()


LOCALIZED_TIP = dict(
    harness.FILTER_TIP,
    rules=[{"event": "search.opened", "count": {"gte": 1}}],
    localizations={
        "ja": {"title": "もっと絞り込めます", "actions": {"learn-more": "詳しく見る"}},
        "zh-Hans": {"title": "可以进一步筛选"},
    },
)


def test_each_client_gets_tip_copy_in_its_locale(daemon_factory):
    """TipContent and tips/actionPerformed follow each receiving connection's initialize locale."""
    d = daemon_factory("socket")
    ja, zh, fr, none = d.connect(), d.connect("content-length"), d.connect(), d.connect()
    for conn, locale in ((ja, "ja_JP"), (zh, "zh-Hans-CN"), (fr, "fr"), (none, None)):
        params = dict(INIT, locale=locale) if locale else INIT
        assert "result" in conn.request("initialize", params)
    registered = ja.request("tips/register", {"tips": [LOCALIZED_TIP]})["result"]["tips"][0]["tip"]
    assert (registered["title"], registered["locale"]) == ("もっと絞り込めます", "ja")
    assert registered["actions"][0]["title"] == "詳しく見る"
    expected = {  # (title, action title, locale): zh-Hans has no action title, so the tip's own is used
        "ja": ("もっと絞り込めます", "詳しく見る", "ja"),
        "zh": ("可以进一步筛选", "Learn more", "zh-Hans"),
        "fr": ("You can narrow this down", "Learn more", None),
        "none": ("You can narrow this down", "Learn more", None),
    }
    clients = {"ja": ja, "zh": zh, "fr": fr, "none": none}
    for name, conn in clients.items():
        tip = conn.request("tips/observe", {"ids": ["filter.tip"]})["result"]["tips"][0]["tip"]
        assert (tip["title"], tip["actions"][0]["title"], tip["locale"]) == expected[name], name
        conn.request("actions/subscribe")
    early = {name: [] for name in clients}  # notifications the requesting client got before its reply
    fr.request("events/donate", {"id": "search.opened"}, notifications=early["fr"])
    for name, conn in clients.items():
        n = early[name].pop() if early[name] else conn.receive()
        assert n["method"] == "tips/shouldDisplayChanged" and n["params"]["shouldDisplay"] is True, n
        tip = n["params"]["tip"]
        assert (tip["title"], tip["actions"][0]["title"], tip["locale"]) == expected[name], name
    zh.request(
        "tips/performAction",
        {"id": "filter.tip", "actionId": "learn-more", "invalidate": False},
        notifications=early["zh"],
    )
    for name, conn in clients.items():
        n = early[name].pop() if early[name] else conn.receive()
        assert n["method"] == "tips/actionPerformed", n
        assert n["params"]["actions"] == [{"id": "learn-more", "title": expected[name][1], "index": 0}], name
        conn.expect_nothing()


def wait_until_a_slot_is_free(d):
    """Connects (and initializes) a new client, retrying while the daemon refuses it with -32010. Under
    --max-connections this waits for the daemon to have handled an earlier client's disconnect: freeing the slot is
    part of the same step that drops that client's subscriptions. TIMEOUT is only a hang guard."""
    deadline = time.monotonic() + harness.TIMEOUT
    while True:
        c = d.connect()
        try:
            c.send({"jsonrpc": "2.0", "id": "probe", "method": "initialize", "params": INIT})
        except OSError:
            pass  # refused and already closed by the daemon: its -32010 is still there to read
        m = c.receive()
        if m.get("id") == "probe":
            assert "result" in m, m
            return c
        assert m["id"] is None and m["error"]["code"] == -32010, m
        with pytest.raises(EOFError):
            c.receive()
        c.close()
        assert time.monotonic() < deadline, f"the daemon still refused a new client after {harness.TIMEOUT} s"


def test_subscriptions_are_per_connection_and_dropped_on_disconnect(daemon_factory):
    d = daemon_factory("socket", "--max-connections", "2")
    a, b = d.connect(), d.connect()
    init(a), init(b)
    a.request("tips/register", {"tips": [harness.FILTER_TIP]})
    sub = a.request("tips/observe")["result"]["subscription"]
    # another connection cannot remove it
    assert b.request("tips/unobserve", {"subscription": sub})["result"] == {"removed": False}
    # (an id no connection was ever given is an error, not {removed: false})
    assert b.request("tips/unobserve", {"subscription": "sub-99"})["error"]["code"] == -32003
    a.close()
    # Wait until the daemon has noticed the disconnect (its connection slot is free again), rather than sleeping.
    wait_until_a_slot_is_free(d).close()
    for _ in range(3):
        b.request("events/donate", {"id": "search.opened"})
    assert b.request("tips/status", {"ids": ["filter.tip"]})["result"]["tips"][0]["shouldDisplay"] is True
    b.expect_nothing()


def test_exit_over_socket_closes_only_that_connection(daemon_factory):
    d = daemon_factory("socket")
    a, b = d.connect(), d.connect("content-length")
    init(a), init(b)
    a.send({"jsonrpc": "2.0", "method": "exit"})
    with pytest.raises(EOFError):
        a.receive()
    assert b.request("clock/now")["result"]["now"] == 1000000
    assert d.proc.poll() is None


def test_shutdown_is_per_connection(daemon_factory):
    d = daemon_factory("socket")
    a, b = d.connect(), d.connect()
    init(a), init(b)
    assert a.request("shutdown")["result"] is None
    assert a.request("clock/now")["error"]["code"] == -32006
    assert b.request("clock/now")["result"]["virtual"] is True


@pytest.mark.parametrize("framing", ["newline", "content-length"])
def test_oversized_message_gets_32600_and_close(daemon_factory, framing):
    d = daemon_factory("socket", "--max-message-size", "1024")
    c = d.connect(framing)
    init(c)
    c.send({"jsonrpc": "2.0", "id": 2, "method": "events/donate", "params": {"id": "x" * 2000}})
    m = c.receive()
    assert m["id"] is None and m["error"]["code"] == -32600, m
    with pytest.raises(EOFError):
        c.receive()


def test_unrecognized_framing_is_refused(daemon_factory):
    d = daemon_factory("socket")
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.socket_path)
    s.sendall(b"hello\n")
    s.settimeout(harness.TIMEOUT)
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    m = json.loads(data.decode().strip())
    assert m["id"] is None and m["error"]["code"] == -32600, m


def test_partial_message_times_out(daemon_factory):
    d = daemon_factory("socket", "--partial-timeout", "1")
    c = d.connect()
    init(c)
    c._write(b'{"jsonrpc":"2.0","id":2,')
    m = c.receive()  # after --partial-timeout's 1 s; harness.TIMEOUT only guards against it never firing
    assert m["id"] is None and m["error"]["code"] == -32600, m
    with pytest.raises(EOFError):
        c.receive()


def test_stdin_closing_stops_the_daemon(daemon_factory):
    d = daemon_factory("stdio")
    c = d.connect()
    init(c)
    c.close()
    assert d.wait() == 0
