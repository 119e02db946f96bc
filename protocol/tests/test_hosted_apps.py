"""Apps per deployment (issue #48): `tipsd serve --hosted … --apps FILE` serves the app `default` (the `--catalog`
and `--jwt-*` flags) and the file's apps, each with its own sign-in and catalog, on one fleet over one PostgreSQL.

A session names its app with `initialize`'s `app` (any transport) or the WebSocket path `/apps/<id>`; its token must
verify against that app's keys and audience, so a token of one app never signs in to another; the same `sub` in two
apps is two accounts (PostgreSQL keys them by app and sub); each app's accounts see its own catalog; SIGHUP re-reads
the file. Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time

import pytest

import tokens
from harness import TIMEOUT
from hosted import ADMIN_TOKEN, Hosted, RpcError, Session

INIT = {"protocolVersion": "1.2", "clientInfo": {"name": "apps-test"}}
# The app default's catalog (the demo catalog, --catalog) has no tip named this; app b's only tip is it.
B_TIP = "b.only.tip"
# …and a tip of the same id as the demo catalog's welcome.tour: another app's experiment, never pooled with default's.
B_CATALOG = {
    "tips": [{"id": B_TIP, "title": "Only in app b"}, {"id": "welcome.tour", "title": "b's own tour"}],
    "events": [{"id": "b.opened", "description": "b"}],
}
C_CATALOG = {"tips": [{"id": "c.tip", "title": "Only in app c"}]}


@pytest.fixture(scope="module")
def world():
    world = Hosted()
    directory = world.directory / "app-b"
    directory.mkdir()
    world.b_issuer = tokens.Issuer(directory)
    (world.directory / "b-catalog.json").write_text(json.dumps(B_CATALOG))
    (world.directory / "c-catalog.json").write_text(json.dumps(C_CATALOG))
    world.apps_file = world.directory / "apps.json"
    world.apps_file.write_text(
        json.dumps(
            {
                "apps": [
                    {
                        "id": "b",
                        "jwtSecretFile": "app-b/jwt-secret",
                        "jwtAudience": "app-b",
                        "catalog": "b-catalog.json",
                        "accountMaxSessions": 2,
                    }
                ]
            }
        )
    )
    world.one = world.node("apps-1", extra=["--apps", str(world.apps_file)])
    world.two = world.node("apps-2", extra=["--apps", str(world.apps_file)])
    yield world
    world.close()


def b_token(world, sub: str) -> str:
    return world.b_issuer.token(sub, alg="HS256", audience="app-b", issuer=None)


async def sign_in(socket_path: str, token: str, app: str | None = None) -> tuple[Session, dict]:
    session = await Session.open(socket_path, initialize=False)
    params = {**INIT, "auth": {"token": token}}
    if app is not None:
        params["app"] = app
    result = await session.call("initialize", params)
    return session, result


async def refused(socket_path: str, token: str, app: str | None = None) -> RpcError:
    session = await Session.open(socket_path, initialize=False)
    try:
        params = {**INIT, "auth": {"token": token}}
        if app is not None:
            params["app"] = app
        with pytest.raises(RpcError) as error:
            await session.call("initialize", params)
        return error.value
    finally:
        await session.close()


def test_a_token_of_one_app_never_signs_in_to_another(world):
    async def body():
        # App b's token (its own secret and audience) signs in to b, on either node.
        for node in (world.one, world.two):
            session, result = await sign_in(node.socket_path, b_token(world, "alice"), app="b")
            assert result["auth"]["account"] == "alice", result
            await session.close()
        # …and never to default: not as default's token (another secret), not remembered from b's sign-in.
        error = await refused(world.one.socket_path, b_token(world, "alice"))
        assert error.code == -32013, error
        # Default's token never signs in to b.
        error = await refused(world.one.socket_path, world.issuer.token("alice"), app="b")
        assert error.code == -32013, error
        # An app this deployment does not serve.
        error = await refused(world.one.socket_path, b_token(world, "alice"), app="nope")
        assert error.code == -32602 and "nope" in error.message, error

    asyncio.run(body())


def test_the_same_sub_in_two_apps_is_two_accounts_each_with_its_own_catalog(world):
    async def body():
        a, _ = await sign_in(world.one.socket_path, world.issuer.token("bob"))
        b, _ = await sign_in(world.two.socket_path, b_token(world, "bob"), app="b")
        a_tips = {tip["id"] for tip in (await a.call("tips/status", {}))["tips"]}
        b_tips = {tip["id"] for tip in (await b.call("tips/status", {}))["tips"]}
        assert B_TIP in b_tips and B_TIP not in a_tips and b_tips == {B_TIP, "welcome.tour"}, (a_tips, b_tips)
        for _ in range(3):
            await b.call("events/donate", {"id": "b.opened"})
        await a.call("events/donate", {"id": "search.opened"})
        a_state = await a.call("inspect/state", {})
        b_state = await b.call("inspect/state", {})
        await a.close()
        await b.close()
        return a_state, b_state

    a_state, b_state = asyncio.run(body())
    a_events = {e["id"]: e["count"] for e in a_state["events"]}
    b_events = {e["id"]: e["count"] for e in b_state["events"]}
    assert b_events.get("b.opened") == 3 and "b.opened" not in a_events, (a_events, b_events)
    assert a_events.get("search.opened") == 1 and "search.opened" not in b_events, (a_events, b_events)
    # PostgreSQL keeps them apart: b's account is keyed by app and sub.
    accounts = set(world.query("SELECT account FROM tipsd.accounts WHERE account LIKE '%bob'").split())
    assert {"bob", "b/bob"} <= accounts, accounts


def test_the_admin_names_another_apps_account_and_its_budgets_hold(world):
    async def body():
        user, _ = await sign_in(world.one.socket_path, b_token(world, "carol"), app="b")
        await user.call("events/donate", {"id": "b.opened"})
        admin = await Session.open(world.two.socket_path, ADMIN_TOKEN)
        state = await admin.call("inspect/state", {"account": "b/carol"})
        with pytest.raises(RpcError) as bad:
            await admin.call("inspect/state", {"account": "nope/carol"})
        # App b allows 2 sessions an account (accountMaxSessions), the flags 32.
        second, _ = await sign_in(world.one.socket_path, b_token(world, "carol"), app="b")
        error = await refused(world.one.socket_path, b_token(world, "carol"), app="b")
        await second.close()
        await user.close()
        # Erasing b's carol is audited under app b, by the sub app b knows; default's carol is untouched.
        await admin.call("accounts/delete", {"account": "b/carol"})
        entries = (await admin.call("audit/list", {"app": "b", "limit": 1000}))["entries"]
        await admin.close()
        return state, bad.value, error, entries

    state, bad, error, entries = asyncio.run(body())
    deleted = [e for e in entries if e["action"] == "account.delete"]
    assert [(e["app"], e["detail"]["account"]) for e in deleted] == [("b", "carol")], entries
    assert {e["id"]: e["count"] for e in state["events"]}.get("b.opened") == 1, state
    assert bad.code == -32602, bad
    assert error.code == -32015 and error.data["quota"] == "sessions" and error.data["limit"] == 2, error


def test_the_websocket_path_names_the_app(world):
    pytest.importorskip("websockets")
    from websockets.sync.client import connect

    base = f"ws://127.0.0.1:{world.one.port}"

    def initialize(ws, params: dict) -> dict:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        return json.loads(ws.recv(timeout=TIMEOUT))

    # The token at the upgrade, verified with app b's keys because of the path.
    with connect(f"{base}/apps/b?access_token={b_token(world, 'dave')}", subprotocols=["tipsd.v1"]) as ws:
        reply = initialize(ws, INIT)
        assert reply["result"]["auth"]["account"] == "dave", reply
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tips/status", "params": {}}))
        status = json.loads(ws.recv(timeout=TIMEOUT))
        assert sorted(tip["id"] for tip in status["result"]["tips"]) == sorted([B_TIP, "welcome.tour"]), status
    # The token in initialize, on the path's app; another app named there is refused.
    with connect(f"{base}/apps/b", subprotocols=["tipsd.v1"]) as ws:
        reply = initialize(ws, {**INIT, "auth": {"token": b_token(world, "dave")}})
        assert reply["result"]["auth"]["account"] == "dave", reply
    # An unknown app's path without a token at the upgrade: initialize's sign-in is refused (never default's keys).
    with connect(f"{base}/apps/zz", subprotocols=["tipsd.v1"]) as ws:
        reply = initialize(ws, {**INIT, "auth": {"token": world.issuer.token("dave")}})
        assert reply["error"]["code"] == -32602 and "zz" in reply["error"]["message"], reply
    # A default token on b's path is refused at the upgrade; an unknown app's path too.
    for path, token, status in [("/apps/b", world.issuer.token("dave"), 401), ("/apps/zz", b_token(world, "d"), 404)]:
        import websockets

        with pytest.raises(websockets.exceptions.InvalidStatus) as error:
            connect(f"{base}{path}?access_token={token}", subprotocols=["tipsd.v1"])
        assert error.value.response.status_code == status, path


def test_sighup_reads_the_apps_file_again(world):
    apps = json.loads(world.apps_file.read_text())
    apps["apps"].append(
        {"id": "c", "jwtSecretFile": "app-b/jwt-secret", "jwtAudience": "app-c", "catalog": "c-catalog.json"}
    )
    world.apps_file.write_text(json.dumps(apps))
    world.one.proc.send_signal(signal.SIGHUP)

    async def body():
        deadline = time.monotonic() + TIMEOUT
        token = world.b_issuer.token("erin", alg="HS256", audience="app-c", issuer=None)
        while True:
            session = await Session.open(world.one.socket_path, initialize=False)
            try:
                result = await session.call("initialize", {**INIT, "auth": {"token": token}, "app": "c"})
                status = await session.call("tips/status", {})
                return result, status
            except RpcError:
                assert time.monotonic() < deadline, "app c never served after SIGHUP"
                await asyncio.sleep(0.1)
            finally:
                await session.close()

    result, status = asyncio.run(body())
    assert result["auth"]["account"] == "erin"
    assert [tip["id"] for tip in status["tips"]] == ["c.tip"], status
    # A broken file keeps the apps in force.
    world.apps_file.write_text("{not json")
    world.one.proc.send_signal(signal.SIGHUP)
    time.sleep(0.3)

    async def still():
        session, result = await sign_in(world.one.socket_path, b_token(world, "frank"), app="b")
        await session.close()
        return result

    assert asyncio.run(still())["auth"]["account"] == "frank"


def test_the_fleets_metrics_are_the_app_defaults_alone(world):
    """An admin's metrics/get without an account pools the app default's accounts: app b's welcome.tour (the same id,
    b's own tip) is another experiment, and its displays never enter default's figures."""

    async def body():
        admin = await Session.open(world.one.socket_path, ADMIN_TOKEN)
        before = await admin.call("metrics/get", {"tips": ["welcome.tour"]})
        users = []
        for index in range(3):
            user, _ = await sign_in(world.two.socket_path, b_token(world, f"metrics-{index}"), app="b")
            await user.call("tips/displayed", {"id": "welcome.tour"})
            users.append(user)
        after = await admin.call("metrics/get", {"tips": ["welcome.tour"]})
        for user in users:
            await user.close()
        await admin.close()
        return before, after

    before, after = asyncio.run(body())
    impressions = [report["tips"][0]["overall"]["impressions"] for report in (before, after)]
    assert after["accounts"] == before["accounts"] and impressions[1] == impressions[0], (before, after)


def test_a_catalog_published_for_an_app_reaches_its_observers_only(world):
    """catalogs/publish {app: "b"} switches app b's accounts on every node (their observers told) and leaves default's
    catalog as it was; catalogs/history is per app."""
    hidden = {
        "tips": [
            {"id": B_TIP, "title": "Hidden now", "rules": [{"event": "never.happens", "count": {"gte": 1}}]},
            {"id": "welcome.tour", "title": "b's own tour"},
        ]
    }

    async def body():
        b_user, _ = await sign_in(world.two.socket_path, b_token(world, "grace"), app="b")
        shown = (await b_user.call("tips/observe", {"ids": [B_TIP]}))["tips"][0]["shouldDisplay"]
        a_user, _ = await sign_in(world.one.socket_path, world.issuer.token("grace"))
        a_before = sorted(tip["id"] for tip in (await a_user.call("tips/status", {}))["tips"])
        admin = await Session.open(world.one.socket_path, ADMIN_TOKEN)
        published = await admin.call("catalogs/publish", {"app": "b", "catalog": hidden, "note": "hide b's tip"})
        deadline = time.monotonic() + TIMEOUT
        while not any(
            n["method"] == "tips/shouldDisplayChanged" and n["params"]["id"] == B_TIP for n in b_user.notifications
        ):
            assert time.monotonic() < deadline, "b's observer was not told of the publish"
            await asyncio.sleep(0.02)
        a_after = sorted(tip["id"] for tip in (await a_user.call("tips/status", {}))["tips"])
        history_b = await admin.call("catalogs/history", {"app": "b"})
        history_default = await admin.call("catalogs/history", {"app": "default"})
        for session in (b_user, a_user, admin):
            await session.close()
        return shown, published, a_before, a_after, history_b, history_default

    shown, published, a_before, a_after, history_b, history_default = asyncio.run(body())
    assert shown is True and published["version"] >= 1, published
    assert a_after == a_before and B_TIP not in a_after, (a_before, a_after)
    assert history_b["current"] == published["version"] and len(history_b["versions"]) == 1, history_b
    assert history_default["current"] is None and history_default["versions"] == [], history_default
