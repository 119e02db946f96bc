"""Both framings, several clients, and the stdio transport, on the real daemon."""

import asyncio

import pytest

from conftest import TIMEOUT, run
from tipdefs import event_tip
from tipsd_client import SyncTipsClient, TipsClient, TipsdConnectionError, stdio_command

FRAMINGS = ["newline", "content-length"]


@pytest.mark.parametrize("framing", FRAMINGS)
def test_socket_framing(tipsd_connect, framing):
    c = tipsd_connect(framing=framing)
    assert c.framing == framing
    c.register(event_tip("f.tip", "f.event"))
    sub = c.observe("f.tip")
    assert c.donate("f.event", {"text": "naïve\nline"}) == 1
    assert sub.next().should_display is True


def test_donation_from_one_client_notifies_another(tipsd, tipsd_connect):
    other = tipsd_connect(framing="content-length")
    tipsd.register(event_tip("shared.tip", "shared.event"))
    sub = other.observe("shared.tip")
    tipsd.donate("shared.event")
    change = sub.next()
    assert change.id == "shared.tip" and change.should_display is True


def test_closing_one_connection_leaves_others(tipsd, tipsd_connect):
    a = tipsd_connect()
    a.observe()
    a.close()
    assert tipsd.donate("still.alive") == 1


@pytest.mark.parametrize("framing", FRAMINGS)
def test_async_client_on_fixture_daemon(tipsd_daemon, framing):
    async def body():
        async with TipsClient.connect(
            socket_path=tipsd_daemon.socket_path, framing=framing, connect_timeout=TIMEOUT
        ) as c:
            await c.register([event_tip("async.tip", "async.event", n=2)])
            async with c.observe(["async.tip"]) as sub:
                counts = await asyncio.gather(c.donate("async.event"), c.donate("async.event"))
                assert sorted(counts) == [1, 2]
                change = await sub.next(timeout=TIMEOUT)
                assert change.should_display is True
            got = []
            unsubscribe = await c.on_action(got.append)
            await unsubscribe()

    run(body)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_stdio_transport(tipsd_bin, framing):
    async def body():
        c = await TipsClient.connect(stdio_command=stdio_command(tipsd_bin), framing=framing, connect_timeout=TIMEOUT)
        assert c.server_info["name"] == "tipsd"
        await c.register([event_tip("stdio.tip", "stdio.event")])
        sub = await c.observe()
        assert await c.donate("stdio.event") == 1
        assert (await sub.next(timeout=TIMEOUT)).should_display is True
        assert (await c.clock())["virtual"] is True
        proc = c.transport.process
        await c.close(timeout=TIMEOUT)  # shutdown + exit: status 0, as in LSP
        assert proc.returncode == 0
        with pytest.raises(TipsdConnectionError):
            await c.donate("after.close")

    run(body)


def test_stdio_exit_without_shutdown_is_status_1(tipsd_bin):
    async def body():
        c = await TipsClient.connect(stdio_command=stdio_command(tipsd_bin), connect_timeout=TIMEOUT)
        await c.exit()
        await asyncio.wait_for(c.wait_closed(), TIMEOUT)
        proc = c.transport.process
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 1
        await c.close(timeout=TIMEOUT)

    run(body)


def test_sync_client_over_stdio(tipsd_bin):
    with SyncTipsClient.connect(stdio_command=stdio_command(tipsd_bin), timeout=TIMEOUT) as c:
        assert c.donate("sync.stdio") == 1
        assert c.advance_clock(10) == pytest.approx(c.now())
