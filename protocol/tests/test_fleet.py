"""A hosted fleet on loopback — three nodes behind real HAProxy, a PostgreSQL primary with a synchronous standby —
losing each of its parts in turn while users' clients keep working through the balancer.

Every wait is for a condition; TIMEOUT only keeps a broken part from hanging the suite.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
import time

import pytest

from fleet import Fleet
from harness import TIMEOUT
from hosted import ADMIN_TOKEN, RpcError, Session
from test_hosted import reference, state_of

websockets = pytest.importorskip("websockets")

ACCOUNTS = int(os.environ.get("TIPSD_FLEET_ACCOUNTS", "200"))
EVENTS = ["search.opened", "search.performed", "filter.used", "map.opened"]
PLAIN_TIPS = ["welcome.tour", "show-location.tip", "rotate-map.tip"]


@pytest.fixture(scope="module")
def fleet():
    world = Fleet(3, node_options=["--account-rate", "100000"])
    yield world
    world.close()


class UserClient:
    """One user's reconnecting client through HAProxy (the account rides in the Bearer token, so the balancer keeps
    it on one node while that node is up). It changes its account one request at a time; a request that got no reply
    (its node died, PostgreSQL failed over) is settled by reading the account back: whether it was applied is what
    the state says. The requests applied, in order, are what a single-user daemon is fed to compare."""

    def __init__(self, fleet: Fleet, account: str, rng: random.Random):
        self.fleet = fleet
        self.account = account
        self.rng = rng
        self.applied: list[tuple[str, dict]] = []
        self.acknowledged = 0
        self.subscriptions: set[str] = set()
        self.foreign: list[dict] = []
        # Connections lost (its node died, the balancer closed it) and attempts that failed (HAProxy had not yet
        # marked the node down, or no node took changes): whether a first attempt succeeds is timing.
        self.reconnects = 0
        self.failed_connects = 0
        self.ws = None
        self.pending: dict[int, asyncio.Future] = {}
        self.next_id = 0
        self.reader: asyncio.Task | None = None

    async def connect(self) -> None:
        deadline = time.monotonic() + TIMEOUT * 3
        while True:
            assert time.monotonic() < deadline, f"{self.account}: no node took the connection ({self.failed_connects})"
            try:
                token = self.fleet.token(self.account)
                self.ws = await websockets.connect(
                    self.fleet.websocket_url,
                    subprotocols=["tipsd.v1"],
                    additional_headers={"Authorization": f"Bearer {token}"},
                    open_timeout=TIMEOUT,
                )
                self.reader = asyncio.ensure_future(self.read())
                await self.call("initialize", {"protocolVersion": "1.2", "clientInfo": {"name": "fleet-user"}})
                observed = await self.call("tips/observe", {})
                self.subscriptions.add(observed["subscription"])
                return
            except (TimeoutError, OSError, websockets.exceptions.WebSocketException, ConnectionError, RpcError):
                self.failed_connects += 1
                await asyncio.sleep(0.05)

    async def read(self) -> None:
        try:
            async for raw in self.ws:
                message = json.loads(raw)
                if message.get("id") is not None and message["id"] in self.pending:
                    future = self.pending.pop(message["id"])
                    if not future.done():  # a reply after its call gave up waiting is dropped
                        future.set_result(message)
                elif message.get("method"):
                    if message["params"].get("subscription") not in self.subscriptions:
                        self.foreign.append(message)
        except websockets.exceptions.WebSocketException:
            pass
        finally:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("lost"))
            self.pending.clear()

    async def call(self, method: str, params: dict):
        self.next_id += 1
        future = asyncio.get_event_loop().create_future()
        self.pending[self.next_id] = future
        request_id = self.next_id
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        try:
            reply = await asyncio.wait_for(future, TIMEOUT)
        finally:
            self.pending.pop(request_id, None)
        if "error" in reply:
            raise RpcError(reply["error"])
        return reply["result"]

    async def state(self) -> dict:
        while True:
            try:
                status = await self.call("tips/status", {})
                inspect = await self.call("inspect/state", {})
                return {
                    "tips": {t["id"]: t for t in status["tips"]},
                    "events": {e["id"]: e["lifetime"] for e in inspect["events"]},
                    "parameters": {p["id"]: p["value"] for p in inspect["parameters"]},
                }
            except (TimeoutError, ConnectionError, websockets.exceptions.WebSocketException, RpcError):
                await self.reconnect()

    async def close(self) -> None:
        if self.ws is not None:
            await asyncio.wait_for(self.ws.close(), TIMEOUT)
        if self.reader is not None:
            self.reader.cancel()

    async def reconnect(self) -> None:
        self.reconnects += 1
        if self.ws is not None:
            await self.ws.close()
        await self.connect()

    def operation(self) -> tuple[str, dict]:
        roll = self.rng.random()
        if roll < 0.6:
            return "events/donate", {"id": self.rng.choice(EVENTS)}
        if roll < 0.85:
            return "tips/displayed", {"id": self.rng.choice(PLAIN_TIPS), "duration": self.rng.randint(1, 9)}
        return "parameters/set", {"id": "isLoggedIn", "value": self.rng.random() < 0.5}

    async def run(self, stop: asyncio.Event) -> None:
        await self.connect()
        while not stop.is_set():
            method, params = self.operation()
            try:
                await self.call(method, params)
                self.applied.append((method, params))
                self.acknowledged += 1
                continue
            except RpcError as error:
                if error.code not in (-32016, -32013):
                    raise
            except (TimeoutError, ConnectionError, websockets.exceptions.WebSocketException):
                await self.reconnect()
            # No acknowledgement: did it happen? The account says.
            await self.settle(method, params)
            await asyncio.sleep(0.02)

    async def settle(self, method: str, params: dict) -> None:
        expected = self.expected()
        state = await self.state()
        if method == "events/donate":
            happened = state["events"].get(params["id"], 0) > expected["events"].get(params["id"], 0)
        elif method == "tips/displayed":
            happened = state["tips"][params["id"]]["displayCount"] > expected["displays"].get(params["id"], 0)
        else:
            happened = state["parameters"].get("isLoggedIn") == params["value"] and (
                expected["isLoggedIn"] != params["value"]
            )
        if happened:
            self.applied.append((method, params))

    def expected(self) -> dict:
        events: dict[str, int] = {}
        displays: dict[str, int] = {}
        logged_in = False
        for method, params in self.applied:
            if method == "events/donate":
                events[params["id"]] = events.get(params["id"], 0) + 1
            elif method == "tips/displayed":
                displays[params["id"]] = displays.get(params["id"], 0) + 1
            else:
                logged_in = params["value"]
        return {"events": events, "displays": displays, "isLoggedIn": logged_in}


async def wait_healthy(fleet: Fleet) -> None:
    deadline = time.monotonic() + TIMEOUT * 3
    while not all(node.healthy() for node in fleet.nodes):
        assert time.monotonic() < deadline, [node.log_text()[-2000:] for node in fleet.nodes]
        await asyncio.sleep(0.1)


def state_difference(fleet: dict, reference: dict) -> str:
    """The fields where the fleet's state of an account and the reference daemon's differ (tips by id)."""
    out = []
    for key in sorted(set(fleet) | set(reference)):
        ours, theirs = fleet.get(key), reference.get(key)
        if key == "tips" and isinstance(ours, list) and isinstance(theirs, list):
            mine = {tip["id"]: tip for tip in ours}
            other = {tip["id"]: tip for tip in theirs}
            for tip in sorted(set(mine) | set(other)):
                a, b = mine.get(tip, {}), other.get(tip, {})
                for field in sorted(set(a) | set(b)):
                    if a.get(field) != b.get(field):
                        out.append(f"{tip}.{field}: fleet {a.get(field)!r}, reference {b.get(field)!r}")
        elif ours != theirs:
            out.append(f"{key}: fleet {ours!r}, reference {theirs!r}")
    return "; ".join(out)[:2000]


def test_the_fleet_loses_a_node_then_the_primary_and_nothing_acknowledged(fleet):
    seed = int(os.environ.get("TIPSD_FLEET_SEED") or random.randrange(1 << 30))  # replay a failed seed
    clients = [UserClient(fleet, f"fleet-{i:03d}", random.Random(seed + i)) for i in range(ACCOUNTS)]

    async def body():
        stop = asyncio.Event()
        tasks = [asyncio.ensure_future(client.run(stop)) for client in clients]

        async def progress(at_least: int) -> None:
            deadline = time.monotonic() + TIMEOUT * 3
            start = sum(c.acknowledged for c in clients)
            while sum(c.acknowledged for c in clients) < start + at_least:
                assert time.monotonic() < deadline, "the clients made no progress"
                for task in tasks:
                    if task.done() and task.exception():
                        raise task.exception()
                await asyncio.sleep(0.05)

        await progress(500)
        fleet.nodes[0].kill()  # a node dies: its clients reconnect through HAProxy to another node
        await progress(500)
        fleet.nodes[0].start()
        await progress(300)
        fleet.kill_primary()  # the primary dies: changes are refused (-32016), reads go on
        await asyncio.sleep(0.5)
        fleet.promote_standby()  # the nodes find the promoted standby by themselves
        await wait_healthy(fleet)
        await progress(500)
        stop.set()
        await asyncio.gather(*tasks)
        await asyncio.gather(*(client.close() for client in clients))

    asyncio.run(body())
    assert sum(c.reconnects for c in clients) > 0, "no client lost its node: the chaos did not happen"
    foreign = [(c.account, c.foreign[:1]) for c in clients if c.foreign]
    assert not foreign, f"clients saw other accounts' notifications: {foreign[:3]}"

    # Every account's state is the same on every node, and equals a single daemon fed the requests that were
    # applied (every acknowledged one among them), in order.
    async def through_every_node():
        states: dict[str, list[dict]] = {}
        for node in fleet.nodes:
            admin = await Session.open(node.socket_path, ADMIN_TOKEN)
            for client in clients:
                states.setdefault(client.account, []).append(await state_of(admin, client.account))
            await admin.close()
        return states

    per_node = asyncio.run(through_every_node())
    diverging = [account for account, states in per_node.items() if any(s != states[0] for s in states)]
    assert not diverging, f"seed {seed}: nodes disagree on {diverging[:3]}"
    plans = {client.account: client.applied for client in clients}
    expected = reference(plans)
    differing = [a for a in plans if per_node[a][0] != expected[a]]
    assert not differing, (
        f"seed {seed}: {len(differing)} accounts differ from a single daemon fed their applied requests, e.g. "
        f"{differing[0]}: {state_difference(per_node[differing[0]][0], expected[differing[0]])}"
    )
    print(
        f"fleet: {ACCOUNTS} accounts, {sum(c.acknowledged for c in clients)} acknowledged changes, "
        f"{sum(len(c.applied) for c in clients)} applied, {sum(c.reconnects for c in clients)} reconnects "
        f"({sum(c.failed_connects for c in clients)} attempts failed); 0 lost"
    )


def test_an_invalidation_on_one_node_reaches_an_observer_on_another(fleet):
    first, second = fleet.nodes[1], fleet.nodes[2]
    changes = int(os.environ.get("TIPSD_FLEET_CHANGES", "1000"))

    async def body():
        await wait_healthy(fleet)
        actor = await Session.open(first.socket_path, fleet.token("crossing"))
        watcher = await Session.open(second.socket_path, fleet.token("crossing"))
        observed = await watcher.call("tips/observe", {"ids": ["welcome.tour"]})
        subscription = observed["subscription"]
        shown = observed["tips"][0]["shouldDisplay"]
        latencies = []
        for index in range(changes):
            seen = len([n for n in watcher.notifications if n["params"].get("subscription") == subscription])
            started = time.monotonic()
            # -32016 means "not acknowledged, retry" (right after the previous test's failover a commit may meet a
            # connection PostgreSQL has dropped); both changes are idempotent in effect, so retrying is safe.
            for attempt in range(5):
                try:
                    if shown:
                        await actor.call("tips/invalidate", {"id": "welcome.tour", "reason": "tipClosed"})
                    else:
                        await actor.call("tips/resetEligibility", {"id": "welcome.tour"})
                    break
                except RpcError as error:
                    if error.code != -32016 or attempt == 4:
                        raise
                    await asyncio.sleep((error.data or {}).get("retryAfter", 1))
            deadline = started + TIMEOUT
            while len([n for n in watcher.notifications if n["params"].get("subscription") == subscription]) == seen:
                assert time.monotonic() < deadline, f"change {index} never reached the other node"
                await asyncio.sleep(0.0005)
            latencies.append(time.monotonic() - started)
            note = [n for n in watcher.notifications if n["params"].get("subscription") == subscription][-1]
            shown = not shown
            assert note["params"]["shouldDisplay"] == shown, index
        await actor.close()
        await watcher.close()
        return latencies

    latencies = asyncio.run(body())
    assert len(latencies) == changes
    p99 = statistics.quantiles(latencies, n=100)[98] * 1000
    print(f"fleet.cross_node_p99_ms: {p99:.1f} (over {changes} changes; the bench reports it too)")


def test_while_the_synchronous_standby_is_away_commits_wait_and_are_acknowledged_once_it_is_back():
    """synchronous_standby_names makes PostgreSQL hold every COMMIT until the standby has its WAL: with the standby
    stopped, a change is not acknowledged (the node does not answer it yet) and /healthz shows how long the oldest
    commit has waited; once the standby is back the change is acknowledged."""
    world = Fleet(1)
    try:
        node = world.nodes[0]

        async def body():
            session = await Session.open(node.socket_path, world.token("walt"))
            assert (await session.call("events/donate", {"id": "search.opened"}))["lifetime"] == 1
            world.standby.stop()
            pending = session.send("events/donate", {"id": "search.opened"})
            deadline = time.monotonic() + TIMEOUT
            while (node.health()["hosted"]["oldestCommitSeconds"] or 0) < 1:
                assert time.monotonic() < deadline, node.health()
                await asyncio.sleep(0.05)
            assert not pending.done(), "a change was acknowledged before the synchronous standby had it"
            world.standby.start()
            reply = await asyncio.wait_for(pending, TIMEOUT)
            assert reply["result"]["lifetime"] == 2, reply
            assert node.health()["hosted"]["oldestCommitSeconds"] is None
            await session.close()

        asyncio.run(body())
    finally:
        world.close()


@pytest.mark.parametrize("how", ["restart", "fence"])
def test_a_change_only_the_primary_holds_is_not_acknowledged_before_the_synchronous_standby_has_it(how):
    """Chaos seed 194691823: PostgreSQL shows a commit its synchronous standby never received when the primary
    restarts with the commit waiting for the standby (``restart``: recovery replays it), or when the commit's backend
    is ended while it waits (``fence``: the node gave the writer's connection up after --postgres-timeout, and its
    next load ends that backend so the commit cannot land later). A node that read such a commit back — the
    idempotency key's reply — and acknowledged the client's retry from it lost the change when the standby was
    promoted. Now a node's reads wait until what they see is on the standby: while the standby is away the retry is
    refused with -32016, and after the failover it is applied once, on the promoted standby."""
    world = Fleet(1, node_options=["--postgres-timeout", "2"] if how == "fence" else None)
    try:
        node = world.nodes[0]
        key = "durable-1"

        async def body():
            session = await Session.open(node.socket_path, world.token("dora"))
            assert (await session.call("events/donate", {"id": "search.opened"}))["lifetime"] == 1
            world.standby.stop()
            pending = session.send("events/donate", {"id": "search.opened", "idempotencyKey": key})
            deadline = time.monotonic() + TIMEOUT
            while (node.health()["hosted"]["oldestCommitSeconds"] or 0) < 1:
                assert time.monotonic() < deadline, node.health()
                await asyncio.sleep(0.05)
            if how == "restart":
                # The primary dies with the commit in its WAL and not on the standby, and starts again.
                world.postgres.kill()
            first = await asyncio.wait_for(pending, TIMEOUT)
            assert first.get("error", {}).get("code") == -32016, first
            if how == "restart":
                world.postgres.start()
            deadline = time.monotonic() + TIMEOUT
            while key not in world.postgres.query(f"SELECT key FROM tipsd.idempotency WHERE key = '{key}'"):
                # (fence: the retry's load ends the waiting backend, and its commit shows)
                assert how == "fence" and time.monotonic() < deadline, "the commit is not on the primary"
                reply = await session.send("events/donate", {"id": "search.opened", "idempotencyKey": key})
                assert "error" in reply, f"acknowledged {reply} while the change was on no server"
                await asyncio.sleep(0.2)
            # The node reconnects and the client retries: nothing may be acknowledged from the primary's copy alone.
            acknowledged = []
            until = time.monotonic() + 6
            while time.monotonic() < until:
                reply = await asyncio.wait_for(
                    session.send("events/donate", {"id": "search.opened", "idempotencyKey": key}), TIMEOUT
                )
                if "result" in reply:
                    acknowledged.append(reply["result"])
                    break
                assert reply["error"]["code"] == -32016, reply
                await asyncio.sleep(0.3)
            # Failover: the primary dies for good and the standby, which never had the change, is promoted.
            world.postgres.kill()
            world.standby.start()
            world.standby.promote()
            world.postgres, world.standby = world.standby, None
            assert acknowledged == [], (
                f"acknowledged {acknowledged} from a commit only the old primary held: lost by the failover "
                f"(tipsd.idempotency on the promoted standby: "
                f"{world.postgres.query(f'SELECT key FROM tipsd.idempotency WHERE key = {key!r}')!r})\n"
                + node.log_text()[-4000:]
            )
            # The retry now commits on the promoted standby: applied once.
            deadline = time.monotonic() + TIMEOUT
            while True:
                reply = await asyncio.wait_for(
                    session.send("events/donate", {"id": "search.opened", "idempotencyKey": key}), TIMEOUT
                )
                if "result" in reply:
                    break
                assert reply["error"]["code"] == -32016 and time.monotonic() < deadline, reply
                await asyncio.sleep(0.3)
            assert reply["result"]["lifetime"] == 2, reply
            assert key in world.postgres.query(f"SELECT key FROM tipsd.idempotency WHERE key = '{key}'")
            await session.close()

        asyncio.run(body())
    finally:
        world.close()


COMMIT_CALLS = {
    # One account ('acct'), no operations, one key 'k' with reply @: what a node's turn with one keyed change sends.
    "commit": "SELECT conflicts FROM tipsd.commit('acct', 'sql', 'c', '{}', '{}', '{}', '{}', '{}', '{}', '{k}', "
    "'{@}', '{1}', '{}', '{}', '{}', '{}')",
    "commit_set": "SELECT conflicts FROM tipsd.commit_set('{acct}', 'sql', '{0}', '{}', '{}', '{0}', '{}', '{}', "
    "'{}', '{}', '{1}', '{k}', '{@}', '{1}')",
}


@pytest.mark.parametrize("function", sorted(COMMIT_CALLS))
def test_a_commit_answering_with_another_transactions_reply_waits_for_the_synchronous_standby(function):
    """Schema 15: tipsd.commit and tipsd.commit_set answer a key another transaction stored first with its reply, which
    the node acknowledges. A reply whose commit's wait for the standby was ended (pg_terminate_backend) is visible
    without being on the standby; a commit that only found it wrote no WAL and so did not wait either. Now it waits
    until the standby has the reply."""
    world = Fleet(1)
    try:
        primary = world.postgres
        world.standby.stop()
        first = COMMIT_CALLS[function].replace("@", "first")
        # A first transaction stores the key and waits for the standby; its backend is ended: committed locally only.
        waiting = subprocess.Popen(
            primary.argv("psql", *primary.psql_args(first)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=primary.root,
        )
        deadline = time.monotonic() + TIMEOUT
        while "SyncRep" not in primary.query(
            "SELECT wait_event FROM pg_stat_activity WHERE query LIKE '%tipsd.commit%' AND pid <> pg_backend_pid()"
        ):
            assert time.monotonic() < deadline, "the first commit never waited for the standby"
            time.sleep(0.05)
        primary.query("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
        waiting.wait(TIMEOUT)
        assert "first" in primary.query("SELECT reply FROM tipsd.idempotency WHERE key = 'k'")
        # A second commit of the key finds the first reply: it must not answer before the standby has it.
        second = subprocess.Popen(
            primary.argv("psql", *primary.psql_args(COMMIT_CALLS[function].replace("@", "second"))),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=primary.root,
        )
        with pytest.raises(subprocess.TimeoutExpired):
            second.wait(3)
        world.standby.start()
        output, _ = second.communicate(timeout=TIMEOUT)
        assert "first" in output.decode(), output
    finally:
        world.close()
