"""The fleet never misses or doubles a change (issue #34): nodes catch up by cursor whenever notifications may have been
missed, and no request waits without end for PostgreSQL.

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from harness import TIMEOUT
from hosted import Hosted, Session


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


def run(coroutine):
    return asyncio.run(coroutine)


def cut_listeners(hosted) -> int:
    """Ends every node's LISTEN link, as a PostgreSQL restart, a failover or an idle-connection killer would."""
    ended = hosted.query(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE 'tipsd-listener%'"
    )
    return int(ended.strip() or 0)


async def until(condition, what: str, seconds: float = TIMEOUT) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened within {seconds} s: {what}"
        await asyncio.sleep(0.01)


def test_a_change_made_while_the_listen_links_were_down_reaches_the_other_nodes_observer(hosted):
    first, second = hosted.node("catch-a"), hosted.node("catch-b")

    async def body():
        actor = await Session.open(first.socket_path, hosted.token("listener-gap"))
        watcher = await Session.open(second.socket_path, hosted.token("listener-gap"))
        observed = await watcher.call("tips/observe", {"ids": ["welcome.tour"]})
        shown = observed["tips"][0]["shouldDisplay"]
        for round_ in range(5):
            await until(lambda: first.healthy() and second.healthy(), "both nodes listening")
            seen = len(watcher.notifications)
            assert cut_listeners(hosted) >= 2
            # Committed on the first node before the links are back: its notification reaches no listener.
            if shown:
                await actor.call("tips/invalidate", {"id": "welcome.tour", "reason": "tipClosed"})
            else:
                await actor.call("tips/resetEligibility", {"id": "welcome.tour"})
            shown = not shown
            await until(
                lambda seen=seen: len(watcher.notifications) > seen, f"round {round_}: the change reached the observer"
            )
            assert watcher.notifications[-1]["params"]["shouldDisplay"] == shown
        await actor.close()
        await watcher.close()

    run(body())
    assert "catching up" in second.log_text()


def test_healthz_and_metrics_report_each_link(hosted):
    node = hosted.node("links")
    health = node.health()["hosted"]
    assert health["links"] == {"writer": "up", "reader": "up", "listener": "up"}
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{node.port}/metrics",
        headers={"Authorization": f"Bearer {node.token_file.read_text().strip()}"},
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
        text = reply.read().decode()
    for link in ("writer", "reader", "listener"):
        assert f'tipsd_hosted_links{{link="{link}"}} 1' in text


async def call_retrying(session: Session, method: str, params: dict):
    """A client's retry: after -32016 (not acknowledged) the same request, with the same idempotency key."""
    from hosted import RpcError

    for _ in range(10):
        try:
            return await session.call(method, params)
        except RpcError as error:
            if error.code != -32016:
                raise
            await asyncio.sleep((error.data or {}).get("retryAfter", 1) / 10)
    raise AssertionError(f"{method} was never acknowledged")


def test_an_idempotency_key_is_one_change_on_every_node(hosted):
    first, second = hosted.node("keys-a"), hosted.node("keys-b")

    async def body():
        on_first = await Session.open(first.socket_path, hosted.token("keyed"))
        on_second = await Session.open(second.socket_path, hosted.token("keyed"))
        done = await on_first.call("events/donate", {"id": "search.opened", "idempotencyKey": "k-1"})
        assert done == {"count": 1, "lifetime": 1}
        # The retry lands on the other node (a failover, a reconnect): the same reply, no second donation (if the
        # other node has not heard of the first commit yet, PostgreSQL refuses the key there: -32016, and the retry
        # gets the reply read back).
        retried = await call_retrying(on_second, "events/donate", {"id": "search.opened", "idempotencyKey": "k-1"})
        assert retried == done
        # Both nodes at once with one key (the first node's commit still in flight when the retry arrives): one of
        # the commits is refused by PostgreSQL's primary key and answered -32016; retried, it gets the first reply.
        racing = [
            call_retrying(session, "events/donate", {"id": "search.opened", "idempotencyKey": "k-2"})
            for session in (on_first, on_second)
        ]
        replies = await asyncio.gather(*racing)
        assert replies[0] == replies[1] == {"count": 2, "lifetime": 2}, replies
        inspect = await on_first.call("inspect/state", {})
        assert [e["lifetime"] for e in inspect["events"] if e["id"] == "search.opened"] == [2]
        await on_first.close()
        await on_second.close()

    run(body())
    stored = hosted.query("SELECT key FROM tipsd.idempotency WHERE account = 'keyed' ORDER BY key")
    assert stored.split() == ["k-1", "k-2"]
