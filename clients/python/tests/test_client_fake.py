"""Client behaviour against a scripted fake server (tests/fake_server.py):
correlation, framing, errors, subscriptions, connection loss, stdio.

No timing: late or out-of-order replies are held by the fake until released,
"nothing else arrived" is checked after a barrier round trip, and every wait is
for a condition, guarded by TIMEOUT only against hanging."""

import asyncio
import os
import stat

import pytest

from conftest import FAKE_STDIO, TIMEOUT, fake_server, run
from tipsd_client import (
    ActionPerformed,
    InvalidParamsError,
    ShouldDisplayChanged,
    SubscriptionClosed,
    SyncTipsClient,
    TipsClient,
    TipsdConnectionError,
    TipsdError,
    UnknownNotification,
    UnknownTipError,
    find_tipsd,
)
from tipsd_client.daemon import TipsdNotFound

FRAMINGS = ["newline", "content-length"]


@pytest.mark.parametrize("framing", FRAMINGS)
def test_connect_initializes_and_uses_framing(framing):
    async def body():
        async with fake_server() as srv:
            async with TipsClient.connect(socket_path=srv.socket_path, framing=framing, client_name="unit") as c:
                assert c.server_info["name"] == "fake-tipsd"
                assert c.protocol_version == "1.0"
                assert c.supports("events/donate")
                init = srv.connections[0].received[0]
                assert init["method"] == "initialize"
                assert init["params"]["protocolVersion"] == "1.3"
                assert init["params"]["clientInfo"]["name"] == "unit"
                echo = await c.request("test/echo", {"k": [1, "é"]})
                assert echo == {"method": "test/echo", "params": {"k": [1, "é"]}, "framing": framing}
                assert c.framing == framing
                assert await c.donate("search.opened") == 1
                assert await c.donate("search.opened", {"screen": "home"}) == 2

    run(body)


def test_out_of_order_replies_are_correlated():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            # Sent in this order (gather starts each request in turn); the fake holds the replies to "a" and "c"
            # until test/release, which sends c's then a's: the replies arrive b, c, a, release.
            results = await asyncio.gather(
                c.request("test/hold", {"key": "a", "value": "a"}),
                c.request("test/echo", {"v": "b"}),
                c.request("test/hold", {"key": "c", "value": "c"}),
                c.request("test/release", {"keys": ["c", "a"]}),
            )
            assert results[0] == "a" and results[1]["params"] == {"v": "b"} and results[2] == "c"
            assert results[3] is None
            conn = srv.connections[0]
            ids = [m["id"] for m in conn.received[1:]]
            assert len(set(ids)) == 4
            replied = [m["id"] for m in conn.sent[1:]]
            assert replied == [ids[1], ids[2], ids[0], ids[3]]  # really out of order

    run(body)


def test_batch_reply_in_any_order():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            out = await c.batch(
                [
                    ("events/donate", {"id": "e"}),
                    ("test/echo", {"x": 1}),
                    ("test/fail", {"code": -32001, "message": "unknown tip"}),
                    "shutdown",
                ]
            )
            assert out[0] == {"count": 1, "lifetime": 1}
            assert out[1]["params"] == {"x": 1}
            assert isinstance(out[2], UnknownTipError)
            assert out[3] is None

    run(body)


def test_errors_raise_typed_tipsd_error():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            with pytest.raises(UnknownTipError) as ei:
                await c.request("test/fail", {"code": -32001, "message": "unknown tip", "data": {"id": "x"}})
            assert ei.value.code == -32001 and ei.value.message == "unknown tip" and ei.value.data == {"id": "x"}
            assert isinstance(ei.value, TipsdError)
            assert "-32001" in str(ei.value)
            with pytest.raises(InvalidParamsError) as ei:
                await c.request("events/donate", {"id": 3})
            assert ei.value.code == -32602 and "params.id" in ei.value.message
            with pytest.raises(TipsdError) as ei:
                await c.request("test/fail", {"code": -31999, "message": "custom"})
            assert type(ei.value) is TipsdError and ei.value.code == -31999
            with pytest.raises(TipsdError) as ei:
                await c.request("no/such")
            assert ei.value.code == -32601

    run(body)


def test_observe_gets_notification_sent_right_after_result():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            sub = await c.observe(["filter.tip"])
            assert sub.initial["tips"][0]["shouldDisplay"] is False
            assert srv.connections[0].received[-1]["params"] == {"ids": ["filter.tip"]}
            change = await sub.next(timeout=TIMEOUT)
            assert isinstance(change, ShouldDisplayChanged)
            assert change.id == "filter.tip" and change.should_display is True and change.seq == 1
            assert sub.is_displayable("filter.tip")
            assert sub.tip_states["filter.tip"]["status"] == "available"
            removed = await sub.close()
            assert removed is True
            assert srv.connections[0].received[-1]["method"] == "tips/unobserve"
            assert srv.connections[0].received[-1]["params"] == {"subscription": sub.id}
            assert sub.closed
            with pytest.raises(SubscriptionClosed):  # ended at once: TIMEOUT only guards against a hang
                await sub.next(timeout=TIMEOUT)
            assert [n async for n in sub] == []
            assert await sub.close() is True  # idempotent: same future

    run(body)


def test_observe_async_with_and_async_for():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            seen = []
            async with c.observe() as sub:
                assert srv.connections[0].received[-1]["params"] == {}
                async for change in sub:
                    seen.append(change)
                    break
            assert sub.closed and seen[0].should_display

    run(body)


def _notify(c, *notes):
    return c.request("test/notify", {"notifications": [{"method": m, "params": p} for m, p in notes]})


def test_seq_gap_is_counted_and_foreign_subscription_dropped():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            sub = await c.observe()
            await sub.next(timeout=TIMEOUT)
            base = {"id": "filter.tip", "status": "pending", "tip": None}
            await _notify(
                c,
                ("tips/shouldDisplayChanged", {**base, "subscription": sub.id, "seq": 4, "shouldDisplay": False}),
                ("tips/shouldDisplayChanged", {**base, "subscription": "other", "seq": 1, "shouldDisplay": True}),
                ("groups/currentTipChanged", {"subscription": sub.id, "seq": 5, "group": "g", "tipId": "filter.tip"}),
            )
            n = await sub.next(timeout=TIMEOUT)
            assert n.seq == 4 and sub.missed == 2
            g = await sub.next(timeout=TIMEOUT)
            assert g.group == "g" and g.tip_id == "filter.tip" and sub.current_tip == {"g": "filter.tip"}
            await sub.expect_none()  # a barrier: the foreign subscription's notification was dropped, nothing else came
            assert sub.should_display == {"filter.tip": False}

    run(body)


def test_on_action_callback_and_unsubscribe_stops_immediately():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            got = []
            async_got = []
            async_ran = asyncio.Event()

            async def acb(a):
                async_got.append(a.tip_id)
                async_ran.set()

            unsubscribe = await c.on_action(got.append, tip_ids="filter.tip")
            unsub2 = await c.on_action(acb)
            assert srv.connections[0].received[-2]["params"] == {"tipIds": ["filter.tip"]}
            assert srv.connections[0].received[-1]["params"] == {}
            sub_id = unsubscribe.subscription.id
            act = {"tipId": "filter.tip", "actions": [{"id": "learn-more", "title": "Learn more", "index": 0}]}
            await _notify(
                c,
                ("tips/actionPerformed", {"subscription": sub_id, "seq": 1, **act}),
                ("tips/actionPerformed", {"subscription": unsub2.subscription.id, "seq": 1, **act}),
            )
            # The fake writes the notifications right after test/notify's reply: a barrier round trip has them all
            # delivered (plain callbacks run on delivery); the coroutine callback runs as its own task.
            await c.barrier()
            await asyncio.wait_for(async_ran.wait(), TIMEOUT)
            assert len(got) == 1 and isinstance(got[0], ActionPerformed)
            assert got[0].actions == act["actions"] and got[0].action_id == "learn-more"
            assert got[0].action_ids == ["learn-more"]
            assert async_got == ["filter.tip"]
            fut = unsubscribe()  # sync call: callbacks stop right now
            # a notification already "in flight" for it is dropped
            c._on_notification("tips/actionPerformed", {"subscription": sub_id, "seq": 2, **act})
            assert len(got) == 1
            assert await fut is True
            assert srv.connections[0].received[-1]["method"] == "actions/unsubscribe"
            await unsub2()

    run(body)


def test_on_action_stream():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            async with c.on_action_stream() as actions:
                await _notify(
                    c,
                    (
                        "tips/actionPerformed",
                        {
                            "subscription": actions.id,
                            "seq": 1,
                            "tipId": "t",
                            "actions": [{"id": "a", "title": "A", "index": 0}],
                        },
                    ),
                )

                async def first():
                    async for a in actions:
                        return a
                    return None  # the stream ended without one

                a = await asyncio.wait_for(first(), TIMEOUT)
                assert a is not None and a.tip_id == "t" and a.action_id == "a"

    run(body)


def test_unknown_notification_reaches_listeners():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            seen = []
            remove = c.on_notification(seen.append)
            await _notify(c, ("x/newThing", {"a": 1}))
            await c.request("test/echo")
            assert isinstance(seen[0], UnknownNotification) and seen[0].params == {"a": 1}
            remove()
            await _notify(c, ("x/newThing", {"a": 2}))
            await c.request("test/echo")
            assert len(seen) == 1

    run(body)


def test_connection_loss_fails_pending_and_ends_subscriptions():
    async def body():
        async with fake_server() as srv:
            c = await TipsClient.connect(socket_path=srv.socket_path)
            sub = await c.observe()
            with pytest.raises(TipsdConnectionError):
                await c.request("test/noReply")
            await asyncio.wait_for(c.wait_closed(), TIMEOUT)
            assert c.closed
            await sub.next(timeout=TIMEOUT)  # the one sent before the drop
            with pytest.raises(SubscriptionClosed):  # ended at once: TIMEOUT only guards against a hang
                await sub.next(timeout=TIMEOUT)
            with pytest.raises(TipsdConnectionError):
                await c.donate("x")
            await c.close()
            await c.close()

    run(body)


def test_close_sends_exit():
    async def body():
        async with fake_server() as srv:
            c = await TipsClient.connect(socket_path=srv.socket_path)
            await c.close()
            await srv.connections[0].wait_ended(TIMEOUT)
            assert srv.connections[0].received[-1] == {"jsonrpc": "2.0", "method": "exit"}
            assert srv.connections[0].closed

    run(body)


def test_request_timeout():
    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            # The fake holds this reply until released, so the timeout fires however slow the machine is.
            with pytest.raises(TimeoutError):
                await c.request("test/hold", {"key": "late", "value": 1}, timeout=0.05)
            # The connection still works, and the reply arriving after the timeout is dropped harmlessly.
            assert await c.request("test/release", {"keys": ["late"]}) is None
            assert (await c.request("test/echo", {"v": 2}))["params"] == {"v": 2}
            assert c.unmatched_errors == []

    run(body)


def test_connect_errors():
    async def body():
        with pytest.raises(TipsdConnectionError):
            await TipsClient.connect(socket_path="/nonexistent/tipsd.sock")
        with pytest.raises(ValueError):
            TipsClient.connect()
        with pytest.raises(ValueError):
            TipsClient.connect(socket_path="x", stdio_command=["y"])
        with pytest.raises(TipsdConnectionError):
            await TipsClient.connect(stdio_command=["/nonexistent/tipsd", "serve", "--stdio"])

    run(body)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_stdio_transport_with_fake(framing):
    async def body():
        c = await TipsClient.connect(stdio_command=FAKE_STDIO, framing=framing, connect_timeout=TIMEOUT)
        assert c.server_info["name"] == "fake-tipsd"
        assert (await c.request("test/echo"))["framing"] == framing
        assert await c.donate("a") == 1
        proc = c.transport.process
        await c.close(timeout=TIMEOUT)
        assert proc.returncode is not None

    run(body)


def test_sync_client_against_fake():
    import threading

    holder = {}
    ready = threading.Event()

    def serve():
        async def main():
            async with fake_server() as srv:
                holder["srv"] = srv
                holder["loop"] = asyncio.get_running_loop()
                holder["stop"] = stop = asyncio.Event()
                ready.set()
                await stop.wait()

        asyncio.run(main())

    t = threading.Thread(target=serve)
    t.start()
    try:
        assert ready.wait(TIMEOUT)
        with SyncTipsClient.connect(socket_path=holder["srv"].socket_path, timeout=TIMEOUT) as c:
            assert c.donate("e") == 1
            assert c.server_info["name"] == "fake-tipsd"
            with c.observe(["filter.tip"]) as sub:
                assert sub.initial["tips"][0]["id"] == "filter.tip"
                assert sub.next().should_display is True
                sub.expect_none()  # barrier: the fake answers clock/now with -32601, after anything sent before
            got = []
            unsubscribe = c.on_action(got.append)
            assert unsubscribe() is True
            with pytest.raises(UnknownTipError):
                c.status(["nope"])
            assert c.batch(["shutdown"]) == [None]
    finally:
        if "stop" in holder:
            holder["loop"].call_soon_threadsafe(holder["stop"].set)
        t.join(TIMEOUT)
        assert not t.is_alive()


def test_find_tipsd_order(tmp_path, monkeypatch):
    fake = tmp_path / "proj" / ".build" / "debug" / "tipsd"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    deep = tmp_path / "proj" / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.delenv("TIPSD_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert find_tipsd(start=deep) == str(fake)
    with pytest.raises(TipsdNotFound):
        find_tipsd(start=tmp_path)
    other = tmp_path / "other-tipsd"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    monkeypatch.setenv("TIPSD_BIN", str(other))
    assert find_tipsd(start=deep) == str(other)
    monkeypatch.setenv("TIPSD_BIN", str(tmp_path / "missing"))
    with pytest.raises(TipsdNotFound):
        find_tipsd(start=deep)
    monkeypatch.delenv("TIPSD_BIN")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    onpath = bindir / "tipsd"
    onpath.write_text("#!/bin/sh\n")
    onpath.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    assert find_tipsd(start=deep) == str(onpath)
    assert os.path.basename(find_tipsd(str(fake))) == "tipsd"


def test_a_change_is_retried_with_its_idempotency_key():
    """Issue #34: every change carries a fresh key; after -32016 (outcome unknown) the client sends it again with the
    same key, and the daemon applies it once."""

    async def body():
        async with fake_server() as srv, TipsClient.connect(socket_path=srv.socket_path) as c:
            assert await c.donate("e", {"failFirst": True}) == 1
            assert await c.donate("e") == 2
            (conn,) = srv.connections
            first, retried, second = conn.keys
            assert first == retried and isinstance(first, str) and len(first) >= 16
            assert second != first
            # An explicit key is sent as it is: a repeat gets the first reply.
            assert await c.request("events/donate", {"id": "e", "idempotencyKey": "mine"}) == {
                "count": 3,
                "lifetime": 3,
            }
            assert await c.request("events/donate", {"id": "e", "idempotencyKey": "mine"}) == {
                "count": 3,
                "lifetime": 3,
            }

    run(body)
