"""The durable queue of changes (``OfflineQueue``, issue #37) against a REAL hosted tipsd and a real PostgreSQL
(protocol/tests/hosted.py's fixtures, tokens minted by PyJWT): 100 donations queued while no node is reachable, across
a restart of the queue's process (the file read back), reach the node once each and in order — though the node is
killed (kill -9) in the middle of the replay, right after it applied a change whose answer the queue never recorded:
the next flush sends that change again with its idempotency key, and the node applies it once. The account's donations
are read back by the admin (``accounts/export``: each kept donation with its info, oldest first).
"""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

from conftest import run
from tipsd_client import OfflineQueue, TipsClient, TipsdConnectionError

sys.path.append(str(pathlib.Path(__file__).resolve().parents[3] / "protocol" / "tests"))

from hosted import ADMIN_TOKEN, Hosted  # noqa: E402

ACCOUNT = "py-offline"


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    world.node("py-offline")
    yield world
    world.close()


async def stored_donations(socket_path: str) -> list[int]:
    """The ``seq`` of each donation of ``search.opened`` the node keeps for the account, oldest first."""
    async with TipsClient.connect(socket_path=socket_path, token=ADMIN_TOKEN) as admin:
        exported = await admin.accounts_export(ACCOUNT)
    return [info["seq"] for _, info in (exported["state"].get("donations") or {}).get("search.opened", [])]


def test_queue_rejects_what_it_cannot_replay_and_survives_a_restart(tmp_path):
    queue = OfflineQueue(tmp_path / "outbox.json")
    with pytest.raises(ValueError):
        queue.add("tips/status", {})
    key = queue.add("tips/invalidate", {"id": "filter.tip", "reason": "tipClosed"})
    queue.donate("search.opened", {"seq": 1})
    again = OfflineQueue(tmp_path / "outbox.json")
    assert [c["method"] for c in again.changes] == ["tips/invalidate", "events/donate"]
    assert again.changes[0]["params"] == {"id": "filter.tip", "reason": "tipClosed", "idempotencyKey": key}
    assert len({c["params"]["idempotencyKey"] for c in again.changes}) == 2
    (tmp_path / "other.json").write_text(json.dumps({"something": "else"}))
    with pytest.raises(ValueError):
        OfflineQueue(tmp_path / "other.json")


def test_flush_sync_with_the_blocking_client(tipsd, tmp_path):
    queue = OfflineQueue(tmp_path / "outbox.json")
    tipsd.register({"id": "t", "title": "T", "rules": [{"event": "e", "count": {"gte": 2}}]})
    for i in range(3):
        queue.donate("e", {"seq": i})
    queue.add("tips/invalidate", {"id": "no-such-tip"})
    results = queue.flush_sync(tipsd)
    assert [r["lifetime"] for r in results[:3]] == [1, 2, 3]
    assert getattr(results[3], "code", None) == -32001, "an unknown tip: refused for good, dropped"
    assert len(OfflineQueue(tmp_path / "outbox.json")) == 0


def test_100_queued_donations_reach_the_node_once_each_in_order_across_restarts(hosted, tmp_path):
    node = hosted.nodes[0]
    path = tmp_path / "outbox.json"

    # No node reachable: the first run queues 50 donations and exits; the second reads them back and adds 50.
    node.stop()
    first = OfflineQueue(path)
    for i in range(50):
        first.donate("search.opened", {"seq": i})

    async def unreachable():
        with pytest.raises((OSError, TipsdConnectionError)):
            await TipsClient.connect(socket_path=node.socket_path, token=hosted.token(ACCOUNT))

    run(unreachable)
    queue = OfflineQueue(path)
    assert len(queue) == 50
    for i in range(50, 100):
        queue.donate("search.opened", {"seq": i})
    assert len(OfflineQueue(path)) == 100

    node.start()

    async def replay_until_killed():
        async with TipsClient.connect(socket_path=node.socket_path, token=hosted.token(ACCOUNT)) as client:
            results = await queue.flush(client, limit=40)
            assert [r["lifetime"] for r in results] == list(range(1, 41))
            # The 41st is applied, but its answer never reaches the queue (as if the process died right then).
            change = queue.changes[0]
            assert (await client.request(change["method"], change["params"]))["lifetime"] == 41
            node.kill()
            with pytest.raises((TipsdConnectionError, OSError)):
                await queue.flush(client)
        assert len(queue) == 60, "the 41st stays queued: its answer was not recorded"

    run(replay_until_killed)
    assert len(OfflineQueue(path)) == 60
    node.start()

    async def replay_the_rest():
        restarted = OfflineQueue(path)
        async with TipsClient.connect(socket_path=node.socket_path, token=hosted.token(ACCOUNT)) as client:
            results = await restarted.flush(client)
            assert len(results) == 60
            assert results[0]["lifetime"] == 41, "the 41st again: the node's first answer, not a second donation"
            assert results[-1]["lifetime"] == 100
        assert len(restarted) == 0
        assert await stored_donations(node.socket_path) == list(range(100))

    run(replay_the_rest)
    assert json.loads(path.read_text()) == {"version": 1, "changes": []}
