"""The WebSocket transport (``TipsClient.connect(url=..., token=...)``) against the daemon's ``--listen``
listener: the token as a string or a provider (plain or async), seed 000's FilterTip over it, and refusals that
never quote the token."""

import asyncio
import os
import re
import time

import pytest

from conftest import TIMEOUT, run
from tipdefs import FILTER_TIP
from tipsd_client import SyncTipsClient, TipsClient, TipsdConnectionError, TokenRequest

pytestmark = pytest.mark.tipsd(args=["--listen", "127.0.0.1:0"])


def listener(daemon):
    """The listener's URL (from the daemon's log) and the token (from the file beside its socket)."""
    deadline = time.monotonic() + TIMEOUT
    while not (m := re.search(r"listen=(ws://127\.0\.0\.1:\d+/)", daemon.log())):
        assert time.monotonic() < deadline, f"no listen line in the daemon's log:\n{daemon.log()}"
        time.sleep(0.01)
    with open(os.path.join(os.path.dirname(daemon.socket_path), "token")) as f:
        return m.group(1), f.read()


def test_filter_tip_over_the_websocket_with_the_token_printed_by_tipsd_token(tipsd_daemon):
    url, token = listener(tipsd_daemon)

    async def body():
        async with TipsClient.connect(url=url, token=token, connect_timeout=TIMEOUT) as c:
            assert c.framing == "websocket"
            assert c.transport.describe() == f"websocket {url}"
            await c.register([FILTER_TIP])
            actions = []
            unsubscribe = await c.on_action(actions.append)
            async with c.observe("filter.tip") as sub:
                assert sub.is_displayable("filter.tip") is False
                for expected in (1, 2, 3):
                    assert await c.donate("search.opened") == expected
                change = await sub.next(timeout=TIMEOUT)
                assert (change.id, change.should_display) == ("filter.tip", True)
            await c.perform_action("filter.tip", "learn-more")
            await c.barrier()
            assert [(a.tip_id, a.actions) for a in actions] == [
                ("filter.tip", [{"id": "learn-more", "title": "Learn more", "index": 0}])
            ]
            await unsubscribe()
            # A message bigger than one frame header's 16-bit length, both ways.
            big = {"note": "x" * 70_000}
            assert await c.donate("big.event", big) == 1
            assert (await c.inspect_state())["events"]

    run(body)


def test_a_token_provider_plain_or_async_is_asked_before_connecting(tipsd_daemon):
    url, token = listener(tipsd_daemon)
    asked = []

    def plain(request):
        asked.append(("plain", request))
        return token

    async def fetched(request):
        asked.append(("async", request))
        await asyncio.sleep(0)  # as a fetch or a keychain read would
        return token

    async def body():
        for provider in (plain, fetched):
            async with TipsClient.connect(url=url, token=provider, connect_timeout=TIMEOUT) as c:
                assert await c.donate("e") >= 1

    run(body)
    assert asked == [("plain", TokenRequest("connect")), ("async", TokenRequest("connect"))]
    # The blocking client takes the same arguments.
    with SyncTipsClient.connect(url=url, token=lambda request: token, timeout=TIMEOUT) as c:
        assert c.clock()["virtual"] is True


def test_refusals_name_the_problem_never_the_token(tipsd_daemon):
    url, token = listener(tipsd_daemon)
    wrong = "0" * 64

    def failing(request):
        raise RuntimeError("the keychain is locked")

    cases = [
        (wrong, r"refused the WebSocket upgrade: HTTP 401.*the token is the one `tipsd token` prints"),
        (lambda request: wrong, r"HTTP 401"),
        (failing, r"the tipsd token provider failed: the keychain is locked"),
        (lambda request: 42, r"the tipsd token provider returned int, not a string"),
        ("not a token", r"the tipsd token is malformed"),
        ("", r"no tipsd token given"),
    ]

    async def body():
        for given, expected in cases:
            with pytest.raises(TipsdConnectionError, match=expected) as refused:
                await TipsClient.connect(url=url, token=given, connect_timeout=TIMEOUT)
            assert wrong not in str(refused.value) and token.strip() not in str(refused.value)
            assert "not a token" not in str(refused.value)

    run(body)
    assert token.strip() not in tipsd_daemon.log()


def test_connect_takes_exactly_one_address():
    with pytest.raises(ValueError, match="exactly one of"):
        TipsClient.connect("/tmp/tipsd.sock", url="ws://127.0.0.1:8787/")
    # A token goes with any address: over the Unix socket and stdio it signs in inside initialize (hosted mode,
    # tests/test_hosted.py), so it is no longer refused without url=.
    TipsClient.connect("/tmp/tipsd.sock", token="t")
