"""Hosted mode against an attacker who holds a valid token of their own (issue #33): each finding has its test here,
against a real node and PostgreSQL, with tokens minted by PyJWT (tokens.py).

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time

import pytest

from harness import TIMEOUT, tipsd_bin
from hosted import ADMIN_TOKEN, DEMO_CATALOG, Hosted, RpcError, Session


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


def run(coroutine):
    return asyncio.run(coroutine)


INIT = {"protocolVersion": "1.2", "clientInfo": {"name": "attacker"}}


def request(request_id, method, params=None) -> dict:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def raw_frame(socket_path: str, frame, *, replies: int = 1) -> list:
    """Sends one frame (a message or a batch) on a new connection; returns the replies read (JSON), ignoring
    notifications."""
    reader, writer = await asyncio.open_unix_connection(socket_path, limit=16 << 20)
    try:
        writer.write((json.dumps(frame) + "\n").encode())
        got = []
        while len(got) < replies:
            line = await asyncio.wait_for(reader.readline(), TIMEOUT)
            assert line, f"the connection closed after {got}"
            message = json.loads(line)
            if isinstance(message, dict) and "method" in message:
                continue
            got.append(message)
        return got
    finally:
        writer.close()


def forged(hosted, sub: str) -> str:
    """An RS256 token whose claims this node accepts and whose signature is wrong (the last byte flipped)."""
    header, payload, signature = hosted.token(sub).split(".")
    raw = bytearray(__import__("base64").urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[-1] ^= 0x01
    return f"{header}.{payload}." + __import__("base64").urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


# --------------------------------------------------------------------------------------------- one frame, one node


def test_a_batch_that_signs_in_and_then_acts_gets_every_reply_and_the_node_lives(hosted):
    node = hosted.node("batch")

    async def body():
        # Someone else's events exist on the node: the batch's reads must not see them.
        other = await Session.open(node.socket_path, hosted.token("batch-victim"))
        await other.call("tips/displayed", {"id": "filter.tip", "duration": 2})
        await other.call("events/donate", {"id": "search.opened"})
        batch = [
            request(1, "initialize", {**INIT, "auth": {"token": hosted.token("batch-user")}}),
            request(2, "tips/status", {"ids": ["filter.tip"]}),
            request(3, "events/donate", {"id": "search.opened"}),
            # Answered later (PostgreSQL reads): they were missing from the batch's reply.
            request(4, "analytics/read", {}),
            request(5, "metrics/get", {}),
            {"jsonrpc": "2.0", "method": "initialized"},
            request(6, "accounts/list", {}),
        ]
        (reply,) = await raw_frame(node.socket_path, batch)
        assert isinstance(reply, list), reply
        by_id = {part["id"]: part for part in reply}
        assert sorted(by_id) == [1, 2, 3, 4, 5, 6], reply
        assert by_id[1]["result"]["auth"]["account"] == "batch-user"
        assert by_id[2]["result"]["tips"][0]["id"] == "filter.tip"
        assert by_id[3]["result"]["count"] == 1
        # The user's own events only, never the fleet's ("no tenant" once read as "the admin's whole fleet").
        events = by_id[4]["result"]["events"]
        assert all("account" not in event for event in events), events
        assert not any(event["type"] == "impression" for event in events), events
        assert "accounts" not in by_id[5]["result"], by_id[5]["result"]
        assert by_id[6]["error"]["code"] == -32014
        assert node.proc.poll() is None
        # The node still serves everyone.
        assert (await other.call("tips/status", {}))["tips"]
        await other.close()

    run(body())


def test_a_batch_is_answered_whole_before_and_after_signing_in(hosted):
    node = hosted.node("batch-order")

    async def body():
        # Before signing in: each request gets its refusal, none runs without an account.
        (reply,) = await raw_frame(
            node.socket_path,
            [request(1, "tips/status", {}), request(2, "analytics/read", {}), request(3, "metrics/get", {})],
        )
        assert sorted((part["id"], part["error"]["code"]) for part in reply) == [(1, -32002), (2, -32002), (3, -32002)]
        # A batch naming another account after signing in: refused per request, the rest answered.
        (reply,) = await raw_frame(
            node.socket_path,
            [
                request(1, "initialize", {**INIT, "auth": {"token": hosted.token("order-user")}}),
                request(2, "tips/status", {"account": "order-victim"}),
                request(3, "inspect/state", {"account": "order-victim"}),
                request(4, "tips/status", {}),
            ],
        )
        by_id = {part["id"]: part for part in reply}
        assert by_id[2]["error"]["code"] == -32014 and by_id[3]["error"]["code"] == -32014
        assert "result" in by_id[1] and "result" in by_id[4]
        assert node.proc.poll() is None

    run(body())


def test_catalog_reload_and_sync_status_are_the_admins(hosted):
    node = hosted.node("admin-only")

    async def body():
        user = await Session.open(node.socket_path, hosted.token("curious"))
        for method in ("catalog/reload", "sync/status"):
            with pytest.raises(RpcError) as refused:
                await user.call(method, {})
            assert refused.value.code == -32014, f"{method}: {refused.value}"
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        status = await admin.call("sync/status", {})
        assert status["enabled"] and "127.0.0.1" in (status["server"] or "")
        reloaded = await admin.call("catalog/reload", {})
        assert reloaded["applied"] is True
        await user.close()
        await admin.close()

    run(body())


# ------------------------------------------------------------------------------------------------ configuration


def serve(*extra: str, secret: bytes | None = None, mode: int = 0o600, directory=None) -> subprocess.CompletedProcess:
    """`tipsd serve --hosted` with these flags and a PostgreSQL that is not there: it must refuse before connecting."""
    args = [tipsd_bin(), "serve", "--hosted", "postgresql://127.0.0.1:1/none", "--catalog", str(DEMO_CATALOG)]
    args += ["--socket", str(directory / "refused.sock")]
    if secret is not None:
        path = directory / "short-secret"
        path.write_bytes(secret)
        path.chmod(mode)
        args += ["--jwt-secret-file", str(path)]
    return subprocess.run(
        [*args, *extra], stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT, text=True, check=False
    )


def test_a_jwks_without_audience_or_issuer_does_not_start(hosted, tmp_path):
    refused = serve("--jwks", str(hosted.issuer.jwks_path), directory=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "--jwt-audience" in refused.stderr and "Firebase" in refused.stderr
    # The explicit opt-out (tests, private key sets) is accepted: the node then waits for PostgreSQL.
    node = hosted.node("any-audience", extra=["--jwt-any-audience"])
    assert node.proc.poll() is None


@pytest.mark.parametrize("length", [3, 31])
def test_a_short_hs256_secret_does_not_start(tmp_path, length):
    refused = serve(secret=b"k" * length + b"\n", directory=tmp_path)
    assert refused.returncode != 0
    assert f"the secret is {length} bytes" in refused.stderr, refused.stderr


def test_a_secret_file_others_may_read_does_not_start(tmp_path):
    refused = serve(secret=b"s" * 48 + b"\n", mode=0o644, directory=tmp_path)
    assert refused.returncode != 0
    assert "open to others" in refused.stderr, refused.stderr


# ------------------------------------------------------------------------------------------------------ sign-in


def test_a_connection_that_does_not_sign_in_is_closed(hosted):
    pytest.importorskip("websockets")
    from websockets.sync.client import connect

    node = hosted.node("sign-in-timeout", extra=["--sign-in-timeout", "1"])

    async def body():
        idle = await Session.open(node.socket_path, initialize=False)
        started = time.monotonic()
        await asyncio.wait_for(idle.closed.wait(), TIMEOUT)
        assert time.monotonic() - started >= 0.9
        assert idle.unsolicited_errors[0]["error"]["data"]["reason"] == "signInTimeout"

    run(body())
    # A WebSocket upgrade without a token is let in, but must sign in as quickly.
    with connect(f"ws://127.0.0.1:{node.port}/", subprotocols=["tipsd.v1"]) as ws:
        closing = json.loads(ws.recv(timeout=TIMEOUT))
        assert closing["error"]["data"]["reason"] == "signInTimeout"


def test_failed_sign_ins_and_refreshes_are_limited_per_connection(hosted):
    node = hosted.node("attempts")

    async def body():
        session = await Session.open(node.socket_path, initialize=False)
        for attempt in range(3):
            with pytest.raises(RpcError) as refused:
                await session.call("initialize", {**INIT, "auth": {"token": forged(hosted, f"guess-{attempt}")}})
            assert refused.value.code == -32013
        # The third failure closes the connection, saying why.
        await asyncio.wait_for(session.closed.wait(), TIMEOUT)
        assert session.unsolicited_errors[0]["error"]["data"]["reason"] == "tooManyAttempts"
        user = await Session.open(node.socket_path, hosted.token("refresher"))
        refusals = []
        for _ in range(8):
            try:
                await user.call("auth/refresh", {"token": hosted.token("refresher")})
            except RpcError as error:
                refusals.append(error)
        assert refusals and refusals[0].data["reason"] == "tooManyAttempts" and refusals[0].data["retryAfter"] > 0
        await user.close()

    run(body())


def test_forged_tokens_past_the_budget_are_refused_before_any_signature_check(hosted):
    # 0.25 failed checks a second, bursts of 1: one forged token spends the budget for four seconds.
    node = hosted.node("budget", extra=["--sign-in-failures", "0.25"])

    async def attempt(token: str, session=None):
        session = session or await Session.open(node.socket_path, initialize=False)
        try:
            await session.call("initialize", {**INIT, "auth": {"token": token}})
            return None
        except RpcError as error:
            return error

    async def body():
        remembered = hosted.token("cached-user")
        first = await Session.open(node.socket_path, initialize=False)
        assert await attempt(remembered, first) is None
        await first.close()
        # One connection floods: its first forgery is checked, the next ones are refused before any signature check
        # (#42: charged to the connection, never to the subject a forgery names).
        flood = await Session.open(node.socket_path, initialize=False)
        reasons = [(await attempt(forged(hosted, f"random-{i}"), flood)).data for i in range(6)]
        assert reasons[0]["reason"] == "badSignature", reasons
        assert all(data["reason"] == "throttled" and data["retryAfter"] > 0 for data in reasons[1:]), reasons
        await flood.close()
        # During the flood: the remembered token needs no signature check at all, and a new subject's genuine token
        # on its own connection is checked and signs in.
        assert await attempt(remembered) is None
        assert await attempt(hosted.token("newcomer")) is None

    run(body())


def test_a_session_is_counted_from_its_first_and_signs_in_one_account_only(hosted):
    pytest.importorskip("websockets")
    from websockets.sync.client import connect

    node = hosted.node("residency", extra=["--max-resident-accounts", "1"])

    async def body():
        first = await Session.open(node.socket_path, hosted.token("resident-a"))
        await first.call("tips/observe", {"ids": ["filter.tip"]})
        await first.call("events/donate", {"id": "search.opened"})  # stored: accounts/list shows it
        # Other accounts come and go: the live account is never evicted (its first session counted).
        for name in ("transient-b", "transient-c", "transient-d"):
            passing = await Session.open(node.socket_path, hosted.token(name))
            await passing.call("tips/status", {})
            await passing.close()
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        listed = {a["account"]: a["resident"] for a in (await admin.call("accounts/list", {}))["accounts"]}
        assert listed.get("resident-a") is True, listed
        await first.close()
        await admin.close()

    run(body())
    # Signed in by the upgrade's token as one account, initialize with another's: refused, not switched.
    url = f"ws://127.0.0.1:{node.port}/"
    with connect(
        url, subprotocols=["tipsd.v1"], additional_headers={"Authorization": f"Bearer {hosted.token('ws-a')}"}
    ) as ws:
        ws.send(json.dumps(request(1, "initialize", {**INIT, "auth": {"token": hosted.token("ws-b")}})))
        reply = json.loads(ws.recv(timeout=TIMEOUT))
        assert reply["error"]["data"]["reason"] == "subjectChanged", reply
        ws.send(json.dumps(request(2, "initialize", INIT)))
        assert json.loads(ws.recv(timeout=TIMEOUT))["result"]["auth"]["account"] == "ws-a"


# ------------------------------------------------------------------------------------------------- admin token


def test_the_admin_token_is_compared_whole_and_only_when_given(hosted):
    node = hosted.node("admin-token")
    padded = ADMIN_TOKEN + "\u0000" * 256

    async def body():
        for token, reason in ((padded, None), ("A" * 9000, "tooLarge")):
            session = await Session.open(node.socket_path, initialize=False)
            with pytest.raises(RpcError) as refused:
                await session.call("initialize", {**INIT, "auth": {"token": token}})
            assert refused.value.code == -32013
            if reason:
                assert refused.value.data["reason"] == reason
            await session.close()

    run(body())
    # Without --token-file a hosted node has no admin token at all (and writes no token file).
    bare = hosted.node("no-admin", admin_token_file=False)

    async def no_admin():
        session = await Session.open(bare.socket_path, initialize=False)
        with pytest.raises(RpcError):
            await session.call("initialize", {**INIT, "auth": {"token": ADMIN_TOKEN}})
        await session.close()

    run(no_admin())
    assert not (bare.directory / "token").exists()


def test_the_admin_token_is_read_again_on_sighup_and_admin_sessions_end(hosted, tmp_path):
    token_file = tmp_path / "admin"
    token_file.write_text("b" * 64 + "\n")
    token_file.chmod(0o600)
    # 0.0005 h = 1.8 s.
    node = hosted.node(
        "admin-rotate",
        extra=["--token-file", str(token_file), "--admin-session-max", "0.0005"],
        admin_token_file=False,
    )

    async def body():
        admin = await Session.open(node.socket_path, "b" * 64)
        token_file.write_text("c" * 64 + "\n")
        node.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + TIMEOUT
        while True:
            session = await Session.open(node.socket_path, initialize=False)
            try:
                await session.call("initialize", {**INIT, "auth": {"token": "c" * 64}})
                break
            except RpcError:
                assert time.monotonic() < deadline, "the new admin token was never accepted"
                await asyncio.sleep(0.05)
            finally:
                await session.close()
        stale = await Session.open(node.socket_path, initialize=False)
        with pytest.raises(RpcError):
            await stale.call("initialize", {**INIT, "auth": {"token": "b" * 64}})
        await stale.close()
        # The admin session that signed in first ends at --admin-session-max.
        await asyncio.wait_for(admin.closed.wait(), TIMEOUT)
        assert admin.unsolicited_errors[0]["error"]["data"]["reason"] == "expired"

    run(body())


# ------------------------------------------------------------------------------------------------- the adversary


def test_a_stateful_adversary_finds_no_crash_no_lost_reply_and_no_leak(hosted):
    """Several signed-in users, a stranger and the admin send random frames, and an attacker with a token of its own
    sends resource attacks (huge infos, parameter floods, session floods, forged tokens naming a live user, one
    idempotency key on two nodes at once), for TIPSD_ADVERSARY_STEPS steps (2,000 by default; `make fuzz` runs more)
    against two nodes on one PostgreSQL; after every step every honest user's request on each node must succeed. The
    seed is printed, and TIPSD_ADVERSARY_SEED replays a failure."""
    from adversary import NODE_FLAGS, Adversary, default_seed

    seed = default_seed()
    steps = int(os.environ.get("TIPSD_ADVERSARY_STEPS", "2000"))
    node = hosted.node("adversary", extra=NODE_FLAGS)
    node_b = hosted.node("adversary-b", extra=NODE_FLAGS)
    print(f"adversary: seed {seed}, {steps} steps")
    counts = Adversary(node, hosted, seed=seed, steps=steps, admin_token=ADMIN_TOKEN, node_b=node_b).run()
    print("adversary: " + ", ".join(f"{name} {value}" for name, value in counts.items()))
    assert counts["replies"] > steps // 2


def test_a_subscription_answered_after_its_connection_closed_is_not_kept(hosted):
    """The adversary's first crash: an admin's fleet-wide analytics/subscribe is answered after a PostgreSQL read; a
    connection that closed meanwhile was registered all the same (held unowned) and the fleet's pump read it once
    freed — the node died at the next event of any account."""
    node = hosted.node("gone")

    async def body():
        for _ in range(20):
            reader, writer = await asyncio.open_unix_connection(node.socket_path)
            init = request(1, "initialize", {**INIT, "auth": {"token": ADMIN_TOKEN}})
            for message in (init, request(2, "analytics/subscribe", {}), request(3, "analytics/subscribe", {})):
                writer.write((json.dumps(message) + "\n").encode())
            writer.close()  # gone before PostgreSQL answers
        user = await Session.open(node.socket_path, hosted.token("gone-user"))
        for _ in range(5):
            await user.call("tips/displayed", {"id": "filter.tip", "duration": 1})
            await asyncio.sleep(0.3)  # the fleet's pump runs every 200 ms
        assert node.proc.poll() is None, node.log_text()[-2000:]
        await user.close()

    run(body())


def test_an_admin_holding_subscriptions_in_several_accounts_closes_cleanly(hosted):
    """The adversary's second crash: closing a session dropped its subscriptions from the first account's registry
    and emptied the session's list, so an admin's subscriptions in a second account stayed behind, holding a freed
    session — the node died at that account's next change."""
    node = hosted.node("admin-subscriptions")

    async def body():
        users = {name: await Session.open(node.socket_path, hosted.token(name)) for name in ("sub-a", "sub-b")}
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        for name in users:
            await admin.call("tips/observe", {"account": name})
            await admin.call("actions/subscribe", {"account": name})
            await admin.call("inspect/state", {"account": name, "watch": True})
        await admin.close()
        await asyncio.sleep(0.2)
        for session in users.values():
            await session.call("tips/displayed", {"id": "welcome.tour", "duration": 1})
            await session.call("tips/performAction", {"id": "welcome.tour", "actionId": "start"})
        assert node.proc.poll() is None, node.log_text()[-2000:]
        for session in users.values():
            await session.close()

    run(body())


def test_a_connection_holds_a_bounded_number_of_subscriptions(hosted):
    node = hosted.node("subscription-cap", extra=["--account-rate", "100000"])

    async def body():
        session = await Session.open(node.socket_path, hosted.token("hoarder"))
        futures = [session.send("tips/observe", {"ids": ["filter.tip"]}) for _ in range(1_001)]
        replies = [await asyncio.wait_for(future, TIMEOUT) for future in futures]
        assert all("result" in reply for reply in replies[:1_000])
        assert replies[1_000]["error"]["code"] == -32602 and "1000 subscriptions" in replies[1_000]["error"]["message"]
        await session.call("tips/unobserve", {"subscription": replies[0]["result"]["subscription"]})
        assert "subscription" in await session.call("actions/subscribe", {})
        await session.close()

    run(body())
