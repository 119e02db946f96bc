"""Hosted mode: a commit whose outcome the node could not learn never lands under a state read after it (issue #44).

A node gives up on its writer connection when PostgreSQL does not answer within --postgres-timeout; the backend may
still hold the commit it was sent (here: a trigger makes its insert slow) and commit it later. The node reads the
account again at once — before this fix, that read could precede the late commit, and the node's next change of the
same register (its display count, the node being one device of the account) then overwrote the late one: a change
whose key was stored (a retry is answered as done) missing from the account. Now a load first ends the lost
connection's backend and waits for it to exit, so the late commit has landed or never will.

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio

import pytest

from harness import TIMEOUT
from hosted import Hosted, Session

TIP = "welcome.tour"


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


async def until_answered(session: Session, method: str, params: dict) -> dict:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        reply = await asyncio.wait_for(session.send(method, params), TIMEOUT)
        if "result" in reply:
            return reply["result"]
        assert reply["error"]["code"] == -32016, reply
        assert asyncio.get_running_loop().time() < deadline, reply
        await asyncio.sleep(0.05)


async def display_count(session: Session) -> int:
    status = await session.call("tips/status", {"ids": [TIP]})
    return status["tips"][0]["displayCount"]


def test_a_commit_given_up_on_never_lands_under_a_later_read(hosted):
    node = hosted.node("fence", extra=["--postgres-timeout", "1"])
    # The next operation row of the account sleeps 6 s in its insert (once): the node gives up on the commit after
    # about a second, while its backend goes on.
    # (`nextval` is not rolled back: the sleep happens once even when its transaction is ended.)
    hosted.query(
        "CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.account = 'fenced' AND to_regclass('public.slow_armed') IS NOT NULL THEN "
        "IF nextval('public.slow_armed') = 1 THEN PERFORM pg_sleep(6); END IF; END IF; RETURN NEW; END $$;"
        "CREATE TRIGGER slow BEFORE INSERT ON tipsd.ops FOR EACH ROW EXECUTE FUNCTION public.slow();"
    )

    async def body():
        user = await Session.open(node.socket_path, hosted.token("fenced"))
        first = await user.call("tips/displayed", {"id": TIP, "idempotencyKey": "k1"})
        assert await display_count(user) == 1, first
        hosted.query("CREATE SEQUENCE public.slow_armed")
        given_up = await asyncio.wait_for(user.send("tips/displayed", {"id": TIP, "idempotencyKey": "k2"}), TIMEOUT)
        assert given_up.get("error", {}).get("code") == -32016, given_up
        # As soon as the node takes changes again, while the given-up commit may still be sleeping in its backend: a
        # new change, then the retry (a client retries a -32016 until it is answered).
        await until_answered(user, "tips/displayed", {"id": TIP, "idempotencyKey": "k3"})
        retried = await until_answered(user, "tips/displayed", {"id": TIP, "idempotencyKey": "k2"})
        await asyncio.sleep(7)  # past the trigger's sleep: a commit that was going to land has
        keys = int(hosted.query("SELECT count(*) FROM tipsd.idempotency WHERE account = 'fenced'"))
        fresh = await Session.open(node.socket_path, hosted.token("fenced"))
        count = await display_count(user)
        await user.close()
        await fresh.close()
        return keys, count, retried

    try:
        keys, count, retried = asyncio.run(body())
    finally:
        hosted.query(
            "DROP TRIGGER IF EXISTS slow ON tipsd.ops; DROP FUNCTION IF EXISTS public.slow(); DROP SEQUENCE IF EXISTS public.slow_armed;"
        )
    # Every key stored is one display in the account: k1, k2 (stored once, by its retry or — had the given-up commit
    # landed — by that commit, the retry then answered with its reply) and k3.
    assert keys == 3
    assert count == 3, f"{keys} keys stored, the account shows {count} displays (the retry answered {retried})"
    # And a node reading the account afresh agrees.
    other = hosted.node("fence-reader")

    async def reread():
        session = await Session.open(other.socket_path, hosted.token("fenced"))
        value = await display_count(session)
        await session.close()
        return value

    assert asyncio.run(reread()) == 3
