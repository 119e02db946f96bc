"""Hosted mode: one account can never hurt another — signing in, the WebSocket's incomplete messages, rpc.discover,
the subscription cap, testing methods, erasure and the admin token (issue #42, part 3). Each finding has its test
here, against a real node and PostgreSQL, with tokens minted by PyJWT (tokens.py).

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time

import jwt
import pytest

import tokens
from harness import REPO, TIMEOUT, tipsd_bin
from hosted import ADMIN_TOKEN, DEMO_CATALOG, Hosted, RpcError, Session


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


def run(coroutine):
    return asyncio.run(coroutine)


INIT = {"protocolVersion": "1.2", "clientInfo": {"name": "attacker"}}


def hs256(sub: str, key: bytes, *, iat: bool = True) -> str:
    """A token whose claims the node accepts, signed HS256 with `key` (with or without `iat`)."""
    now = time.time()
    payload = {"sub": sub, "exp": int(now + 3600), "aud": tokens.AUDIENCE, "iss": tokens.ISSUER}
    if iat:
        payload["iat"] = int(now)
    return jwt.encode(payload, key, algorithm="HS256")


def forged_hs256(sub: str) -> str:
    """A token whose claims the node accepts, signed HS256 with a key the node does not hold."""
    return hs256(sub, b"not-the-node-key-" * 4)


async def attempt(socket_path: str, token: str) -> RpcError | None:
    """Signs in on a new connection and makes one request: the refusal (at sign-in, of the request, or as the
    session is closed), or None when both were answered."""
    session = await Session.open(socket_path, initialize=False)
    try:
        await session.call("initialize", {**INIT, "auth": {"token": token}})
        await session.call("tips/status", {})
        return None
    except RpcError as error:
        return error
    except ConnectionError:
        await asyncio.wait_for(session.closed.wait(), TIMEOUT)
        return RpcError(session.unsolicited_errors[0]["error"]) if session.unsolicited_errors else None
    finally:
        await session.close()


# ------------------------------------------------------------------------------------------------------ sign-in


def test_forged_tokens_naming_a_victim_do_not_lock_the_victim_out(hosted):
    node = hosted.node("victim")

    async def body():
        victim = await Session.open(node.socket_path, hosted.token("victim"))
        # A stranger: 12 forged tokens naming the victim's sub, 3 per connection (each connection is then closed).
        for _ in range(4):
            stranger = await Session.open(node.socket_path, initialize=False)
            reasons = []
            for _ in range(3):
                try:
                    await stranger.call("initialize", {**INIT, "auth": {"token": forged_hs256("victim")}})
                except RpcError as error:
                    reasons.append(error.data["reason"])
                except ConnectionError:
                    break
            assert reasons and all(reason == "badSignature" for reason in reasons), reasons
            await stranger.close()
        # The victim's fresh token signs in; their live connection refreshes and stays open.
        assert await attempt(node.socket_path, hosted.token("victim", lifetime=1800)) is None
        for lifetime in (1700, 1600, 1500):
            refreshed = await victim.call("auth/refresh", {"token": hosted.token("victim", lifetime=lifetime)})
            assert refreshed["account"] == "victim", refreshed
        assert not victim.closed.is_set()
        await victim.call("tips/status", {})
        await victim.close()

    run(body())


def test_a_valid_token_signs_in_while_forgeries_spend_the_budget(hosted):
    # 0.25 failed checks a second, bursts of 1: one forged token spends the node's budget for four seconds.
    node = hosted.node("spent", extra=["--sign-in-failures", "0.25"])

    async def body():
        flood = await Session.open(node.socket_path, initialize=False)
        first = None
        try:
            await flood.call("initialize", {**INIT, "auth": {"token": forged_hs256("someone")}})
        except RpcError as error:
            first = error
        assert first is not None and first.data["reason"] == "badSignature", first
        # The same connection's next forgeries are refused before any signature check (bounded CPU), and being held
        # back is not a failed sign-in: the connection is not closed for it.
        for _ in range(4):
            with pytest.raises(RpcError) as held:
                await flood.call("initialize", {**INIT, "auth": {"token": forged_hs256("someone")}})
            assert held.value.data["reason"] == "throttled" and held.value.data["retryAfter"] > 0, held.value.data
        assert not flood.closed.is_set()
        # Meanwhile, fresh connections with genuine tokens sign in: a newcomer, a returning user, an RS256 and an
        # HS256 token alike.
        assert await attempt(node.socket_path, hosted.token("newcomer")) is None
        assert await attempt(node.socket_path, hosted.token("another", alg="HS256")) is None
        await flood.close()
        # A signed-in session whose refresh carried a forgery: its refreshes are then held back, never closing it.
        user = await Session.open(node.socket_path, hosted.token("refresher"))
        with pytest.raises(RpcError) as bad:
            await user.call("auth/refresh", {"token": forged_hs256("refresher")})
        assert bad.value.data["reason"] in ("badSignature", "throttled"), bad.value.data
        for _ in range(3):
            with pytest.raises(RpcError) as held:
                await user.call("auth/refresh", {"token": forged_hs256("refresher")})
            assert held.value.data["reason"] == "throttled", held.value.data
        await user.call("tips/status", {})
        assert not user.closed.is_set()
        await user.close()

    run(body())


# ----------------------------------------------------------------------------------------------------- WebSocket


def ws_connect(port: int, token: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: tipsd.v1\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def ws_frame(opcode: int, payload: bytes, *, fin: bool) -> bytes:
    header = bytes([(0x80 if fin else 0) | opcode])
    length = len(payload)
    if length < 126:
        header += bytes([0x80 | length])
    elif length < 65536:
        header += bytes([0x80 | 126]) + struct.pack("!H", length)
    else:
        header += bytes([0x80 | 127]) + struct.pack("!Q", length)
    mask = os.urandom(4)
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def test_a_fragmented_websocket_message_left_unfinished_is_timed_out(hosted):
    node = hosted.node("fragments", extra=["--partial-timeout", "2"])
    sock = ws_connect(node.port, hosted.token("fragmenter"))
    try:
        # A message begun in fragments and never finished: the connection is closed as a framed one would be.
        sock.sendall(ws_frame(0x1, b'{"jsonrpc":"2.0","id":1,"method":"tips/status",' + b" " * 4096, fin=False))
        sock.sendall(ws_frame(0x0, b" " * 4096, fin=False))
        started = time.monotonic()
        received = b""
        while time.monotonic() - started < TIMEOUT:
            sock.settimeout(max(0.1, TIMEOUT - (time.monotonic() - started)))
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            received += chunk
        assert b"incomplete message" in received, received
    finally:
        sock.close()
    # A message sent in fragments that does complete is answered, and the connection stays.
    sock = ws_connect(node.port, hosted.token("fragmenter"))
    try:
        message = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": INIT}).encode()
        sock.sendall(ws_frame(0x1, message[:10], fin=False) + ws_frame(0x0, message[10:], fin=True))
        sock.settimeout(TIMEOUT)
        reply = sock.recv(65536)
        assert b'"id":2' in reply and b'"result"' in reply, reply
    finally:
        sock.close()


# -------------------------------------------------------------------------------------------------- rpc.discover


def test_rpc_discover_needs_a_sign_in_and_is_rationed(hosted):
    node = hosted.node("discover")

    async def body():
        stranger = await Session.open(node.socket_path, initialize=False)
        with pytest.raises(RpcError) as refused:
            await stranger.call("rpc.discover", {})
        assert refused.value.code == -32013 and refused.value.data["reason"] == "missing", refused.value
        await stranger.close()
        user = await Session.open(node.socket_path, hosted.token("explorer"))
        replies = await asyncio.gather(*(asyncio.wait_for(user.send("rpc.discover", {}), TIMEOUT) for _ in range(20)))
        documents = [reply for reply in replies if "result" in reply]
        refusals = [reply["error"] for reply in replies if "error" in reply]
        assert documents and documents[0]["result"]["openrpc"], replies[0]
        assert len(documents) <= 5 and refusals, len(documents)
        assert all(error["code"] == -32015 and error["data"]["quota"] == "rate" for error in refusals), refusals[0]
        await user.close()

    run(body())


# ---------------------------------------------------------------------------------------------- subscription cap


def test_a_batch_of_subscriptions_answered_later_does_not_overshoot_the_cap(hosted):
    node = hosted.node("subscription-batch", extra=["--account-rate", "100000"])

    async def body():
        reader, writer = await asyncio.open_unix_connection(node.socket_path, limit=64 << 20)

        async def frame(message):
            writer.write((json.dumps(message) + "\n").encode())
            while True:
                line = await asyncio.wait_for(reader.readline(), TIMEOUT)
                assert line, "closed"
                reply = json.loads(line)
                if isinstance(reply, list) or "id" in reply:
                    return reply

        auth = {"token": hosted.token("hoarder-2")}
        await frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {**INIT, "auth": auth}})
        observes = [
            {"jsonrpc": "2.0", "id": i, "method": "tips/observe", "params": {"ids": ["filter.tip"]}}
            for i in range(1, 991)
        ]
        replies = await frame(observes)
        assert all("result" in reply for reply in replies), [r for r in replies if "error" in r][:1]
        subscribes = [
            {"jsonrpc": "2.0", "id": 1000 + i, "method": "analytics/subscribe", "params": {}} for i in range(300)
        ]
        replies = await frame(subscribes)
        made = [reply for reply in replies if "result" in reply]
        assert len(made) == 10, len(made)
        assert all("1000 subscriptions" in reply["error"]["message"] for reply in replies if "error" in reply)
        writer.close()

    run(body())


# ----------------------------------------------------------------------------------------------- testing methods


def test_a_user_cannot_pick_their_own_variant_without_allow_testing(hosted):
    node = hosted.node("variants")

    async def body():
        user = await Session.open(node.socket_path, hosted.token("held-out"))
        with pytest.raises(RpcError) as refused:
            await user.call("tips/setVariant", {"id": "filter.tip", "variant": "direct"})
        assert refused.value.code == -32011, refused.value
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        with pytest.raises(RpcError) as refused:
            await admin.call("tips/setVariant", {"account": "held-out", "id": "filter.tip", "variant": "direct"})
        assert refused.value.code == -32011, refused.value
        for method in ("testing/showAllTips", "datastore/reset"):
            with pytest.raises(RpcError) as refused:
                await user.call(method, {})
            assert refused.value.code == -32011, (method, refused.value)
        await user.close()
        await admin.close()

    run(body())


# ------------------------------------------------------------------------------------------------------- erasure


def test_an_erased_account_refuses_older_tokens_and_a_newer_one_starts_it_empty(hosted):
    node = hosted.node("erasure")

    async def body():
        old_token = hosted.token("phoenix")
        user = await Session.open(node.socket_path, old_token)
        for _ in range(3):
            await user.call("events/donate", {"id": "search.opened"})
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        await admin.call("accounts/delete", {"account": "phoenix"})
        await asyncio.wait_for(user.closed.wait(), TIMEOUT)
        # Tokens issued before the erasure, and tokens without iat, are refused while the tombstone stands.
        refused = await attempt(node.socket_path, old_token)
        assert refused is not None and refused.data["reason"] == "deleted", refused
        refused = await attempt(node.socket_path, hs256("phoenix", hosted.issuer.secret, iat=False))
        assert refused is not None and refused.data["reason"] == "deleted", refused
        # A token issued after the erasure starts an empty account (its changes are stored again).
        fresh = await Session.open(node.socket_path, hosted.token("phoenix", now=time.time() + 2))
        status = await fresh.call("tips/status", {})
        assert status is not None
        await fresh.call("events/donate", {"id": "search.opened"})
        # Stored again (the erasure's tombstone no longer keeps its changes out), and only what came after it: as
        # much as a new account doing the same holds.
        control = await Session.open(node.socket_path, hosted.token("phoenix-control"))
        await control.call("tips/status", {})
        await control.call("events/donate", {"id": "search.opened"})
        await control.close()
        count = "SELECT count(*) FROM tipsd.ops WHERE account = '{}'"
        stored = hosted.query(count.format("phoenix")).strip()
        assert stored != "0" and stored == hosted.query(count.format("phoenix-control")).strip(), stored
        # The older token is still refused, on this node and on a node started afresh.
        refused = await attempt(node.socket_path, old_token)
        assert refused is not None and refused.data["reason"] == "deleted", refused
        await fresh.close()
        await admin.close()

    run(body())
    other = hosted.node("erasure-2")

    async def elsewhere():
        refused = await attempt(other.socket_path, hosted.token("phoenix", now=time.time() - 600))
        assert refused is not None and refused.data["reason"] == "deleted", refused
        assert await attempt(other.socket_path, hosted.token("phoenix", now=time.time() + 2)) is None

    run(elsewhere())


# --------------------------------------------------------------------------------------------------- admin token


def test_the_test_support_admin_token_is_random_per_run():
    script = "import hosted; print(hosted.ADMIN_TOKEN)"
    tests = str(REPO / "protocol" / "tests")
    tokens = {
        subprocess.run(
            [sys.executable, "-c", script], cwd=tests, capture_output=True, text=True, check=True, timeout=TIMEOUT
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(tokens) == 2 and all(len(token) == 64 and len(set(token)) > 4 for token in tokens), tokens


def test_an_admin_token_file_shorter_than_32_bytes_is_refused(tmp_path):
    token_file = tmp_path / "admin-token"
    token_file.write_text("short-admin-token\n")
    token_file.chmod(0o600)
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 48 + b"\n")
    secret.chmod(0o600)
    args = [tipsd_bin(), "serve", "--hosted", "postgresql://127.0.0.1:1/none", "--catalog", str(DEMO_CATALOG)]
    args += ["--socket", str(tmp_path / "t.sock"), "--jwt-secret-file", str(secret), "--listen", "127.0.0.1:0"]
    args += ["--token-file", str(token_file)]
    try:
        refused = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, timeout=15, text=True)
    except subprocess.TimeoutExpired:
        pytest.fail("the node started with a short admin token file")
    assert refused.returncode != 0
    assert "fewer than 32 bytes" in refused.stderr, refused.stderr
    assert token_file.read_text() == "short-admin-token\n"
