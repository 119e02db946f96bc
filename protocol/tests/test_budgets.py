"""Hosted mode's per-account budgets (issue #42, part 2: one account can never hurt another), against a real
PostgreSQL started for the tests, with tokens minted by PyJWT (tokens.py). Each budget is refused with -32015 naming
it, changes nothing, and is counted in Prometheus (`tipsd_quota_refusals_total{quota=…}`); a device id pushed by two
sessions gets an error, never a silent drop; a device pulling from 0 again and again does not hold back the retention
of `tipsd.ops`.

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request

import pytest

from harness import TIMEOUT
from hosted import ADMIN_TOKEN, Hosted, HostedNode, RpcError, Session

DEVICE = "device:budget-phone"


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


def run(coroutine):
    return asyncio.run(coroutine)


def count(hosted: Hosted, sql: str) -> int:
    return int(hosted.query(sql).strip())


def refusals(node: HostedNode, quota: str) -> int:
    """The node's `tipsd_quota_refusals_total{quota="…"}`."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.port}/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
        text = reply.read().decode()
    for line in text.splitlines():
        if line.startswith(f'tipsd_quota_refusals_total{{quota="{quota}"}} '):
            return int(line.split()[-1])
    raise AssertionError(f"no tipsd_quota_refusals_total for {quota} in /metrics")


def hlc() -> int:
    return int(time.time() * 1000) << 16


def donation(event: str = "search.opened", info: dict | None = None) -> dict:
    op = {"hlc": hlc(), "epoch": 0, "kind": "donation", "event": event, "at": time.time(), "lifetime": 1}
    if info is not None:
        op["info"] = info
    return op


async def refused(session: Session, method: str, params: dict, quota: str) -> RpcError:
    with pytest.raises(RpcError) as error:
        await session.call(method, params)
    assert error.value.code == -32015, error.value
    assert error.value.data["quota"] == quota, error.value.data
    return error.value


def test_state_bytes_budget_refuses_a_change_that_would_grow_it_and_changes_nothing(hosted):
    node = hosted.node("budget-state")
    before = refusals(node, "stateBytes")

    async def body():
        session = await Session.open(node.socket_path, hosted.token("hoarder"))
        info = {"blob": "x" * 3_900}
        accepted = 0
        for _ in range(200):
            try:
                await session.call("events/donate", {"id": "trail.visited", "info": info})
            except RpcError as error:
                assert error.code == -32015 and error.data["quota"] == "stateBytes", error
                assert error.data["limit"] == 256 * 1024
                break
            accepted += 1
        else:
            raise AssertionError("200 donations of 3.9 KB were all kept: no state budget")
        # About 256 KiB of state: each donation keeps ~3.9 KB.
        assert 50 <= accepted <= 70, accepted
        kept = next(e for e in (await session.call("inspect/state"))["events"] if e["id"] == "trail.visited")
        assert kept["lifetime"] == accepted
        # A device's push that would grow it is refused too, and stores nothing.
        ops_before = count(hosted, "SELECT count(*) FROM tipsd.ops WHERE account = 'hoarder'")
        await refused(
            session,
            "sync/push",
            {"device": DEVICE, "ops": [{"seq": 1, "op": donation("trail.visited", info)}]},
            "stateBytes",
        )
        assert count(hosted, "SELECT count(*) FROM tipsd.ops WHERE account = 'hoarder'") == ops_before
        # Another account is not held back.
        other = await Session.open(node.socket_path, hosted.token("neighbour"))
        await other.call("events/donate", {"id": "trail.visited", "info": info})
        await other.close()
        await session.close()

    run(body())
    assert refusals(node, "stateBytes") >= before + 2


def test_info_bytes_budget_refuses_a_large_info_by_donate_and_by_push(hosted):
    node = hosted.node("budget-info")
    before = refusals(node, "infoBytes")

    async def body():
        session = await Session.open(node.socket_path, hosted.token("chatty"))
        error = await refused(
            session, "events/donate", {"id": "search.opened", "info": {"b": "x" * 5_000}}, "infoBytes"
        )
        assert error.data["limit"] == 4096
        await refused(
            session,
            "sync/push",
            {"device": DEVICE, "ops": [{"seq": 1, "op": donation(info={"b": "x" * 5_000})}]},
            "infoBytes",
        )
        events = (await session.call("inspect/state"))["events"]
        assert all(e["lifetime"] == 0 for e in events if e["id"] == "search.opened"), events
        assert count(hosted, "SELECT count(*) FROM tipsd.ops WHERE account = 'chatty'") == 0
        # Within the budget: kept.
        await session.call("events/donate", {"id": "search.opened", "info": {"b": "x" * 3_000}})
        await session.close()

    run(body())
    assert refusals(node, "infoBytes") == before + 2


def test_a_parameter_the_catalog_does_not_declare_is_refused(hosted):
    node = hosted.node("budget-parameters")
    before = refusals(node, "undeclaredParameters")

    async def body():
        session = await Session.open(node.socket_path, hosted.token("parametric"))
        op = {"hlc": hlc(), "epoch": 0, "kind": "parameter", "id": "made.up.1", "value": "x" * 1_900}
        await refused(session, "sync/push", {"device": DEVICE, "ops": [{"seq": 1, "op": op}]}, "undeclaredParameters")
        assert count(hosted, "SELECT count(*) FROM tipsd.ops WHERE account = 'parametric'") == 0
        declared = {"hlc": hlc(), "epoch": 0, "kind": "parameter", "id": "isLoggedIn", "value": True}
        await session.call("sync/push", {"device": DEVICE, "ops": [{"seq": 2, "op": declared}]})
        await session.close()

    run(body())
    assert refusals(node, "undeclaredParameters") == before + 1


def test_devices_are_capped_and_the_least_recently_seen_is_replaced_only_after_ops_device_days(hosted):
    node = hosted.node("budget-devices")
    before = refusals(node, "devices")

    async def body():
        session = await Session.open(node.socket_path, hosted.token("gadgets"))
        for index in range(16):
            await session.call("sync/pull", {"device": f"device:d{index}", "after": 0})
        error = await refused(session, "sync/pull", {"device": "device:d16", "after": 0}, "devices")
        assert error.data["limit"] == 16
        assert count(hosted, "SELECT count(*) FROM tipsd.devices WHERE account = 'gadgets'") == 16
        # A device already known keeps pulling.
        await session.call("sync/pull", {"device": "device:d3", "after": 0})
        # d0 silent for longer than --ops-device-days (30): the new device takes its place.
        hosted.query(
            "UPDATE tipsd.devices SET seen_at = now() - interval '31 days' "
            "WHERE account = 'gadgets' AND device = 'device:d0'"
        )
        await session.call("sync/pull", {"device": "device:d16", "after": 0})
        devices = hosted.query("SELECT device FROM tipsd.devices WHERE account = 'gadgets' ORDER BY device")
        assert "device:d0\n" not in devices + "\n" and "device:d16" in devices, devices
        assert count(hosted, "SELECT count(*) FROM tipsd.devices WHERE account = 'gadgets'") == 16
        await session.close()

    run(body())
    assert refusals(node, "devices") == before + 1


def test_sessions_per_account_are_capped_on_a_node_and_the_refused_connection_is_closed(hosted):
    node = hosted.node("budget-sessions")
    before = refusals(node, "sessions")

    async def body():
        token = hosted.token("crowd")
        sessions = [await Session.open(node.socket_path, token) for _ in range(32)]
        extra = await Session.open(node.socket_path, initialize=False)
        with pytest.raises(RpcError) as error:
            await extra.call(
                "initialize",
                {"protocolVersion": "1.2", "clientInfo": {"name": "flood"}, "auth": {"token": token}},
            )
        assert error.value.code == -32015 and error.value.data["quota"] == "sessions", error.value
        assert error.value.data["limit"] == 32
        await asyncio.wait_for(extra.closed.wait(), TIMEOUT)
        # Another account signs in; and once one of the 32 closed, the account may open one again.
        other = await Session.open(node.socket_path, hosted.token("loner"))
        await other.close()
        await sessions[0].close()
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                again = await Session.open(node.socket_path, token)
                break
            except RpcError as refusal:
                assert refusal.data["quota"] == "sessions" and time.monotonic() < deadline, refusal
                await asyncio.sleep(0.05)
        await again.close()
        for session in sessions[1:]:
            await session.close()

    run(body())
    assert refusals(node, "sessions") >= before + 1


def test_history_rows_per_account_per_day_are_capped(hosted):
    node = hosted.node("budget-history", extra=["--account-max-history-rows", "5"])
    before = refusals(node, "historyRows")

    async def body():
        session = await Session.open(node.socket_path, hosted.token("historian"))
        rows = "SELECT count(*) FROM tipsd.history WHERE account = 'historian'"
        for _ in range(20):
            try:
                await session.call("tips/invalidate", {"id": "filter.tip", "reason": "actionPerformed"})
                await session.call("tips/resetEligibility", {"id": "filter.tip"})
            except RpcError as error:
                assert error.code == -32015 and error.data["quota"] == "historyRows", error
                assert error.data["limit"] == 5 and 0 < error.data["retryAfter"] <= 86_400
                break
        else:
            raise AssertionError("40 changes that record history were all taken")
        stored = count(hosted, rows)
        assert 5 <= stored <= 6, stored
        await refused(session, "events/donate", {"id": "search.opened"}, "historyRows")
        assert count(hosted, rows) == stored
        await session.close()

    run(body())
    assert refusals(node, "historyRows") >= before + 2


def test_each_operation_of_a_push_counts_against_the_account_rate(hosted):
    node = hosted.node("budget-rate")
    before = refusals(node, "rate")

    async def body():
        session = await Session.open(node.socket_path, hosted.token("pusher"))
        base = hlc()

        def push(first: int) -> dict:
            ops = []
            for index in range(500):
                op = {"hlc": base + first + index, "epoch": 0, "kind": "display", "key": "filter.tip"}
                op.update({"generation": 0, "count": first + index + 1, "duration": 0})
                ops.append({"seq": first + index + 1, "op": op})
            return {"device": DEVICE, "ops": ops}

        await session.call("sync/push", push(0))
        # 500 operations at --account-rate 50 (bursts of 100): the next request waits for the debt to refill.
        error = await refused(session, "sync/push", push(500), "rate")
        assert error.data["retryAfter"] > 5, error.data
        assert count(hosted, f"SELECT count(*) FROM tipsd.ops WHERE account = 'pusher' AND device = '{DEVICE}'") == 500
        await session.close()

    run(body())
    assert refusals(node, "rate") >= before + 1


def test_a_session_refused_for_its_rate_is_not_read_until_the_budget_refills(hosted):
    """30 donations written at once at --account-rate 5 (bursts of 10). Were the node to go on reading, the 20 after
    the burst would all be refused at once; it stops reading the session at the first refusal until a request's
    worth has refilled, so the rest are answered as the budget allows, alternately accepted and refused, and every
    request is still answered."""
    node = hosted.node("budget-rate-hold", extra=["--account-rate", "5"])

    async def body():
        session = await Session.open(node.socket_path, hosted.token("impatient"))
        futures = [session.send("events/donate", {"id": "search.opened"}) for _ in range(30)]
        replies = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
        refused = [reply for reply in replies if "error" in reply]
        assert all(reply["error"]["code"] == -32015 for reply in refused), refused
        assert all(reply["error"]["data"]["quota"] == "rate" for reply in refused), refused
        accepted = len(replies) - len(refused)
        # The burst (10), then about one accepted per refusal (each hold lasts until one request's worth refilled).
        assert accepted >= 15, (accepted, len(refused))
        assert len(refused) <= 15, (accepted, len(refused))
        await session.close()

    run(body())


def test_an_account_sending_more_bytes_than_its_input_rate_is_read_no_faster(hosted):
    """--account-input-rate 16384 (16 KiB a second, bursts of 32 KiB): five donations of 16 KB infos, one after the
    other (refused for their info, so nothing else limits them), take at least the seconds the budget needs to refill
    for the bytes past the burst — the node stops reading the session rather than refusing, so every request is still
    answered — while another account's requests are answered meanwhile."""
    node = hosted.node("budget-input", extra=["--account-input-rate", "16384"])

    async def body():
        sender = await Session.open(node.socket_path, hosted.token("bulky"))
        other = await Session.open(node.socket_path, hosted.token("bystander"))
        started = time.monotonic()
        for _ in range(5):
            reply = await asyncio.wait_for(
                sender.send("events/donate", {"id": "search.opened", "info": {"b": "x" * 16_000}}), TIMEOUT
            )
            assert reply["error"]["data"]["quota"] in ("infoBytes", "rate"), reply
            assert (await other.call("tips/status"))["tips"], "another account is answered meanwhile"
        elapsed = time.monotonic() - started
        # 80 KB against a 32 KiB burst refilled at 16 KiB a second: about three seconds; no faster than 1.5.
        assert elapsed >= 1.5, elapsed
        await sender.close()
        await other.close()

    run(body())


def test_a_device_pulling_from_zero_again_and_again_does_not_hold_the_retention_back(hosted):
    # Default --ops-keep (1000): 3,000 operations, pushed by the admin (not rate-limited), on the same tip's display
    # counter (the state does not grow), while a device pulls from 0 after every push.
    node = hosted.node("budget-retention", extra=["--compaction-threshold", "200"])
    total, keep = 3_000, 1_000

    async def body():
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        mallory = await Session.open(node.socket_path, hosted.token("retained"))
        base = hlc()
        for batch in range(total // 500):
            ops = []
            for index in range(500):
                n = batch * 500 + index
                op = {"hlc": base + n, "epoch": 0, "kind": "display", "key": "filter.tip"}
                op.update({"generation": 0, "count": n + 1, "duration": 0})
                ops.append({"seq": n + 1, "op": op})
            await admin.call("sync/push", {"account": "retained", "device": DEVICE, "ops": ops})
            # The puller that never moves: from 0 every time.
            await mallory.call("sync/pull", {"device": "device:stuck", "after": 0, "limit": 1})
        deadline = time.monotonic() + TIMEOUT * 4
        floor = "SELECT ops_floor FROM tipsd.accounts WHERE account = 'retained'"
        while count(hosted, floor) < total - keep - 200:
            assert time.monotonic() < deadline, f"floor {count(hosted, floor)}:\n{node.log_text()[-2000:]}"
            await mallory.call("sync/pull", {"device": "device:stuck", "after": 0, "limit": 1})
            await asyncio.sleep(0.1)
        kept = count(hosted, "SELECT count(*) FROM tipsd.ops WHERE account = 'retained'")
        assert kept <= keep + 200 + 500, kept
        # The stuck device, behind the floor, reads the snapshot (and converges), never missing operations.
        page = await mallory.call("sync/pull", {"device": "device:stuck", "after": 0})
        assert page["snapshot"] is not None and page["operations"] == []
        await admin.close()
        await mallory.close()

    run(body())


def test_a_second_pusher_of_a_device_id_gets_an_error_never_a_silent_drop(hosted):
    node = hosted.node("budget-binding")

    async def body():
        token = hosted.token("victim")
        mallory = await Session.open(node.socket_path, token)
        phone = await Session.open(node.socket_path, token)
        await mallory.call(
            "sync/push", {"device": "device:phone", "ops": [{"seq": s, "op": donation()} for s in (1, 2, 3)]}
        )
        real = [{"seq": s, "op": donation("map.opened")} for s in (1, 2, 3)]
        with pytest.raises(RpcError) as error:
            await phone.call("sync/push", {"device": "device:phone", "ops": real})
        assert error.value.code == -32014 and "device:phone" in error.value.message, error.value
        # The first pusher's own retry is still idempotent; once it is gone, the device id is free again.
        await mallory.call("sync/push", {"device": "device:phone", "ops": [{"seq": 4, "op": donation()}]})
        await mallory.close()
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                await phone.call(
                    "sync/push", {"device": "device:phone", "ops": [{"seq": 5, "op": donation("map.opened")}]}
                )
                break
            except RpcError as refusal:
                assert refusal.code == -32014 and time.monotonic() < deadline, refusal
                await asyncio.sleep(0.05)
        await phone.close()

    run(body())


def test_a_device_ids_seqs_stay_its_first_pushers_on_every_node_at_any_time(hosted):
    # #42 item 8: the stolen token pushes device:phone 1-3 through one node and leaves; the real phone's pushes of
    # 1-3 through another node are refused (-32014), never answered and stored nowhere. An honest retry of the same
    # operations stays idempotent, and another account committing meanwhile is unaffected.
    near, far = hosted.node("binding-near"), hosted.node("binding-far")
    ops = "SELECT count(*) FROM tipsd.ops WHERE account = 'stolen' AND device = 'device:phone'"

    async def body():
        token = hosted.token("stolen")
        mallory = await Session.open(near.socket_path, token)
        forged = {"device": "device:phone", "ops": [{"seq": s, "op": donation()} for s in (1, 2, 3)]}
        cursor = await mallory.call("sync/push", forged)
        await mallory.close()
        assert count(hosted, ops) == 3
        stored = hosted.query("SELECT string_agg(op, '|' ORDER BY seq) FROM tipsd.ops WHERE account = 'stolen'")

        phone = await Session.open(far.socket_path, token)
        neighbour = await Session.open(far.socket_path, hosted.token("neighbour"))
        real = {"device": "device:phone", "ops": [{"seq": s, "op": donation("map.opened")} for s in (1, 2, 3, 4)]}
        other = {"device": "device:phone", "ops": [{"seq": s, "op": donation("map.opened")} for s in (1, 2)]}
        results = await asyncio.gather(
            phone.call("sync/push", real),
            neighbour.call("sync/push", other),
            return_exceptions=True,
        )
        error = results[0]
        assert isinstance(error, RpcError), results
        assert error.code == -32014 and '"device:phone"' in error.message and "seq 1" in error.message, error
        # Nothing of the refused push (not even its new seq 4); the other account's push was stored.
        assert count(hosted, ops) == 3
        assert hosted.query("SELECT string_agg(op, '|' ORDER BY seq) FROM tipsd.ops WHERE account = 'stolen'") == stored
        assert isinstance(results[1], dict) and results[1]["cursor"] >= 2, results
        assert (
            count(hosted, "SELECT count(*) FROM tipsd.ops WHERE account = 'neighbour' AND device = 'device:phone'") == 2
        )

        # An honest retry after a lost reply, through the other node: the same cursor, nothing stored twice.
        assert await phone.call("sync/push", forged) == cursor
        assert count(hosted, ops) == 3
        # A push whose clash is further in (seq 3 of 3-4) names that seq.
        with pytest.raises(RpcError) as later:
            await phone.call("sync/push", {"device": "device:phone", "ops": [forged["ops"][0], *real["ops"][2:]]})
        assert later.value.code == -32014 and "seq 3" in later.value.message, later.value
        assert count(hosted, ops) == 3
        await neighbour.close()
        await phone.close()

    run(body())
