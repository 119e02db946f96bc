"""Hosted mode (`tipsd serve --hosted`) against a real PostgreSQL started for the tests, with tokens minted by PyJWT
(tokens.py) — never by tipsd's own code.

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import random
import signal
import subprocess
import time

import pytest

from harness import REPO, TIMEOUT, tipsd_bin
from hosted import ADMIN_TOKEN, Hosted, RpcError, Session

ACCOUNTS = int(os.environ.get("TIPSD_HOSTED_ACCOUNTS", "1000"))
TIPS = ["welcome.tour", "filter.tip", "advanced-search.tip", "show-location.tip", "rotate-map.tip"]
EVENTS = ["search.opened", "search.performed", "filter.used", "map.opened", "tour.finished", "advanced-search.used"]


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


def run(coroutine):
    return asyncio.run(coroutine)


def operations(rng: random.Random) -> list[tuple[str, dict]]:
    """A random session of one user: donations, impressions, actions, invalidations, a parameter."""
    ops: list[tuple[str, dict]] = []
    for _ in range(rng.randint(6, 12)):
        roll = rng.random()
        if roll < 0.55:
            ops.append(("events/donate", {"id": rng.choice(EVENTS)}))
        elif roll < 0.7:
            ops.append(("tips/displayed", {"id": rng.choice(TIPS), "duration": rng.randint(0, 30)}))
        elif roll < 0.8:
            ops.append(("tips/performAction", {"id": "filter.tip", "actionId": "learn-more", "invalidate": False}))
        elif roll < 0.9:
            ops.append(("tips/invalidate", {"id": rng.choice(TIPS), "reason": "tipClosed"}))
        else:
            ops.append(("parameters/set", {"id": "isLoggedIn", "value": rng.random() < 0.5}))
    return ops


async def state_of(session: Session, account: str | None = None) -> dict:
    """Everything an account's state says, without instants: each tip's state and content, events' counts,
    parameters."""
    extra = {"account": account} if account else {}
    status = await session.call("tips/status", {**extra})
    inspect = await session.call("inspect/state", {**extra})
    return {
        "tips": sorted(status["tips"], key=lambda tip: tip["id"]),
        "events": sorted((e["id"], e["count"], e["lifetime"]) for e in inspect["events"]),
        "parameters": sorted((p["id"], json.dumps(p["value"])) for p in inspect["parameters"]),
    }


async def reply_or_error(future) -> dict:
    reply = await asyncio.wait_for(future, TIMEOUT)
    return reply


def test_a_thousand_accounts_through_one_node_each_equal_to_a_single_user_daemon(hosted):
    node = hosted.node("busy")
    rng = random.Random(int(os.environ.get("TIPSD_HOSTED_SEED", "0")) or random.randrange(1 << 30))
    seed = rng.randrange(1 << 30)
    plans = {f"user-{i:04d}": operations(random.Random(seed + i)) for i in range(ACCOUNTS)}

    async def user(account: str, ops: list[tuple[str, dict]]):
        session = await Session.open(node.socket_path, hosted.token(account))
        observed = await session.call("tips/observe", {})
        actions = await session.call("actions/subscribe", {})
        own = {observed["subscription"], actions["subscription"]}
        results = []
        for method, params in ops:
            reply = await reply_or_error(session.send(method, params))
            results.append(reply)
        return session, own, results

    async def hosted_run():
        return dict(zip(plans, await asyncio.gather(*(user(a, ops) for a, ops in plans.items())), strict=True))

    async def check_and_compare(sessions):
        # No session received a notification of another's subscriptions (the data of another account).
        for account, (session, own, _) in sessions.items():
            foreign = [n for n in session.notifications if n["params"].get("subscription") not in own]
            assert not foreign, f"{account} received another account's notification: {foreign[:1]}"
            assert not session.unsolicited_errors, f"{account}: {session.unsolicited_errors[:1]}"
        # Each method tried with another account's ids: refused, or finds nothing; the other account keeps its own.
        accounts = list(sessions)
        for index, account in enumerate(accounts[: min(50, len(accounts))]):
            other = accounts[(index + 1) % len(accounts)]
            session, _, _ = sessions[account]
            other_subscription = sorted(sessions[other][1])[0]
            assert (await session.call("tips/unobserve", {"subscription": other_subscription}))["removed"] is False
            assert (await session.call("actions/unsubscribe", {"subscription": other_subscription}))["removed"] is False
            for method in ("tips/status", "inspect/state", "events/donate", "analytics/read"):
                params = {"account": other, **({"id": "search.opened"} if method == "events/donate" else {})}
                with pytest.raises(RpcError) as refused:
                    await session.call(method, params)
                assert refused.value.code == -32014, f"{method} with another account: {refused.value}"
            with pytest.raises(RpcError) as refused:
                await session.call("accounts/export", {"account": other})
            assert refused.value.code == -32014
        # Every account's state equals a single-user daemon fed the same requests.
        states = {}
        for account, (session, _, _) in sessions.items():
            states[account] = await state_of(session)
            await session.close()
        return states

    async def whole():
        sessions = await hosted_run()
        return sessions, await check_and_compare(sessions)

    sessions, hosted_states = run(whole())
    for account, (_, _, results) in sessions.items():
        errors = [r["error"] for r in results if "error" in r and r["error"]["code"] not in (-32001, -32602)]
        assert not errors, f"{account}: unexpected errors {errors[:2]}"

    reference_states = reference(plans)
    differing = [a for a in plans if hosted_states[a] != reference_states[a]]
    assert not differing, (
        f"seed {seed}: {len(differing)} accounts differ from a single-user daemon, e.g. {differing[0]}:\n"
        f"hosted:    {hosted_states[differing[0]]}\nreference: {reference_states[differing[0]]}"
    )


def reference(plans: dict[str, list[tuple[str, dict]]]) -> dict[str, dict]:
    """The same requests, each account's in order, fed to one single-user daemon (its datastore reset between
    accounts, its install id the account's: variants are assigned from it as the hosted node assigns them from the
    account)."""
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        socket_path = os.path.join(directory, "reference.sock")
        process = subprocess.Popen(
            [
                tipsd_bin(),
                "serve",
                "--socket",
                socket_path,
                "--datastore",
                ":memory:",
                "--catalog",
                str(REPO / "catalog" / "demo.json"),
                "--allow-testing",
                # One connection an account, one after the other: faster than the default 200 a second per peer.
                "--peer-connection-rate",
                "0",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + TIMEOUT
            while not os.path.exists(socket_path):
                assert time.monotonic() < deadline, "the reference daemon did not start"
                time.sleep(0.01)

            async def each():
                states = {}
                for account, ops in plans.items():
                    session = await Session.open(socket_path, initialize=False)
                    # The install id is set on an empty datastore (the previous account's was reset), so every tip
                    # with variants is assigned from it afresh.
                    await session.call(
                        "initialize",
                        {"protocolVersion": "1.2", "clientInfo": {"name": "reference"}, "installId": account},
                    )
                    for method, params in ops:
                        await reply_or_error(session.send(method, params))
                    states[account] = await state_of(session)
                    await session.call("datastore/reset")
                    await session.close()
                return states

            return run(each())
        finally:
            process.terminate()
            process.wait(timeout=TIMEOUT)


# ------------------------------------------------------------------------------------------------- signing in


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(header: dict, payload: dict, key: bytes) -> str:
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    signature = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(signature)}"


def refused_tokens(hosted) -> list[tuple[str, str, str]]:
    """(case, token, the refusal's reason) for every token issue 23 lists."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    issuer = hosted.issuer
    now = time.time()
    claims = {"sub": "mallory", "aud": "tipsd-tests", "iss": "https://auth.example.test/", "exp": int(now + 3600)}
    unknown = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return [
        (
            "alg none",
            f"{b64(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}.{b64(json.dumps(claims).encode())}.",
            "unsupportedAlgorithm",
        ),
        (
            "wrong HS256 secret",
            issuer.token("mallory", alg="HS256", key=b"not-the-secret-at-all-32-bytes!!"),
            "badSignature",
        ),
        ("RS256 by an unknown key", issuer.token("mallory", key=unknown, kid="rsa-2"), "unknownKey"),
        ("RS256 by another key under a known kid", issuer.token("mallory", key=unknown, kid="rsa-1"), "badSignature"),
        # The algorithm is the key's, never the token's: an HS256 token is checked with the HMAC secret only, so one
        # signed with the RSA public key's bytes fails its signature.
        (
            "HS256 signed with the RSA public key",
            forged({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}, claims, issuer.rsa_public_pem()),
            "badSignature",
        ),
        ("expired", issuer.token("mallory", now=now - 7200, lifetime=3600), "expired"),
        ("not yet valid", issuer.token("mallory", nbf=now + 3600), "notYetValid"),
        ("wrong audience", issuer.token("mallory", audience="someone-else"), "wrongAudience"),
        ("wrong issuer", issuer.token("mallory", issuer="https://evil.example.test/"), "wrongIssuer"),
        ("empty sub", issuer.token(""), "badSubject"),
        ("10 KB sub", issuer.token("x" * 10_240), "tooLarge"),
        ("sub holding SQL", issuer.token("alice'; DROP TABLE tipsd.ops; --"), "badSubject"),
    ]


def test_tokens_are_refused_with_a_clear_error_and_nothing_changes(hosted):
    node = hosted.node("gate")
    before = hosted.query("SELECT count(*) FROM tipsd.accounts")

    async def attempt(token: str):
        session = await Session.open(node.socket_path, initialize=False)
        try:
            with pytest.raises(RpcError) as refused:
                await session.call(
                    "initialize", {"protocolVersion": "1.2", "clientInfo": {"name": "t"}, "auth": {"token": token}}
                )
            # The session is not signed in: nothing it asks acts on any account.
            with pytest.raises(RpcError) as after:
                await session.call("events/donate", {"id": "search.opened"})
            assert after.value.code in (-32002, -32013)
            return refused.value
        finally:
            await session.close()

    for case, token, reason in refused_tokens(hosted):
        error = run(attempt(token))
        assert error.code == -32013, f"{case}: {error}"
        assert error.data == {"reason": reason}, f"{case}: {error.data} ({error.message})"
        assert token not in error.message and "mallory" not in error.message, f"{case}: the message echoes the token"
    # A signed-in user calling an admin method.

    async def user_calls_admin():
        session = await Session.open(node.socket_path, hosted.token("eve"))
        try:
            for method, params in [
                ("accounts/list", {}),
                ("accounts/export", {"account": "eve"}),
                ("accounts/delete", {"account": "eve"}),
                # A suppression is one device's own; a hosted node serves every device of the account.
                ("tips/suppress", {"seconds": 60}),
                ("tips/resume", {}),
            ]:
                with pytest.raises(RpcError) as refused:
                    await session.call(method, params)
                assert refused.value.code == -32014, f"{method}: {refused.value}"
        finally:
            await session.close()

    run(user_calls_admin())
    assert hosted.query("SELECT count(*) FROM tipsd.accounts WHERE account <> 'eve'") == before


def test_a_refused_token_is_refused_at_the_websocket_upgrade_too(hosted):
    websockets = pytest.importorskip("websockets")
    from websockets.sync.client import connect

    node = hosted.node("upgrade")
    url = f"ws://127.0.0.1:{node.port}/"
    for index, (case, token, reason) in enumerate(refused_tokens(hosted)[:9]):
        with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
            if index % 2:
                connect(f"{url}?access_token={token}", subprotocols=["tipsd.v1"])
            else:
                connect(url, subprotocols=["tipsd.v1"], additional_headers={"Authorization": f"Bearer {token}"})
        assert refused.value.response.status_code == 401, case
        assert reason in refused.value.response.body.decode() or refused.value.response.body, case
    # A good token in the access_token query parameter (as browsers send it) signs the connection in.
    token = hosted.token("browser-user")
    with connect(f"{url}?access_token={token}", subprotocols=["tipsd.v1"]) as ws:
        ws.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": "1.2", "clientInfo": {"name": "b"}},
                }
            )
        )
        reply = json.loads(ws.recv(timeout=TIMEOUT))
        assert reply["result"]["auth"] == {
            "account": "browser-user",
            "admin": False,
            "expiresAt": reply["result"]["auth"]["expiresAt"],
        }


def test_refresh_keeps_subscriptions_and_an_expired_token_ends_the_session(hosted):
    node = hosted.node("expiry", extra=["--jwt-leeway", "0"])

    async def body():
        session = await Session.open(node.socket_path, hosted.token("carol", lifetime=30))
        observed = await session.call("tips/observe", {"ids": ["filter.tip"]})
        fresh = hosted.token("carol", lifetime=3)
        signed = await session.call("auth/refresh", {"token": fresh})
        assert signed["account"] == "carol" and signed["admin"] is False
        with pytest.raises(RpcError) as refused:
            await session.call("auth/refresh", {"token": hosted.token("dave")})
        assert refused.value.code == -32013 and refused.value.data == {"reason": "subjectChanged"}
        for _ in range(3):
            await session.call("events/donate", {"id": "search.opened"})
        deadline = time.monotonic() + TIMEOUT
        while not any(n["params"].get("subscription") == observed["subscription"] for n in session.notifications):
            assert time.monotonic() < deadline, "the subscription did not survive the refresh"
            await asyncio.sleep(0.01)
        # The refreshed token expires in 3 s: the daemon says so (id null) and closes the session.
        await asyncio.wait_for(session.closed.wait(), TIMEOUT)
        assert any(e.get("error", {}).get("data") == {"reason": "expired"} for e in session.unsolicited_errors), (
            session.unsolicited_errors
        )

    run(body())


# ------------------------------------------------------------------------------------------------- durability


def test_kill_9_under_load_loses_no_acknowledged_change(hosted):
    node = hosted.node("crashing", extra=["--account-rate", "100000"])
    accounts = [f"load-{i:02d}" for i in range(40)]
    acknowledged = {account: 0 for account in accounts}

    async def load(account: str, stop: asyncio.Event):
        session = await Session.open(node.socket_path, hosted.token(account))
        window = []
        try:
            while not stop.is_set() or window:
                while len(window) < 16 and not stop.is_set():
                    window.append(session.send("events/donate", {"id": "search.opened"}))
                reply = await window.pop(0)
                if "result" in reply:
                    acknowledged[account] += 1
        except (ConnectionError, asyncio.CancelledError):
            pass

    async def body():
        stop = asyncio.Event()
        tasks = [asyncio.ensure_future(load(account, stop)) for account in accounts]
        deadline = time.monotonic() + TIMEOUT
        while sum(acknowledged.values()) < 2_000:
            assert time.monotonic() < deadline, "the load did not get going"
            await asyncio.sleep(0.01)
        node.kill()
        stop.set()
        await asyncio.wait(tasks, timeout=TIMEOUT)

    run(body())
    assert sum(acknowledged.values()) >= 2_000
    # A transaction the node had sent when it died may still be committing in its (orphaned) backend: count once
    # PostgreSQL has no client statement running, so the count is final.
    wait_for(
        lambda: (
            hosted.query(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                "AND state NOT LIKE 'idle%' AND pid <> pg_backend_pid()"
            ).strip()
            == "0"
        ),
        "the killed node's last transaction settled",
    )
    stored = dict(
        line.split("|")
        for line in hosted.query(
            "SELECT account, count(*) FROM tipsd.ops WHERE account LIKE 'load-%' AND op LIKE '%\"kind\":\"donation\"%' "
            "GROUP BY account"
        ).split()
    )
    lost = {a: (n, int(stored.get(a, 0))) for a, n in acknowledged.items() if int(stored.get(a, 0)) < n}
    assert not lost, f"acknowledged but not in PostgreSQL: {lost}"
    node.start()

    async def served():
        for account in accounts:
            session = await Session.open(node.socket_path, hosted.token(account))
            inspect = await session.call("inspect/state", {})
            lifetime = next(e["lifetime"] for e in inspect["events"] if e["id"] == "search.opened")
            assert lifetime >= acknowledged[account], account
            assert lifetime == int(stored[account]), account
            await session.close()

    run(served())


# ------------------------------------------------------------------------------------------------- sync


def test_a_device_daemon_and_hosted_sessions_of_one_account_converge(hosted, tmp_path):
    node = hosted.node("mixed")
    device_socket = str(tmp_path / "device.sock")
    device = subprocess.Popen(
        [
            tipsd_bin(),
            "serve",
            "--socket",
            device_socket,
            "--datastore",
            str(tmp_path / "phone.sqlite"),
            "--catalog",
            str(REPO / "catalog" / "demo.json"),
            "--sync",
            hosted.postgres.url,
            "--account",
            "frank",
            "--device",
            "phone",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "device.log", "w"),
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(device_socket):
            assert time.monotonic() < deadline, "the device daemon did not start"
            time.sleep(0.01)

        def synced(state: dict) -> dict:
            # What sync carries: events, parameters, and the records of tips without variants (variants are each
            # device's own).
            tips = [
                {k: t[k] for k in ("id", "status", "displayCount", "displayedDuration") if k in t}
                for t in state["tips"]
                if "variant" not in t
            ]
            return {"events": state["events"], "parameters": state["parameters"], "tips": tips}

        async def body():
            phone = await Session.open(device_socket, initialize=False)
            await phone.call("initialize", {"protocolVersion": "1.2", "clientInfo": {"name": "phone"}})
            web = await Session.open(node.socket_path, hosted.token("frank"))
            for _ in range(3):
                await phone.call("events/donate", {"id": "search.opened"})
                await web.call("events/donate", {"id": "map.opened"})
            await web.call("tips/displayed", {"id": "welcome.tour", "duration": 5})
            await phone.call("tips/displayed", {"id": "welcome.tour", "duration": 7})
            await phone.call("tips/invalidate", {"id": "show-location.tip", "reason": "tipClosed"})
            await web.call("parameters/set", {"id": "isLoggedIn", "value": True})
            deadline = time.monotonic() + TIMEOUT
            while True:
                a, b = synced(await state_of(phone)), synced(await state_of(web))
                if a == b and ("search.opened", 3, 3) in a["events"] and ("map.opened", 3, 3) in a["events"]:
                    break
                assert time.monotonic() < deadline, (
                    f"did not converge:\nphone: {a}\nweb:   {b}\n"
                    f"device log:\n{(tmp_path / 'device.log').read_text()[-3000:]}\nnode log:\n{node.log_text()[-3000:]}"
                )
                await asyncio.sleep(0.05)
            welcome = next(t for t in a["tips"] if t["id"] == "welcome.tour")
            assert welcome["displayCount"] == 2 and welcome["displayedDuration"] == 12
            assert ("isLoggedIn", "true") in a["parameters"]
            await phone.close()
            await web.close()

        run(body())
    finally:
        device.terminate()
        device.wait(timeout=TIMEOUT)


# ------------------------------------------------------------------------------------------------- admin


def test_export_round_trips_and_delete_leaves_no_row(hosted):
    node = hosted.node("admin")

    async def body():
        user = await Session.open(node.socket_path, hosted.token("grace"))
        for _ in range(3):
            await user.call("events/donate", {"id": "search.opened"})
        await user.call("tips/displayed", {"id": "filter.tip", "duration": 4})
        await user.call("tips/performAction", {"id": "filter.tip", "actionId": "learn-more", "invalidate": False})
        await user.call("parameters/set", {"id": "isLoggedIn", "value": True})
        original = await state_of(user)
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        exported = await admin.call("accounts/export", {"account": "grace"})
        assert exported["account"] == "grace"
        assert [e["type"] for e in exported["history"]][:1] == ["eligibility"]
        assert any(e["type"] == "action" for e in exported["history"])
        imported = await admin.call("accounts/import", {"account": "grace-copy", "export": exported})
        assert imported["history"] == len(exported["history"]) + len(exported["donations"])
        copy = await admin.call("accounts/export", {"account": "grace-copy"})
        assert copy["state"]["rows"] == exported["state"]["rows"]
        assert copy["state"]["donations"] == exported["state"]["donations"]
        strip = lambda events: [{k: v for k, v in e.items() if k != "cursor"} for e in events]  # noqa: E731
        assert strip(copy["history"]) == strip(exported["history"])
        # The copy serves the same state to its own user.
        copy_user = await Session.open(node.socket_path, hosted.token("grace-copy"))
        assert await state_of(copy_user) == original
        # Importing onto an account that holds something is refused.
        with pytest.raises(RpcError) as refused:
            await admin.call("accounts/import", {"account": "grace", "export": exported})
        assert refused.value.code == -32602

        deleted = await admin.call("accounts/delete", {"account": "grace"})
        assert deleted == {"account": "grace", "closedSessions": 1}
        await asyncio.wait_for(user.closed.wait(), TIMEOUT)
        assert any(e.get("error", {}).get("data") == {"reason": "deleted"} for e in user.unsolicited_errors)
        listed = await admin.call("accounts/list", {})
        assert "grace" not in [a["account"] for a in listed["accounts"]]
        # Erasure is final: the user's still-valid token is refused (--erasure-days), nothing is recreated, and the
        # admin is told the account is gone.
        with pytest.raises(RpcError) as refused:
            await Session.open(node.socket_path, hosted.token("grace"))
        assert refused.value.code == -32013 and refused.value.data["reason"] == "deleted"
        with pytest.raises(RpcError) as gone:
            await admin.call("tips/status", {"account": "grace"})
        assert gone.value.code == -32602 and "deleted" in gone.value.message
        for session in (admin, copy_user):
            await session.close()

    run(body())
    for table in ("ops", "history", "snapshots", "idempotency", "devices"):
        assert hosted.query(f"SELECT count(*) FROM tipsd.{table} WHERE account = 'grace'") == "0\n", table
    # Its row stays while the tombstone stands, marked erased, its cursors at 0 (schema 16: a commit of another node
    # racing the erasure finds the mark and stores nothing).
    assert hosted.query("SELECT erased, last_cursor FROM tipsd.accounts WHERE account = 'grace'") == "t|0\n"
    assert hosted.query("SELECT count(*) FROM tipsd.erased WHERE account = 'grace' AND until > now()") == "1\n"


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def test_busy_accounts_are_compacted_and_another_node_loads_them_from_the_snapshot(hosted):
    node = hosted.node("compacting", extra=["--compaction-threshold", "40", "--account-rate", "100000"])
    rng = random.Random(7)
    plan = [op for _ in range(30) for op in operations(rng)]

    def snapshot_cursor() -> int:
        return int(hosted.query("SELECT coalesce(max(cursor), 0) FROM tipsd.snapshots WHERE account = 'busy'") or 0)

    async def busy() -> dict:
        session = await Session.open(node.socket_path, hosted.token("busy"))
        for method, params in plan:
            await session.call(method, params)
        state = await state_of(session)
        await session.close()
        return state

    served = run(busy())
    last = int(hosted.query("SELECT last_cursor FROM tipsd.accounts WHERE account = 'busy'"))
    assert last > 100, "enough operations to compact"
    # The compactor writes a snapshot within the threshold of the newest operation.
    wait_for(lambda: snapshot_cursor() >= last - 40, f"a snapshot near cursor {last}")
    after = int(hosted.query(f"SELECT count(*) FROM tipsd.ops WHERE account = 'busy' AND cursor > {snapshot_cursor()}"))
    assert after <= 40
    # Another node reads the snapshot and the few operations after it: the same state.
    other = hosted.node("after-compaction")

    async def loaded() -> dict:
        session = await Session.open(other.socket_path, hosted.token("busy"))
        state = await state_of(session)
        await session.close()
        return state

    assert run(loaded()) == served

    # The operations the snapshot holds are pruned (no device syncs this account): what stays is what follows the
    # account's floor, which the snapshot's cursor reached.
    def floor_and_kept() -> tuple[int, int]:
        row = hosted.query(
            "SELECT ops_floor, (SELECT count(*) FROM tipsd.ops WHERE account = 'busy') FROM tipsd.accounts "
            "WHERE account = 'busy'"
        )
        floor, kept = (int(x) for x in row.strip().split("|"))
        return floor, kept

    wait_for(lambda: floor_and_kept()[0] >= last - 40, "the operations the snapshot holds pruned")
    floor, kept = floor_and_kept()
    assert kept == last - floor
    other.stop()


def test_history_older_than_history_days_is_deleted_and_newer_history_kept(hosted):
    node = hosted.node("pruning")
    now = time.time()
    hosted.query(
        "SELECT tipsd.append_history('old-history', 1, 1000.0, 1000.0, '\\x00'::bytea), "
        f"tipsd.append_history('new-history', 1, {now}, {now}, '\\x00'::bytea)"
    )

    def kept(account: str) -> int:
        return int(hosted.query(f"SELECT count(*) FROM tipsd.history WHERE account = '{account}'"))

    assert kept("old-history") == 1
    # A node deletes old history at its first tick with PostgreSQL writable, then hourly: restart it.
    node.stop()
    node.start()
    wait_for(lambda: kept("old-history") == 0, "the 90-day-old chunk deleted")
    assert kept("new-history") == 1
    node.stop()


# ------------------------------------------------------------------------------------------------- the fleet


def test_the_admin_stream_carries_every_account_in_one_order_and_resumes(hosted):
    node = hosted.node("stream")

    async def body():
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        subscribed = await admin.call("analytics/subscribe", {})
        head = subscribed["head"]
        users = [await Session.open(node.socket_path, hosted.token(f"streamer-{i}")) for i in range(3)]
        for round_ in range(2):
            for user in users:
                await user.call("tips/displayed", {"id": "welcome.tour", "duration": round_ + 1})
        deadline = time.monotonic() + TIMEOUT

        # Six impressions (each user's first change brings eligibility events too: wait for the impressions).
        def streamed() -> list[dict]:
            return [
                n["params"] for n in admin.notifications if n["params"]["subscription"] == subscribed["subscription"]
            ]

        while len([e for e in streamed() if e["type"] == "impression"]) < 6:
            assert time.monotonic() < deadline, admin.notifications
            await asyncio.sleep(0.02)
        events = streamed()
        impressions = [e for e in events if e["type"] == "impression"]
        assert [e["account"] for e in impressions] == ["streamer-0", "streamer-1", "streamer-2"] * 2
        cursors = [e["cursor"] for e in events]
        assert cursors == sorted(cursors) and cursors[0] > head and len(set(cursors)) == len(cursors)
        # Resuming from a cursor (after a node died, say) gives what came after it, in the same order.
        middle = impressions[2]["cursor"]
        page = await admin.call("analytics/read", {"after": middle, "limit": 100})
        assert [(e["account"], e["cursor"]) for e in page["events"] if e["type"] == "impression"] == [
            (e["account"], e["cursor"]) for e in impressions[3:]
        ]
        # A user's own stream has no account member and its own cursors.
        own = await users[0].call("analytics/read", {})
        assert all("account" not in e for e in own["events"]) and own["events"][0]["cursor"] == 1
        for session in users + [admin]:
            await session.close()

    run(body())


def test_two_nodes_commit_at_once_and_the_admin_stream_has_no_gap(hosted):
    """Issue #36: no commit takes a fleet-wide row. A commit held open in PostgreSQL (a third node's, in flight) holds up
    neither node; the admin's stream, read from its cursor while both nodes commit, gets every event once, in
    increasing cursors, and the held commit's events after the ones read before it ended."""
    first, second = hosted.node("nogap-a"), hosted.node("nogap-b")
    users = [f"nogap-{i}" for i in range(8)]

    async def seed() -> None:
        session = await Session.open(first.socket_path, hosted.token("nogap-seed"))
        await session.call("tips/displayed", {"id": "welcome.tour", "duration": 1})
        await session.close()

    run(seed())
    # Another node's commit, appending a real chunk of history for its account, held open (no COMMIT yet).
    held = subprocess.Popen(
        [str(hosted.postgres.bin / "psql"), "-X", "-q", "-h", "127.0.0.1", "-p", str(hosted.postgres.port)]
        + ["-U", "postgres", "-d", "postgres"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    held.stdin.write(
        "BEGIN; SELECT tipsd.append_history('nogap-held', count, first_at, last_at, entries) FROM tipsd.history "
        "WHERE account = 'nogap-seed' LIMIT 1;\n"
    )
    held.stdin.flush()
    wait_for(
        lambda: (
            hosted.query("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'").strip() != "0"
        ),
        "the held commit in flight",
    )

    async def body() -> None:
        admin = await Session.open(first.socket_path, ADMIN_TOKEN)
        subscribed = await admin.call("analytics/subscribe", {})
        head = subscribed["head"]
        sessions = [
            await Session.open((first if i % 2 == 0 else second).socket_path, hosted.token(account))
            for i, account in enumerate(users)
        ]
        # Every session's impressions at once, on both nodes: each acknowledged while the held commit stays open
        # (with a fleet-wide row lock every one of these would wait for it, and time out).
        for round_ in range(5):
            await asyncio.gather(
                *(s.call("tips/displayed", {"id": "welcome.tour", "duration": round_ + 1}) for s in sessions)
            )

        def streamed() -> list[dict]:
            return [
                n["params"] for n in admin.notifications if n["params"]["subscription"] == subscribed["subscription"]
            ]

        deadline = time.monotonic() + TIMEOUT
        while len([e for e in streamed() if e["type"] == "impression"]) < 5 * len(users):
            assert time.monotonic() < deadline, streamed()
            await asyncio.sleep(0.02)
        held.stdin.write("COMMIT;\n")
        held.stdin.flush()
        while not any(e["account"] == "nogap-held" for e in streamed()):
            assert time.monotonic() < deadline, streamed()
            await asyncio.sleep(0.02)
        events = streamed()
        cursors = [e["cursor"] for e in events]
        assert cursors[0] > head and cursors == sorted(cursors) and len(set(cursors)) == len(cursors)
        impressions = [(e["account"], e.get("duration")) for e in events if e["type"] == "impression"]
        assert sorted(impressions[:-1]) == sorted((a, r + 1) for a in users for r in range(5))
        assert impressions[-1][0] == "nogap-held"
        # Each account's events in its own order.
        for account in users:
            assert [d for a, d in impressions if a == account] == [1, 2, 3, 4, 5]
        # Resuming from any cursor read gives the same events after it: the stream has no gap to fall into.
        page = await admin.call("analytics/read", {"after": head, "limit": 1000})
        assert [(e["account"], e["cursor"]) for e in page["events"]] == [(e["account"], e["cursor"]) for e in events]
        for session in sessions + [admin]:
            await session.close()

    try:
        run(body())
    finally:
        held.stdin.close()
        held.wait(timeout=TIMEOUT)
        first.stop()
        second.stop()


def test_a_catalog_reload_on_one_node_reaches_every_node(hosted, tmp_path):
    import shutil

    shutil.copytree(REPO / "catalog" / "messages", tmp_path / "messages")
    catalog = tmp_path / "catalog.json"
    document = json.loads((REPO / "catalog" / "demo.json").read_text())
    catalog.write_text(json.dumps(document))
    first = hosted.node("reload-a", catalog=catalog)
    second = hosted.node("reload-b", catalog=catalog)
    before = first.health()["hosted"]["catalog"]
    assert second.health()["hosted"]["catalog"] == before
    document["tips"][0]["title"] = "A new title"
    catalog.write_text(json.dumps(document))
    first.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + TIMEOUT
    while True:
        versions = (first.health()["hosted"]["catalog"], second.health()["hosted"]["catalog"])
        if versions[0] != before and versions[1] == versions[0]:
            break
        assert time.monotonic() < deadline, versions
        time.sleep(0.05)

    async def title():
        session = await Session.open(second.socket_path, hosted.token("reader"))
        status = await session.call("tips/status", {"ids": [document["tips"][0]["id"]]})
        await session.close()
        return status["tips"][0]["tip"]["title"]

    assert run(title()) == "A new title"


def test_quotas_and_an_unavailable_postgresql_are_answered_with_retry_after():
    world = Hosted()
    try:
        node = world.node("quota", extra=["--account-rate", "2", "--account-max-donations", "3"])

        async def body():
            session = await Session.open(node.socket_path, world.token("heidi"))
            # A burst of twice the rate is allowed: three donations, then the fourth is over the donation quota.
            for _ in range(3):
                await session.call("events/donate", {"id": "search.opened"})
            with pytest.raises(RpcError) as donations:
                await session.call("events/donate", {"id": "search.opened"})
            assert donations.value.code == -32015
            assert donations.value.data == {"quota": "donations", "limit": 3, "retryAfter": None}
            # The burst is spent: the next request is over the rate, with the wait before the next token.
            with pytest.raises(RpcError) as rate:
                await session.call("tips/status", {})
            assert rate.value.code == -32015 and rate.value.data["quota"] == "rate"
            assert 0 < rate.value.data["retryAfter"] <= 0.5
            await asyncio.sleep(rate.value.data["retryAfter"])
            assert (await session.call("tips/status", {}))["tips"]
            # Nothing changed by the refusals (read once the bucket has refilled).
            await asyncio.sleep(1.0)
            inspect = await session.call("inspect/state", {})
            assert next(e["lifetime"] for e in inspect["events"] if e["id"] == "search.opened") == 3
            await session.close()

        run(body())

        other = world.node("outage")

        async def outage():
            session = await Session.open(other.socket_path, world.token("ivan"))
            await session.call("events/donate", {"id": "map.opened"})
            world.postgres.stop()
            deadline = time.monotonic() + TIMEOUT
            while True:
                try:
                    await session.call("events/donate", {"id": "map.opened"})
                except RpcError as error:
                    assert error.code == -32016 and error.data["retryAfter"] > 0, error
                    break
                assert time.monotonic() < deadline, "changes were still accepted with PostgreSQL stopped"
                await asyncio.sleep(0.05)
            # Reads go on from memory.
            inspect = await session.call("inspect/state", {})
            assert next(e["lifetime"] for e in inspect["events"] if e["id"] == "map.opened") == 1
            world.postgres.start()
            deadline = time.monotonic() + TIMEOUT
            while True:
                try:
                    result = await session.call("events/donate", {"id": "map.opened"})
                    break
                except RpcError as error:
                    assert error.code == -32016, error
                    assert time.monotonic() < deadline, "changes were not accepted again"
                    await asyncio.sleep(0.1)
            assert result["lifetime"] == 2
            await session.close()

        run(outage())
    finally:
        world.close()
