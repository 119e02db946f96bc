"""Hosted mode's repair net (issue #44): each resident account's merged state is compared now and then with
PostgreSQL's at the same cursor (`--repair-interval`); an account found apart is read again, counted in
`tipsd_hosted_repairs_total` and logged. Here PostgreSQL's copy is changed behind the node's back (an UPDATE of a
stored operation, which no notification announces and which keeps the cursor), and the node must notice and take
PostgreSQL's state; an account left alone is checked and never repaired; an operation stored without a notification
leaves the node behind until the net pulls it.

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import re
import urllib.request

import pytest

from harness import TIMEOUT
from hosted import Hosted, Session

TIP = "welcome.tour"


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


def metric(node, name: str) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.port}/metrics",
        headers={"Authorization": f"Bearer {node.token_file.read_text().strip()}"},
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
        text = reply.read().decode()
    found = re.search(rf"^{name} (\d+)$", text, re.MULTILINE)
    assert found, f"{name} missing from /metrics"
    return int(found.group(1))


async def display_count(session: Session) -> int:
    status = await session.call("tips/status", {"ids": [TIP]})
    return status["tips"][0]["displayCount"]


async def until(condition, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting: {what}"
        await asyncio.sleep(0.1)


def test_an_account_changed_behind_the_node_is_read_again_and_counted(hosted):
    node = hosted.node("repair", extra=["--repair-interval", "1"])

    async def body():
        user = await Session.open(node.socket_path, hosted.token("drifted"))
        quiet = await Session.open(node.socket_path, hosted.token("quiet"))
        for _ in range(2):
            await user.call("tips/displayed", {"id": TIP})
        await quiet.call("tips/displayed", {"id": TIP})
        assert await display_count(user) == 2
        # Both accounts are checked while nothing differs: the net stays idle.
        checks = metric(node, "tipsd_hosted_repair_checks_total")
        await until(lambda: metric(node, "tipsd_hosted_repair_checks_total") >= checks + 2, "both accounts checked")
        assert metric(node, "tipsd_hosted_repairs_total") == 0

        # PostgreSQL's copy changes behind the node's back: the last display operation now says 7.
        cursor, payload = hosted.query(
            "SELECT cursor || E'\\t' || op FROM tipsd.ops WHERE account = 'drifted' AND op LIKE '%\"count\"%' "
            "ORDER BY cursor DESC LIMIT 1"
        ).split("\t", 1)
        changed = re.sub(r'"count":\s*\d+', '"count":7', payload, count=1)
        assert changed != payload, payload
        hosted.query(f"UPDATE tipsd.ops SET op = $${changed}$$ WHERE account = 'drifted' AND cursor = {cursor}")

        await until(lambda: metric(node, "tipsd_hosted_repairs_total") >= 1, "the net repaired the account")
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while await display_count(user) != 7:
            assert asyncio.get_running_loop().time() < deadline, "the node never took PostgreSQL's state"
            await asyncio.sleep(0.1)
        # Only the changed account was repaired, once: checked again since, it agrees.
        checks = metric(node, "tipsd_hosted_repair_checks_total")
        await until(lambda: metric(node, "tipsd_hosted_repair_checks_total") >= checks + 2, "checked again")
        assert metric(node, "tipsd_hosted_repairs_total") == 1
        assert await display_count(quiet) == 1
        await user.close()
        await quiet.close()

    asyncio.run(body())
    log = node.log_text()
    assert "differed from PostgreSQL" in log and "drifted" in log


def test_an_account_left_behind_by_a_notice_never_heard_pulls_and_is_counted(hosted):
    """An operation stored with no notification (as when a committing node's link breaks between its commit and the
    notification it sends after it, schema 11): the node stays behind PostgreSQL's cursor, so the comparison at the
    same cursor never runs; a round later, still behind with its LISTEN link up all along, it pulls — counted."""
    node = hosted.node("repair-behind", extra=["--repair-interval", "1"])

    async def body():
        user = await Session.open(node.socket_path, hosted.token("behind"))
        await user.call("tips/displayed", {"id": TIP})
        assert await display_count(user) == 1
        checks = metric(node, "tipsd_hosted_repair_checks_total")
        await until(lambda: metric(node, "tipsd_hosted_repair_checks_total") >= checks + 2, "the account checked")
        assert metric(node, "tipsd_hosted_repairs_total") == 0

        # Another device's display of the tip, stored behind the node's back: a copy of the node's display operation
        # under another device id, at the next cursor, and no notification.
        hosted.query(
            "WITH shown AS (SELECT * FROM tipsd.ops WHERE account = 'behind' AND op LIKE '%\"count\"%' "
            "ORDER BY cursor DESC LIMIT 1) "
            "INSERT INTO tipsd.ops (account, cursor, device, seq, op) "
            "SELECT account, (SELECT max(cursor) + 1 FROM tipsd.ops WHERE account = 'behind'), 'ghost-device', seq, op "
            "FROM shown"
        )
        hosted.query("UPDATE tipsd.accounts SET last_cursor = last_cursor + 1 WHERE account = 'behind'")

        await until(lambda: metric(node, "tipsd_hosted_repairs_total") >= 1, "the net pulled the account")
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while await display_count(user) != 2:
            assert asyncio.get_running_loop().time() < deadline, "the node never pulled what PostgreSQL stored"
            await asyncio.sleep(0.1)
        # Caught up: checked again since, nothing more to repair.
        checks = metric(node, "tipsd_hosted_repair_checks_total")
        await until(lambda: metric(node, "tipsd_hosted_repair_checks_total") >= checks + 2, "checked again")
        assert metric(node, "tipsd_hosted_repairs_total") == 1
        await user.close()

    asyncio.run(body())
    log = node.log_text()
    assert "stayed behind PostgreSQL" in log and "behind" in log


def test_a_nodes_own_operation_stored_unannounced_is_announced_when_it_reads_the_account(hosted):
    """A commit stored whose answer never came (a broken link, a killed node) is never announced: notifications go
    out after the answer (schema 11). The node whose operation it is announces it when it next reads the account — so
    another node holding the account catches up at once, not a repair round (and its grace) later."""
    first = hosted.node("announce-a", extra=["--repair-interval", "1"])
    second = hosted.node("announce-b", extra=["--repair-interval", "1"])
    event = "search.opened"

    async def lifetime(session: Session) -> int:
        state = await session.call("inspect/state", {})
        return next((e["lifetime"] for e in state["events"] if e["id"] == event), 0)

    async def body():
        watcher = await Session.open(second.socket_path, hosted.token("unheard"))
        await watcher.call("events/donate", {"id": event})
        assert await lifetime(watcher) == 1
        # announce-a's donation, stored as a lost answer leaves it: in tipsd.ops, with no notification.
        hosted.query(
            "WITH donated AS (SELECT * FROM tipsd.ops WHERE account = 'unheard' AND op LIKE '%\"donation\"%' "
            "ORDER BY cursor DESC LIMIT 1) "
            "INSERT INTO tipsd.ops (account, cursor, device, seq, op) "
            "SELECT account, (SELECT max(cursor) + 1 FROM tipsd.ops WHERE account = 'unheard'), 'announce-a', seq, op "
            "FROM donated"
        )
        hosted.query("UPDATE tipsd.accounts SET last_cursor = last_cursor + 1 WHERE account = 'unheard'")
        # announce-a reads the account (its next request for it) and finds its own operation last.
        user = await Session.open(first.socket_path, hosted.token("unheard"))
        assert await lifetime(user) == 2
        deadline = asyncio.get_running_loop().time() + 8  # well within the net's grace (15 s)
        while await lifetime(watcher) != 2:
            assert asyncio.get_running_loop().time() < deadline, "announce-b never heard of announce-a's operation"
            await asyncio.sleep(0.1)
        assert metric(second, "tipsd_hosted_repairs_total") == 0
        await user.close()
        await watcher.close()

    asyncio.run(body())


def test_the_net_is_off_with_interval_zero(hosted):
    node = hosted.node("repair-off", extra=["--repair-interval", "0"])

    async def body():
        user = await Session.open(node.socket_path, hosted.token("unchecked"))
        await user.call("tips/displayed", {"id": TIP})
        await asyncio.sleep(2.5)
        assert metric(node, "tipsd_hosted_repair_checks_total") == 0
        await user.close()

    asyncio.run(body())


def test_a_bad_interval_is_refused_at_start(hosted):
    import os
    import subprocess

    result = subprocess.run(
        [os.environ["TIPSD_BIN"], "serve", "--hosted", hosted.postgres.url, "--repair-interval", "-1"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode != 0
    assert "--repair-interval" in result.stderr and "0 (off)" in result.stderr
