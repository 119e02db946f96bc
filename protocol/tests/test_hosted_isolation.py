"""Hosted mode: one account can never hurt another in the group commit, and an idempotency key is one change on every
node (issue #42). Two nodes share one PostgreSQL, as a fleet does.

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


async def until(condition, what: str, seconds: float = TIMEOUT) -> None:
    deadline = time.monotonic() + seconds
    while not await condition():
        assert time.monotonic() < deadline, f"never happened within {seconds} s: {what}"
        await asyncio.sleep(0.02)


async def lifetime(session: Session, event: str = "search.opened") -> int:
    state = await session.call("inspect/state", {})
    return next((e["lifetime"] for e in state["events"] if e["id"] == event), 0)


def donations_stored(hosted, account: str) -> int:
    """The donation operations PostgreSQL holds for the account (whichever node stored them)."""
    return int(
        hosted.query(
            f"SELECT count(*) FROM tipsd.ops WHERE account = '{account}' AND op LIKE '%\"kind\":\"donation\"%'"
        )
    )


def donate(session: Session, key: str | None = None) -> asyncio.Future:
    params: dict = {"id": "search.opened"}
    if key is not None:
        params["idempotencyKey"] = key
    return session.send("events/donate", params)


def test_a_key_raced_on_two_nodes_is_one_change_and_hurts_no_other_account(hosted):
    first, second = hosted.node("race-a"), hosted.node("race-b")
    pairs = 40

    async def body():
        racer = [await Session.open(node.socket_path, hosted.token("racer")) for node in (first, second)]
        others = [
            await Session.open(node.socket_path, hosted.token(f"bystander-{index}"))
            for index in range(4)
            for node in (first, second)
        ]
        # Every account resident on both nodes before the races.
        for session in racer + others:
            await session.call("inspect/state", {})
        bystander_replies = []
        racer_replies = []
        for pair in range(pairs):
            key = f"race-{pair}"
            # The same key on both nodes at once, other accounts' donations in the same turns.
            futures = [donate(racer[0], key), donate(racer[1], key)] + [donate(session) for session in others]
            replies = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
            racer_replies.append(replies[:2])
            bystander_replies += replies[2:]
        failed = [reply for reply in bystander_replies if "error" in reply]
        assert failed == [], f"{len(failed)} of {len(bystander_replies)} bystanders' donations failed: {failed[:3]}"
        for pair, replies in enumerate(racer_replies):
            # Both the first reply: neither an error nor a second donation.
            assert "result" in replies[0] and "result" in replies[1], (pair, replies)
            assert replies[0]["result"] == replies[1]["result"] == {"count": pair + 1, "lifetime": pair + 1}, (
                pair,
                replies,
            )
        # The donation is counted once per key, on both nodes.
        assert await lifetime(racer[0]) == pairs
        await until(lambda: _is(lifetime(racer[1]), pairs), "the second node reads the racer's donations")
        for index, session in enumerate(others):
            await until(lambda session=session: _at_least(lifetime(session), pairs), f"bystander {index} caught up")
        for session in racer + others:
            await session.close()

    run(body())
    stored = hosted.query("SELECT count(*) FROM tipsd.idempotency WHERE account = 'racer'")
    assert int(stored) == pairs
    assert donations_stored(hosted, "racer") == pairs
    for index in range(4):
        assert donations_stored(hosted, f"bystander-{index}") == 2 * pairs


async def _is(value, expected) -> bool:
    return await value == expected


async def _at_least(value, expected) -> bool:
    return await value >= expected


def test_a_key_retried_on_a_node_where_the_account_is_resident_gets_the_first_reply(hosted):
    first, second = hosted.node("retry-a"), hosted.node("retry-b")
    rounds = 10

    async def body():
        on_first = await Session.open(first.socket_path, hosted.token("retrier"))
        on_second = await Session.open(second.socket_path, hosted.token("retrier"))
        await on_second.call("inspect/state", {})  # resident on the second node
        for round_ in range(rounds):
            key = f"retry-{round_}"
            done = await on_first.call("events/donate", {"id": "search.opened", "idempotencyKey": key})
            assert done["lifetime"] == round_ + 1
            # At once, with no retry: the first node's reply, and nothing changes.
            retried = await on_second.call("events/donate", {"id": "search.opened", "idempotencyKey": key})
            assert retried == done, round_
        await until(lambda: _is(lifetime(on_second), rounds), "the second node reads the first node's donations")
        assert await lifetime(on_first) == rounds
        # A second retry, now that both nodes know the key, still changes nothing.
        again = await on_second.call("events/donate", {"id": "search.opened", "idempotencyKey": "retry-0"})
        assert again["lifetime"] == 1
        assert await lifetime(on_second) == rounds
        await on_first.close()
        await on_second.close()

    run(body())
    assert donations_stored(hosted, "retrier") == rounds


def test_one_accounts_failing_statement_leaves_the_others_committed(hosted):
    node = hosted.node("doom")
    rounds = 20
    # PostgreSQL refuses every operation of one account (a trigger): that account's statement fails for real.
    hosted.query(
        "CREATE FUNCTION public.doom() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'doomed account'; END $$; "
        "CREATE TRIGGER doom BEFORE INSERT ON tipsd.ops FOR EACH ROW WHEN (NEW.account = 'doomed') "
        "EXECUTE FUNCTION public.doom();"
    )

    async def body():
        doomed = await Session.open(node.socket_path, hosted.token("doomed"))
        others = [await Session.open(node.socket_path, hosted.token(f"spared-{index}")) for index in range(4)]
        for session in [doomed] + others:
            await session.call("inspect/state", {})
        doomed_errors = 0
        for round_ in range(rounds):
            futures = [donate(doomed)] + [donate(session, f"spared-{round_}") for session in others]
            replies = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
            if "error" in replies[0]:
                assert replies[0]["error"]["code"] == -32016
                doomed_errors += 1
            for index, reply in enumerate(replies[1:]):
                assert "result" in reply, (round_, index, reply)
                assert reply["result"]["lifetime"] == round_ + 1, (round_, index, reply)
        assert doomed_errors == rounds
        # The doomed account's memory was read back: none of its refused donations is left in it.
        await until(lambda: _is(lifetime(doomed), 0), "the doomed account read back")
        hosted.query("DROP TRIGGER doom ON tipsd.ops; DROP FUNCTION public.doom();")
        done = await doomed.call("events/donate", {"id": "search.opened"})
        assert done["lifetime"] == 1
        for session in [doomed] + others:
            await session.close()

    run(body())
    for index in range(4):
        assert donations_stored(hosted, f"spared-{index}") == rounds
    assert "an account's part of the commit was not stored" in node.log_text()
