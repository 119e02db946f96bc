"""The Python client against a REAL hosted tipsd (``tipsd serve --hosted``, issue #23) and a real PostgreSQL, started
with protocol/tests/hosted.py's fixtures, with tokens minted by PyJWT (protocol/tests/tokens.py) — never by tipsd's
own code: signing in over the Unix socket (``initialize``'s auth) and the WebSocket (a JWT as
``Authorization: Bearer``; the admin token as the subprotocol), a token refreshed before it expires without losing
an ``observe`` subscription, the daemon ending a session whose token expired (this client does not reconnect: the
connection closes, saying why), and an admin acting on named accounts with the ``accounts_*`` wrappers.

The node runs with ``--jwt-leeway 0``, so a token is refused from its ``exp`` on; the tests that need a token to
expire use tokens valid for a few seconds — 10 s where the client must refresh first, whose refresh margin (a tenth
of the lifetime) leaves it a second to do so. Every wait is for a condition, bounded by TIMEOUT.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pathlib
import sys
import time

import pytest

from conftest import TIMEOUT, run
from tipsd_client import SyncTipsClient, TipsClient, TipsdConnectionError, TokenRequest, UnauthorizedError
from tipsd_client.auth import refresh_delay

# protocol/tests' fixtures (PostgreSQL, PyJWT tokens, hosted nodes); appended, so this suite's modules come first.
sys.path.append(str(pathlib.Path(__file__).resolve().parents[3] / "protocol" / "tests"))

from hosted import ADMIN_TOKEN, Hosted  # noqa: E402


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    # A second app (#48): the same secret file, its own audience and catalog.
    (world.directory / "b.json").write_text('{"tips": [{"id": "b.tip", "title": "B"}]}')
    apps = {"apps": [{"id": "b", "jwtSecretFile": "jwt-secret", "jwtAudience": "app-b", "catalog": "b.json"}]}
    (world.directory / "apps.json").write_text(json.dumps(apps))
    world.node("py-client", extra=["--jwt-leeway", "0", "--apps", str(world.directory / "apps.json")])
    yield world
    world.close()


def node_of(world):
    return world.nodes[0]


def minting(world, account: str, lifetimes: dict[str, float] | None = None):
    """A token provider for ``account`` (``lifetimes[reason]`` seconds, default 3600) recording what it is asked."""
    asked: list[str] = []

    async def provider(request: TokenRequest) -> str:
        asked.append(request.reason)
        return world.token(account, lifetime=(lifetimes or {}).get(request.reason, 3600))

    provider.asked = asked
    return provider


async def until(predicate, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def shows(sub, tip_id: str = "filter.tip") -> None:
    """Waits for the subscription to say ``tip_id`` should display."""
    while not sub.should_display.get(tip_id):
        await sub.next(TIMEOUT)


# ------------------------------------------------------------------------------------------------- signing in


def test_refresh_delay_is_a_minute_or_a_tenth_of_the_lifetime_before_expiry():
    assert refresh_delay(3600, 0) == 3540
    assert refresh_delay(300, 0) == 270
    assert refresh_delay(1003, 1000) == pytest.approx(2.7)
    assert refresh_delay(1000, 1000) == 0
    assert refresh_delay(1000, 2000) == 0, "already expired: at once"


def test_unix_socket_signs_in_inside_initialize(hosted):
    async def body():
        provider = minting(hosted, "py-unix")
        async with TipsClient.connect(socket_path=node_of(hosted).socket_path, token=provider) as client:
            assert client.auth["account"] == "py-unix" and client.auth["admin"] is False
            assert client.auth["expiresAt"] > time.time() + 3000
            assert await client.donate("search.opened") == 1
        assert provider.asked == ["connect"]
        # A refused token fails the connection with the daemon's reason.
        with pytest.raises(UnauthorizedError) as refused:
            await TipsClient.connect(
                socket_path=node_of(hosted).socket_path, token=hosted.token("py-unix", lifetime=-60)
            )
        assert refused.value.data == {"reason": "expired"}

    run(body)


def test_a_client_signs_in_to_another_app(hosted):
    async def body():
        token = hosted.issuer.token("py-apps", alg="HS256", audience="app-b", issuer=None)
        async with TipsClient.connect(socket_path=node_of(hosted).socket_path, token=token, app="b") as client:
            assert client.auth["account"] == "py-apps"
            assert [tip["id"] for tip in (await client.status())] == ["b.tip"]
        # The same token without the app is default's: another audience, refused.
        with pytest.raises(UnauthorizedError):
            await TipsClient.connect(socket_path=node_of(hosted).socket_path, token=token)

    run(body)


def test_websocket_presents_a_jwt_as_bearer_and_the_admin_token_as_subprotocol(hosted):
    url = f"ws://127.0.0.1:{node_of(hosted).port}/"

    async def body():
        token = hosted.token("py-websocket")
        assert len(token) > 115, "a JWT does not fit the tipsd.token.<token> subprotocol"
        async with TipsClient.connect(url=url, token=token) as client:
            assert client.auth["account"] == "py-websocket"
            assert await client.donate("search.opened") == 1
        async with TipsClient.connect(url=url, token=ADMIN_TOKEN) as admin:
            assert admin.auth == {"account": None, "admin": True, "expiresAt": None}

    run(body)


# ------------------------------------------------------------------------------------------------- expiry


def test_a_token_about_to_expire_is_refreshed_and_the_subscription_stays(hosted):
    async def body():
        provider = minting(hosted, "py-refresh", {"connect": 10})
        async with TipsClient.connect(socket_path=node_of(hosted).socket_path, token=provider) as client:
            first = client.auth["expiresAt"]
            async with client.observe(["filter.tip"]) as sub:
                await until(lambda: client.auth["expiresAt"] > first, "the refresh")
                assert provider.asked == ["connect", "refresh"]
                # Past the first token's expiry (the daemon looks every second): an unrefreshed session is gone.
                await until(lambda: time.time() > first + 2, "the first token's expiry to pass")
                for _ in range(3):
                    await client.donate("search.opened")
                await asyncio.wait_for(shows(sub), TIMEOUT)
                assert not client.closed
                assert client.unmatched_errors == []

    run(body)


def test_the_daemon_ends_a_session_whose_token_expired_and_says_why(hosted, caplog):
    async def body():
        provider = minting(hosted, "py-expiry", {"connect": 2})
        client = await TipsClient.connect(socket_path=node_of(hosted).socket_path, token=provider, auto_refresh=False)
        sub = await client.observe(["filter.tip"])
        await asyncio.wait_for(client.wait_closed(), TIMEOUT)
        assert provider.asked == ["connect"]
        assert [(e.code, e.data) for e in client.unmatched_errors] == [(-32013, {"reason": "expired"})]
        assert "tipsd ended the session" in str(client.close_reason)
        assert sub.closed
        with pytest.raises(TipsdConnectionError):
            await client.donate("search.opened")
        await client.close()

    with caplog.at_level(logging.WARNING, logger="tipsd_client"):
        run(body)
    assert any("tipsd ended the session" in r.getMessage() for r in caplog.records)


def test_a_fixed_token_that_expires_cannot_be_refreshed_and_a_warning_says_so(hosted, caplog):
    async def body():
        token = hosted.token("py-fixed", lifetime=600)
        async with TipsClient.connect(socket_path=node_of(hosted).socket_path, token=token) as client:
            assert client._refresh_task is None

    with caplog.at_level(logging.WARNING, logger="tipsd_client"):
        run(body)
    assert any("cannot be refreshed: pass a token provider" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------------------------- admin


def test_an_admin_acts_on_named_accounts_and_uses_the_accounts_wrappers(hosted):
    socket_path = node_of(hosted).socket_path

    async def body():
        user = await TipsClient.connect(socket_path=socket_path, token=minting(hosted, "py-grace"))
        user_sub = await user.observe(["filter.tip"])
        await user.donate("search.opened")
        await user.donate("search.opened")
        admin = await TipsClient.connect(socket_path=socket_path, token=ADMIN_TOKEN)
        assert admin.auth["admin"] is True
        with admin.acting_as("py-grace"):
            assert await admin.status(["filter.tip"]) == await user.status(["filter.tip"])
            admin_sub = await admin.observe(["filter.tip"])
            assert admin_sub.account == "py-grace"
            assert await admin.donate("search.opened") == 3
        await asyncio.wait_for(shows(user_sub), TIMEOUT)
        await asyncio.wait_for(shows(admin_sub), TIMEOUT)
        with admin.acting_as("py-grace"):
            await admin.donate("filter.used")  # filter.tip's goal: recorded in the history's donations
        assert await admin_sub.close() is True, "unobserved on py-grace's account"

        listed, after = [], None
        for _ in range(100):
            page = await admin.accounts_list(after=after, limit=2)
            assert len(page["accounts"]) <= 2
            listed += page["accounts"]
            if page["next"] is None:
                break
            after = page["next"]
        assert {"account": "py-grace", "resident": True} in [
            {"account": a["account"], "resident": a["resident"]} for a in listed
        ]
        exported = await admin.accounts_export("py-grace")
        assert exported["account"] == "py-grace"
        assert [d["event"] for d in exported["donations"]] == ["filter.used"]
        imported = await admin.accounts_import("py-grace-copy", exported)
        assert imported == {
            "account": "py-grace-copy",
            "history": len(exported["history"]) + len(exported["donations"]),
        }
        # The account option: a client whose every account-scoped request acts on one account.
        copy = await TipsClient.connect(socket_path=socket_path, token=ADMIN_TOKEN, account="py-grace-copy")
        with admin.acting_as("py-grace"):
            assert await copy.status() == await admin.status()
        assert await admin.accounts_delete("py-grace-copy") == {"account": "py-grace-copy", "closedSessions": 0}
        for client in (copy, admin, user):
            await client.close()

    run(body)
    # Nothing of it is left but its row, marked erased while the tombstone stands (schema 16).
    assert hosted.query("SELECT count(*) FROM tipsd.snapshots WHERE account = 'py-grace-copy'") == "0\n"
    assert hosted.query("SELECT erased FROM tipsd.accounts WHERE account = 'py-grace-copy'") == "t\n"


def test_the_blocking_client_acts_as_an_account_too(hosted):
    with SyncTipsClient.connect(socket_path=node_of(hosted).socket_path, token=ADMIN_TOKEN, timeout=TIMEOUT) as admin:
        with admin.acting_as("py-blocking"):
            assert admin.donate("search.opened") == 1
            assert admin.donate("search.opened") == 2

    async def body():
        async with TipsClient.connect(
            socket_path=node_of(hosted).socket_path, token=hosted.token("py-blocking")
        ) as user:
            assert await user.donate("search.opened") == 3

    run(body)
