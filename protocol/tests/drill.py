"""Issue #34's fault drill and its checker: a hosted fleet (3 nodes, a PostgreSQL primary and a synchronous standby,
HAProxy, each node reaching PostgreSQL through a fault proxy of its own) while clients change and observe a handful of
accounts and a seeded schedule of faults kills nodes, cuts, delays, drops and black-holes links, ends LISTEN links,
restarts PostgreSQL, sends the standby away and promotes it.

The checker works from the clients' own logs (every change they sent, with its idempotency key, and the reply they
were given; every `shouldDisplay` an observer was told) against what the fleet holds afterwards — each node asked
directly, and PostgreSQL's `tipsd.idempotency` and `tipsd.ops`:

- **lost**: an acknowledged key PostgreSQL does not hold, or a count (an event's lifetime donations, a never-reset
  tip's display count) below the number of distinct keys applied for it;
- **doubled**: a count above the number of distinct keys applied for it (a change applied twice despite its key);
- **mismatched**: an acknowledged reply that differs from the one stored with its key (a retry answered anew);
- **unanswered**: a change never acknowledged once every fault was healed, or a call left without any answer for
  CALL_TIMEOUT on a connection that stayed up (every request is answered within --postgres-timeout, -32016 at worst);
- nodes that disagree on an account, observers whose last `shouldDisplay` is not the account's final state within
  5 s of the last fault healed (or of the last change acknowledged after it), nodes that died on their own;
- **repairs** (issue #44): every node runs the repair net (`--repair-interval 2`), which compares each resident
  account with PostgreSQL at the same cursor (the merge model's rows and what the engine shows) and reads it again
  when they differ, and pulls an account left behind PostgreSQL by a notice it never heard; any repair is a problem
  (a divergence the drill's own checks might not have caught, or caught only after the net hid it);
- **key_hits** (issue #43): changers drop some replies on purpose (every changer its first donation's, then about one
  change in seven) and resend the change with its key, half the time on a new connection: each resend must hit the
  stored key and get the same reply, and a node that applied it again shows as doubled — so every seed tests
  doubling, not only those where a retry happens to find a stored key; a seed with none is a problem;
- **the quiet phase** (issue #43): while the clients change their accounts, each change's notification makes a node
  pull from its cursor, which also brings what a missed notification carried, so no fault can show a missing
  catch-up. So every seed ends quietly: a fresh account is observed on every node, the other nodes' links to
  PostgreSQL (their LISTEN links with them) are cut, one change is committed on the remaining node, the links heal and
  nothing changes any more — every observer must see the change within 5 s of the heal (quiet_lag_ms), which only a
  node's catch-up after its LISTEN link is back can do.

``run(DrillConfig(seed=…, seconds=…))`` returns a ``DrillReport``: its figures (``name: value`` lines), its problems,
the seed and the faults. test_fleet_drill.py runs it bounded; `make chaos` (scripts/chaos) runs it over many seeds;
`make test-nets` (scripts/test-nets) checks it catches a lost operation row, a skipped catch-up and a stored key
applied again.
Environment: TIPSD_DRILL_SEED, TIPSD_DRILL_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import random
import time
import urllib.error
import urllib.request

import websockets
import websockets.asyncio.client
import websockets.exceptions

from fleet import Fleet
from harness import TIMEOUT
from hosted import ADMIN_TOKEN, RpcError, Session

EVENTS = ["search.opened", "search.performed", "map.opened"]
OBSERVED = ["welcome.tour", "filter.tip", "advanced-search.tip", "show-location.tip", "rotate-map.tip"]
# Display counts are exact for this tip: nothing resets it (resetEligibility targets welcome.tour only).
COUNTED_TIP = "rotate-map.tip"
CONVERGENCE_SECONDS = 5.0
# A request gets its answer (-32016 at worst) within --postgres-timeout (3 s here) and a second of the link's
# watchdog: a call unanswered this long on a connection that stayed up is a request never answered.
CALL_TIMEOUT = 15.0
RETRYABLE = (-32016, -32015)


@dataclasses.dataclass
class DrillConfig:
    seed: int = 0
    seconds: float = 40.0
    accounts: int = 4
    changers: int = 3  # per account
    observers: int = 2  # per account
    postgres_timeout: float = 3.0
    promote: bool = True

    @classmethod
    def from_environment(cls, **defaults) -> DrillConfig:
        config = cls(**defaults)
        if os.environ.get("TIPSD_DRILL_SEED"):
            config.seed = int(os.environ["TIPSD_DRILL_SEED"])
        elif not config.seed:
            config.seed = random.randrange(1, 1 << 31)
        if os.environ.get("TIPSD_DRILL_SECONDS"):
            config.seconds = float(os.environ["TIPSD_DRILL_SECONDS"])
        return config


@dataclasses.dataclass
class Fault:
    kind: str
    node: int | None = None
    arg: int = 0
    hold: float = 0.0
    started: float | None = None
    healed: float | None = None

    def describe(self) -> str:
        target = f" node{self.node + 1}" if self.node is not None else ""
        arg = f" {self.arg}ms" if self.kind == "delay" else f" {self.arg}" if self.arg else ""
        timing = ""
        if self.started is not None:
            timing = f" at {self.started:.2f}s"
            if self.healed is not None:
                timing += f", healed at {self.healed:.2f}s"
        return f"{self.kind}{target}{arg} (hold {self.hold:.2f}s){timing}"


def schedule(rng: random.Random, seconds: float, nodes: int, promote: bool) -> list[tuple[float, Fault]]:
    """The faults, each after a gap: (gap seconds, fault). Sequential: one fault at a time, healed before the next."""
    kinds = ["kill", "cut", "delay", "drop", "blackhole", "listen", "pg-restart", "standby-away"]
    weights = [3, 3, 2, 2, 2, 2, 1, 1]
    planned: list[tuple[float, Fault]] = []
    total = 0.0
    promote_at = rng.uniform(0.3, 0.7) * seconds if promote else None
    while total < seconds:
        gap = rng.uniform(0.3, 1.5)
        if promote_at is not None and total >= promote_at:
            fault = Fault("promote", hold=rng.uniform(0.2, 1.5))
            promote_at = None
        else:
            kind = rng.choices(kinds, weights)[0]
            fault = Fault(kind, hold=rng.uniform(0.3, 3.0))
            if kind in ("kill", "cut", "delay", "drop", "blackhole"):
                fault.node = rng.randrange(nodes)
            if kind == "delay":
                fault.arg = rng.choice([20, 100, 400, 1500])
            if kind == "pg-restart":
                fault.arg = rng.choice([0, 1])  # 1: immediate (a crash), 0: fast
        planned.append((gap, fault))
        total += gap + fault.hold + 1.0
    return planned


class Connection:
    """One JSON-RPC WebSocket connection (through HAProxy, or straight to a node's listener)."""

    def __init__(self, url: str, token: str, on_notification=None):
        self.url = url
        self.token = token
        self.on_notification = on_notification
        self.pending: dict[int, asyncio.Future] = {}
        self.next_id = 0
        self.ws = None
        self.reader: asyncio.Task | None = None
        self.lost = asyncio.Event()

    async def open(self) -> None:
        self.ws = await websockets.connect(
            self.url,
            subprotocols=["tipsd.v1"],
            additional_headers={"Authorization": f"Bearer {self.token}"},
            open_timeout=CALL_TIMEOUT,
            ping_interval=None,
            max_size=None,
        )
        self.reader = asyncio.ensure_future(self._read())
        await self.call("initialize", {"protocolVersion": "1.2", "clientInfo": {"name": "drill"}})

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                message = json.loads(raw)
                if message.get("id") is not None and message["id"] in self.pending:
                    future = self.pending.pop(message["id"])
                    if not future.done():
                        future.set_result(message)
                elif message.get("method") and self.on_notification:
                    self.on_notification(message)
        except (websockets.exceptions.WebSocketException, OSError):
            pass
        finally:
            self.lost.set()
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("lost"))
            self.pending.clear()

    async def call(self, method: str, params: dict, timeout: float = CALL_TIMEOUT):
        if self.lost.is_set():
            raise ConnectionError("lost")
        self.next_id += 1
        request_id = self.next_id
        future = asyncio.get_event_loop().create_future()
        self.pending[request_id] = future
        try:
            await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
            reply = await asyncio.wait_for(future, timeout)
        except websockets.exceptions.WebSocketException as error:
            raise ConnectionError(str(error)) from error
        finally:
            self.pending.pop(request_id, None)
        if "error" in reply:
            raise RpcError(reply["error"])
        return reply["result"]

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.ws.close(), 2)
        if self.reader is not None:
            self.reader.cancel()


CONNECTION_ERRORS = (TimeoutError, ConnectionError, OSError, websockets.exceptions.WebSocketException)


class Client:
    """A reconnecting client of one account: each (re)connection goes through HAProxy or straight to a random node."""

    def __init__(self, drill: Drill, account: str, name: str, rng: random.Random):
        self.drill = drill
        self.account = account
        self.name = name
        self.rng = rng
        self.connection: Connection | None = None
        self.reconnects = 0
        self.errors: list[str] = []

    def url(self) -> str:
        fleet = self.drill.fleet
        # A node being restarted has no port yet (a killed one keeps its old one: connecting there is refused).
        ports = [node.port for node in fleet.nodes if node.port]
        if not ports or self.rng.random() < 0.4:
            return fleet.websocket_url
        return f"ws://127.0.0.1:{self.rng.choice(ports)}/"

    async def connect(self, deadline: float) -> None:
        self.connections = getattr(self, "connections", [])
        while True:
            connection = Connection(self.url(), self.drill.fleet.token(self.account, lifetime=86_400), self.notified)
            self.connections.append((round(self.drill.now(), 2), connection.url))
            try:
                await connection.open()
                await self.opened(connection)
                self.connection = connection
                return
            except (*CONNECTION_ERRORS, RpcError):
                await connection.close()
                if time.monotonic() > deadline or self.drill.aborting:
                    raise
                await asyncio.sleep(self.rng.uniform(0.05, 0.3))

    async def opened(self, connection: Connection) -> None:
        pass

    def notified(self, message: dict) -> None:
        pass

    async def drop(self) -> None:
        if self.connection is not None:
            await self.connection.close()
            self.connection = None
        self.reconnects += 1


@dataclasses.dataclass
class Change:
    key: str
    method: str
    params: dict
    sent: float
    attempts: int = 0
    acked: float | None = None
    result: object = None
    # A reply the client dropped on purpose (as if the connection lost it) and resent the change for: the resend must
    # hit the stored key and get this very reply, with nothing applied twice.
    dropped: object = None
    # Each attempt: (seconds since the start, where it went, what came of it).
    trail: list = dataclasses.field(default_factory=list)


class Changer(Client):
    """Sends random changes one at a time, each with a fresh idempotency key, retried with the same key after -32016,
    a timeout or a lost connection until acknowledged. Some replies it drops on purpose (its first donation's always,
    then one change in seven or so; half the time it also drops the connection, so the resend may reach another node):
    the resend hits the stored key, and a node that applied it again shows in the counts (doubled)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.changes: list[Change] = []
        self.key_hits = 0

    def drops_reply(self, method: str, params: dict) -> bool:
        counted = method == "events/donate" or (method == "tips/displayed" and params.get("id") == COUNTED_TIP)
        if counted and not any(change.dropped is not None for change in self.changes):
            return True
        return self.rng.random() < (0.15 if counted else 0.05)

    def next_change(self) -> tuple[str, dict]:
        roll = self.rng.random()
        if roll < 0.40:
            return "events/donate", {"id": self.rng.choice(EVENTS)}
        if roll < 0.55:
            return "parameters/set", {"id": "isLoggedIn", "value": self.rng.random() < 0.5}
        if roll < 0.68:
            return "tips/invalidate", {"id": "welcome.tour", "reason": "tipClosed"}
        if roll < 0.81:
            return "tips/resetEligibility", {"id": "welcome.tour"}
        if roll < 0.93:
            return "tips/displayed", {"id": COUNTED_TIP, "duration": self.rng.randint(1, 5)}
        if roll < 0.98:
            return "tips/displayed", {"id": "welcome.tour", "duration": 1}
        return "events/donate", {"id": "filter.used"}

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            method, params = self.next_change()
            change = Change(f"{self.name}.{len(self.changes)}", method, params, self.drill.now())
            self.changes.append(change)
            await self.until_acknowledged(change, drop_reply=self.drops_reply(method, params))
            await asyncio.sleep(self.rng.uniform(0, 0.08))

    async def until_acknowledged(self, change: Change, drop_reply: bool = False) -> None:
        # Past every fault, a change still unacknowledged after this long is a request never answered.
        give_up = TIMEOUT * 4
        while not self.drill.aborting:
            if self.drill.healed_at is not None and self.drill.now() - max(self.drill.healed_at, change.sent) > give_up:
                return
            try:
                if self.connection is None or self.connection.lost.is_set():
                    if self.connection is not None:
                        await self.drop()
                    await self.connect(time.monotonic() + give_up)
                change.attempts += 1
                at, where = self.drill.now(), self.connection.url
                result = await self.connection.call(change.method, {**change.params, "idempotencyKey": change.key})
                if drop_reply and change.dropped is None:
                    # Dropped on purpose: not acknowledged yet; the change is sent again with its key.
                    change.dropped = result
                    change.trail.append((round(at, 2), where, "ok (reply dropped)"))
                    if self.rng.random() < 0.5:
                        await self.drop()
                    continue
                change.result = result
                change.acked = self.drill.now()
                change.trail.append((round(at, 2), where, "ok"))
                if change.dropped is not None:
                    self.key_hits += 1
                    if result != change.dropped:
                        self.errors.append(
                            f"{change.method} {change.key}: resent after a dropped reply {change.dropped}, "
                            f"answered {result} (the stored key was not hit)"
                        )
                return
            except RpcError as error:
                change.trail.append((round(at, 2), where, error.code))
                if error.code not in RETRYABLE:
                    self.errors.append(f"{change.method} {change.key}: {error.code} {error.message}")
                    return
                retry = (error.data or {}).get("retryAfter") or 0.2
                await asyncio.sleep(min(float(retry), 1.0) * self.rng.uniform(0.3, 1.0))
            except CONNECTION_ERRORS as error:
                if change.attempts:
                    change.trail.append((round(at, 2), where, type(error).__name__))
                await self.drop()


class Observer(Client):
    """Observes the account's tips; its view of each tip's `shouldDisplay`, with when each value arrived."""

    def __init__(self, *args):
        super().__init__(*args)
        self.view: dict[str, bool] = {}
        self.changed_at = 0.0
        self.subscription: str | None = None
        self.early: list[dict] = []
        self.notifications = 0

    async def opened(self, connection: Connection) -> None:
        self.subscription = None
        self.early: list[dict] = []
        observed = await connection.call("tips/observe", {"ids": OBSERVED})
        self.subscription = observed["subscription"]
        self.apply({tip["id"]: tip["shouldDisplay"] for tip in observed["tips"]})
        # Notifications read after the reply but before this coroutine resumed: they follow the observation.
        for message in self.early:
            self.notified(message)
        self.early = []

    def notified(self, message: dict) -> None:
        params = message.get("params") or {}
        if message.get("method") != "tips/shouldDisplayChanged":
            return
        if self.subscription is None:
            self.early.append(message)
            return
        if params.get("subscription") != self.subscription:
            return
        self.notifications += 1
        self.apply({params["id"]: params["shouldDisplay"]})

    def apply(self, values: dict[str, bool]) -> None:
        view = {**self.view, **values}
        if view != self.view:
            self.view = view
            self.changed_at = self.drill.now()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                if self.connection is None:
                    await self.connect(time.monotonic() + TIMEOUT * 4)
                lost = asyncio.ensure_future(self.connection.lost.wait())
                stopped = asyncio.ensure_future(stop.wait())
                await asyncio.wait({lost, stopped}, return_when=asyncio.FIRST_COMPLETED)
                lost.cancel()
                stopped.cancel()
                if self.connection.lost.is_set():
                    await self.drop()
            except (*CONNECTION_ERRORS, RpcError) as error:
                self.errors.append(f"observer could not reconnect: {error!r}")
                await self.drop()
                await asyncio.sleep(0.5)


def repair_checks(node) -> int:
    """The accounts a live node compared with PostgreSQL since it (last) started; 0 for a node that is down."""
    import re
    import urllib.request

    if node.proc.poll() is not None or node.port is None:
        return 0
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.port}/metrics",
        headers={"Authorization": f"Bearer {node.token_file.read_text().strip()}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read().decode()
    except OSError:
        return 0
    found = re.search(r"^tipsd_hosted_repair_checks_total (\d+)$", text, re.MULTILINE)
    return int(found.group(1)) if found else 0


@dataclasses.dataclass
class DrillReport:
    seed: int
    seconds: float
    faults: list[Fault]
    figures: dict[str, object]
    problems: list[str]

    def lines(self) -> str:
        return "\n".join(f"{name}: {value}" for name, value in self.figures.items())

    def explain(self) -> str:
        text = [f"drill seed {self.seed} ({self.seconds:g} s; replay with TIPSD_DRILL_SEED={self.seed})", self.lines()]
        text.append("faults:")
        text += [f"  {fault.describe()}" for fault in self.faults]
        if self.problems:
            text.append(f"problems ({len(self.problems)}):")
            text += [f"  {problem}" for problem in self.problems[:60]]
        return "\n".join(text)


class Drill:
    def __init__(self, config: DrillConfig):
        self.config = config
        self.rng = random.Random(config.seed)
        self.fleet: Fleet | None = None
        self.started = time.monotonic()
        self.healed_at: float | None = None
        self.faults: list[Fault] = []
        self.problems: list[str] = []
        self.killed: set[int] = set()
        # The drill itself failed: clients stop at once (cancelling them is not enough: asyncio.wait_for in Python
        # 3.11 may swallow a cancellation).
        self.aborting = False

    def now(self) -> float:
        return time.monotonic() - self.started

    # -- faults (run in a worker thread: they block)

    def apply(self, fault: Fault) -> None:
        fleet = self.fleet
        fault.started = self.now()
        if fault.kind == "kill":
            node = fleet.nodes[fault.node]
            if node.proc.poll() is not None:
                self.problems.append(f"node{fault.node + 1} died on its own (exit {node.proc.returncode})")
            self.killed.add(fault.node)
            node.kill()
            time.sleep(fault.hold)
            node.start()
            self.killed.discard(fault.node)
        elif fault.kind in ("cut", "drop", "blackhole", "delay"):
            proxy = fleet.proxies[fault.node]
            proxy.set(fault.kind, fault.arg)
            time.sleep(fault.hold)
            proxy.heal()
        elif fault.kind == "listen":
            fleet.query(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name LIKE 'tipsd-listener%'"
            )
        elif fault.kind == "pg-restart":
            fleet.postgres.stop("immediate" if fault.arg else "fast")
            time.sleep(fault.hold)
            fleet.postgres.start()
        elif fault.kind == "standby-away":
            if fleet.standby is None:
                fault.kind = "standby-away (none: skipped)"
            else:
                fleet.standby.stop("fast")
                time.sleep(fault.hold)
                fleet.standby.start()
        elif fault.kind == "promote":
            if fleet.standby is None:
                fault.kind = "promote (done: skipped)"
            else:
                fleet.kill_primary()
                time.sleep(fault.hold)
                fleet.standby.promote()
                fleet.postgres, fleet.standby = fleet.standby, None
                for proxy in fleet.proxies:
                    proxy.retarget(fleet.postgres.port)
        fault.healed = self.now()

    def wait_nodes_healthy(self) -> None:
        deadline = time.monotonic() + TIMEOUT * 3
        while not all(node.healthy() for node in self.fleet.nodes):
            if time.monotonic() > deadline:
                self.problems.append("a node did not become healthy after the last fault was healed")
                return
            time.sleep(0.1)

    # -- the run

    async def body(self) -> None:
        config = self.config
        loop_rng = random.Random(config.seed * 7919 + 1)
        accounts = [f"drill-{config.seed}-{i}" for i in range(config.accounts)]
        self.changers = [
            Changer(self, account, f"{account}/c{j}", random.Random(loop_rng.random()))
            for account in accounts
            for j in range(config.changers)
        ]
        self.observers = [
            Observer(self, account, f"{account}/o{j}", random.Random(loop_rng.random()))
            for account in accounts
            for j in range(config.observers)
        ]
        self.accounts = accounts
        stop_observers = asyncio.Event()
        stop_changes = asyncio.Event()
        observer_tasks = [asyncio.ensure_future(o.run(stop_observers)) for o in self.observers]
        changer_tasks = [asyncio.ensure_future(c.run(stop_changes)) for c in self.changers]
        try:
            await self.exercise(stop_changes, stop_observers, changer_tasks, observer_tasks)
        except BaseException:
            self.aborting = True
            stop_changes.set()
            stop_observers.set()
            for task in changer_tasks + observer_tasks:
                task.cancel()
            await asyncio.wait(changer_tasks + observer_tasks, timeout=TIMEOUT)
            raise

    async def exercise(self, stop_changes, stop_observers, changer_tasks, observer_tasks) -> None:
        config = self.config
        planned = schedule(self.rng, config.seconds, len(self.fleet.nodes), config.promote)
        await asyncio.sleep(1.0)
        for gap, fault in planned:
            await asyncio.sleep(gap)
            self.faults.append(fault)
            await asyncio.to_thread(self.apply, fault)
            for task in changer_tasks + observer_tasks:
                if task.done() and task.exception():
                    raise task.exception()
        await asyncio.to_thread(self.wait_nodes_healthy)
        self.healed_at = self.now()
        stop_changes.set()
        await asyncio.gather(*changer_tasks)
        self.quiet_at = max([self.healed_at] + [c.acked for ch in self.changers for c in ch.changes if c.acked])
        await self.check(stop_observers)
        await asyncio.gather(*observer_tasks)
        await asyncio.gather(*(client.drop() for client in self.changers + self.observers))
        await self.quiet_phase()

    # -- the quiet phase: only catch-up can satisfy it

    @staticmethod
    def links(node) -> dict:
        """A node's links to PostgreSQL as its /healthz tells them (served with 503 while one is down)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{node.port}/healthz", timeout=5) as reply:
                body = reply.read()
        except urllib.error.HTTPError as error:
            body = error.read()
        except OSError:
            return {}
        try:
            return json.loads(body).get("hosted", {}).get("links", {})
        except ValueError:
            return {}

    def links_down(self, indexes: list[int]) -> None:
        """Waits (bounded) until each node named has noticed its LISTEN link is gone."""
        deadline = time.monotonic() + TIMEOUT
        for index in indexes:
            while time.monotonic() < deadline and self.links(self.fleet.nodes[index]).get("listener") == "up":
                time.sleep(0.05)

    def links_up(self) -> None:
        deadline = time.monotonic() + TIMEOUT * 3
        for node in self.fleet.nodes:
            while True:
                links = self.links(node)
                if links and all(state == "up" for state in links.values()):
                    break
                if time.monotonic() > deadline:
                    self.problems.append(f"quiet phase: {node.name}'s links did not come back")
                    return
                time.sleep(0.05)

    async def quiet_phase(self) -> None:
        """Every seed ends with a change no notification carries: an account no client touched is observed on every
        node; the other nodes' links to PostgreSQL (their LISTEN link with them) are cut; one change is committed on
        the remaining node; the links heal and nothing changes any more. Every observer must see the change within
        CONVERGENCE_SECONDS of the heal — only a node's catch-up by cursor after its LISTEN link is back can tell it."""
        fleet = self.fleet
        account = f"drill-{self.config.seed}-quiet"
        token = fleet.token(account, lifetime=86_400)
        committer = self.rng.randrange(len(fleet.nodes))
        cut = [index for index in range(len(fleet.nodes)) if index != committer]
        watchers: list[tuple[str, Session]] = []
        views: dict[str, bool] = {}
        try:
            for node in fleet.nodes:
                session = await Session.open(node.socket_path, token)
                observed = await session.call("tips/observe", {"ids": ["welcome.tour"]})
                views[node.name] = observed["tips"][0]["shouldDisplay"]
                watchers.append((node.name, session))
            shown = set(views.values())
            if len(shown) != 1:
                self.problems.append(f"quiet phase: the nodes disagree on a fresh account's welcome.tour: {shown}")
                return
            want = not shown.pop()
            for index in cut:
                fleet.proxies[index].set("cut")
            await asyncio.to_thread(self.links_down, cut)
            change = ("tips/resetEligibility", {"id": "welcome.tour"})
            if not want:
                change = ("tips/invalidate", {"id": "welcome.tour", "reason": "tipClosed"})
            session = watchers[committer][1]
            for attempt in range(20):
                try:
                    await session.call(change[0], {**change[1], "idempotencyKey": f"{account}.quiet"})
                    break
                except RpcError as error:
                    if error.code not in RETRYABLE or attempt == 19:
                        self.problems.append(f"quiet phase: {change[0]} on node{committer + 1} refused: {error}")
                        return
                    await asyncio.sleep(0.25)
            for index in cut:
                fleet.proxies[index].heal()
            healed = self.now()
            self.quiet_cut = [fleet.nodes[index].name for index in cut]
            await asyncio.to_thread(self.links_up)

            def view(name: str, session: Session) -> bool:
                for note in session.notifications:
                    if note.get("method") == "tips/shouldDisplayChanged" and note["params"].get("id") == "welcome.tour":
                        views[name] = note["params"]["shouldDisplay"]
                session.notifications.clear()
                return views[name]

            converged: dict[str, float] = {}
            deadline = time.monotonic() + TIMEOUT
            while len(converged) < len(watchers) and time.monotonic() < deadline:
                for name, watcher in watchers:
                    if name not in converged and view(name, watcher) == want:
                        converged[name] = self.now() - healed
                await asyncio.sleep(0.02)
            self.quiet_lags = list(converged.values()) + [float("inf")] * (len(watchers) - len(converged))
            for name, _ in watchers:
                lag = converged.get(name)
                if lag is None or lag > CONVERGENCE_SECONDS:
                    heard = "never" if lag is None else f"{lag:.2f} s after the heal"
                    self.problems.append(
                        f"quiet phase: the observer on {name} saw {change[0]} (committed on node{committer + 1} while "
                        f"{', '.join(self.quiet_cut)} were cut off PostgreSQL) {heard}: a missed notification was "
                        "not caught up"
                    )
        finally:
            for _, watcher in watchers:
                with contextlib.suppress(Exception):
                    await watcher.close()

    async def node_states(self) -> list[dict[str, dict]]:
        """Each node's view of every account, asked directly (an admin session on its Unix socket)."""
        views = []
        for node in self.fleet.nodes:
            admin = await Session.open(node.socket_path, ADMIN_TOKEN)
            try:
                view = {}
                for account in self.accounts:
                    status = await admin.call("tips/status", {"account": account})
                    inspect = await admin.call("inspect/state", {"account": account})
                    view[account] = {
                        "tips": {t["id"]: (t["shouldDisplay"], t["status"], t["displayCount"]) for t in status["tips"]},
                        "events": {e["id"]: e["lifetime"] for e in inspect["events"]},
                        "parameters": {p["id"]: p["value"] for p in inspect["parameters"]},
                    }
                views.append(view)
            finally:
                await admin.close()
        return views

    async def check(self, stop_observers: asyncio.Event) -> None:
        # The nodes agree (each asked directly; a resident copy that missed a change shows it).
        deadline = time.monotonic() + TIMEOUT * 2
        while True:
            views = await self.node_states()
            if all(view == views[0] for view in views):
                break
            if time.monotonic() > deadline:
                for account in self.accounts:
                    differing = [view[account] for view in views]
                    if any(d != differing[0] for d in differing):
                        self.problems.append(f"nodes disagree on {account}: {differing}")
                        self.problems.append(self.devices(account))
                        for changer in self.changers:
                            for change in changer.changes:
                                if changer.account == account and change.attempts > 1:
                                    self.problems.append(
                                        f"  retried: {change.key} {change.method} {change.params} {change.trail}"
                                    )
                break
            await asyncio.sleep(0.2)
        final = views[0]
        # Every observer's last shouldDisplay is the final one, within 5 s of the last fault healed (or of the last
        # change acknowledged after that).
        deadline = time.monotonic() + TIMEOUT
        probed = False
        while time.monotonic() < deadline:
            if all(self.converged(o, final) for o in self.observers):
                break
            if not probed and self.now() > self.quiet_at + CONVERGENCE_SECONDS + 1:
                probed = True
                await self.probe_stale(final)
            await asyncio.sleep(0.05)
        stop_observers.set()
        self.lags = []
        for observer in self.observers:
            if not self.converged(observer, final):
                want = {tip: final[observer.account]["tips"][tip][0] for tip in OBSERVED}
                self.problems.append(
                    f"observer {observer.name} never converged: sees {observer.view}, final {want}; "
                    f"connections {observer.connections[-3:]}"
                )
                continue
            # From the last fault healed, or from the last change to its account acknowledged after that.
            settled = max(
                [self.healed_at]
                + [c.acked for ch in self.changers if ch.account == observer.account for c in ch.changes if c.acked]
            )
            lag = max(0.0, observer.changed_at - settled)
            self.lags.append(lag)
            if lag > CONVERGENCE_SECONDS:
                self.problems.append(
                    f"observer {observer.name} converged {lag:.2f} s after the last change/heal (at "
                    f"{observer.changed_at:.2f} s; its account settled at {settled:.2f} s); connections "
                    f"{observer.connections[-3:]}"
                )
        self.final = final

    def devices(self, account: str) -> str:
        """What tipsd.ops holds of an account, device by device (a disagreement's evidence)."""
        rows = self.fleet.query(
            "SELECT device, op::json->>'kind', coalesce(op::json->>'event', op::json->>'key', op::json->>'id'), "
            "count(*), max(seq), max((op::json->>'lifetime')::int) FROM tipsd.ops "
            f"WHERE account = '{account}' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        )
        return f"{account} in tipsd.ops (device|kind|what|count|max seq|max lifetime):\n    " + "\n    ".join(
            rows.splitlines()
        )

    async def probe_stale(self, final: dict) -> None:
        """An observer still wrong: what its own session's node says (a stale account, or a notification lost)."""
        for observer in self.observers:
            if self.converged(observer, final) or observer.connection is None:
                continue
            try:
                status = await observer.connection.call("tips/status", {"ids": OBSERVED}, timeout=5)
                says = {t["id"]: t["shouldDisplay"] for t in status["tips"]}
            except (*CONNECTION_ERRORS, RpcError) as error:
                says = repr(error)
            want = {tip: final[observer.account]["tips"][tip][0] for tip in OBSERVED}
            self.problems.append(
                f"observer {observer.name} still wrong {CONVERGENCE_SECONDS + 1:g} s after the last change: its view "
                f"{observer.view}, its session's node says {says}, final {want}, on {observer.connections[-1][1]}"
            )

    def converged(self, observer: Observer, final: dict) -> bool:
        tips = final[observer.account]["tips"]
        return all(observer.view.get(tip) == tips[tip][0] for tip in OBSERVED)

    # -- the ledger

    def ledger(self) -> dict[str, int]:
        """Acknowledged changes against what PostgreSQL and the nodes hold."""
        stored: dict[tuple[str, str], str] = {}
        for line in self.fleet.query("SELECT account, key, reply FROM tipsd.idempotency").splitlines():
            account, key, reply = line.split("|", 2)
            stored[(account, key)] = reply
        ops: dict[str, list[str]] = {}
        for line in self.fleet.query("SELECT account, op FROM tipsd.ops ORDER BY account, cursor").splitlines():
            account, op = line.split("|", 1)
            ops.setdefault(account, []).append(op)
        changes = [(c.account, change) for c in self.changers for change in c.changes]
        figures = dict(acknowledged=0, lost=0, doubled=0, mismatched=0, unanswered=0)
        known = set()
        for account, change in changes:
            known.add((account, change.key))
            if change.acked is None:
                figures["unanswered"] += 1
                self.problems.append(
                    f"never acknowledged: {account} {change.key} {change.method} {change.params} {change.trail}"
                )
                continue
            figures["acknowledged"] += 1
            reply = stored.get((account, change.key))
            if reply is None:
                figures["lost"] += 1
                self.problems.append(f"lost: {account} {change.key} {change.method} was acknowledged, not stored")
            elif json.loads(reply) != change.result:
                figures["mismatched"] += 1
                self.problems.append(
                    f"mismatched: {account} {change.key} {change.method}: told {change.result}, stored {reply}"
                )
        strangers = [key for key in stored if key not in known and key[0] in self.accounts]
        if strangers:
            self.problems.append(f"keys stored that no client sent: {strangers[:5]}")
        # Counts: each event's lifetime donations and the counted tip's displays equal the distinct keys applied.
        for account in self.accounts:
            applied: dict[str, int] = {}
            for owner, change in changes:
                if owner != account or (account, change.key) not in stored:
                    continue
                if change.method == "events/donate":
                    applied[change.params["id"]] = applied.get(change.params["id"], 0) + 1
                elif change.method == "tips/displayed" and change.params["id"] == COUNTED_TIP:
                    applied[COUNTED_TIP] = applied.get(COUNTED_TIP, 0) + 1
            state = self.final[account]
            counted = dict(state["events"])
            counted[COUNTED_TIP] = state["tips"][COUNTED_TIP][2]
            for what in set(applied) | {k for k, v in counted.items() if v}:
                have, want = counted.get(what, 0), applied.get(what, 0)
                if have > want:
                    figures["doubled"] += have - want
                    self.problems.append(f"doubled: {account} {what}: {have} in the account, {want} keys applied")
                    self.problems += self.resent(account, what, changes)
                elif have < want:
                    figures["lost"] += want - have
                    self.problems.append(f"lost: {account} {what}: {have} in the account, {want} keys applied")
            # And in tipsd.ops: one donation operation per applied key.
            donated: dict[str, int] = {}
            for op in ops.get(account, []):
                event = donation_event(op)
                if event is not None:
                    donated[event] = donated.get(event, 0) + 1
            for event in set(donated) | {e for e in applied if e in EVENTS or e == "filter.used"}:
                if donated.get(event, 0) != applied.get(event, 0):
                    self.problems.append(
                        f"tipsd.ops holds {donated.get(event, 0)} donations of {event} for {account}, "
                        f"{applied.get(event, 0)} keys applied"
                    )
                    diff = donated.get(event, 0) - applied.get(event, 0)
                    figures["doubled" if diff > 0 else "lost"] += abs(diff)
        return figures

    def resent(self, account: str, what: str, changes: list) -> list[str]:
        """A doubled count's suspects: its changes that were sent more than once, with their trails."""
        suspects = []
        for owner, change in changes:
            if owner != account or change.attempts < 2 or what not in (change.params.get("id"), None):
                continue
            suspects.append(f"  sent {change.attempts} times: {change.key} {change.method} {change.trail}")
        return suspects[:12]

    def run(self) -> DrillReport:
        config = self.config
        self.fleet = Fleet(
            3,
            node_options=[
                "--account-rate",
                "100000",
                "--postgres-timeout",
                f"{config.postgres_timeout:g}",
                # No snapshot, so nothing pruned from tipsd.ops: the checker counts every operation there (the
                # retention of tipsd.ops has its own tests, test_fleet_retention.py).
                "--compaction-threshold",
                "1000000000",
                # The repair net (#44) compares every resident account with PostgreSQL every 2 s: it must repair
                # nothing (a repair is a divergence the drill would otherwise see only by luck).
                "--repair-interval",
                "2",
            ],
            link_proxies=True,
        )
        figures: dict[str, object] = {}
        try:
            self.started = time.monotonic()
            try:
                asyncio.run(self.body())
            except Exception as error:  # noqa: BLE001 — reported with the seed and the faults
                import traceback

                self.problems.append(f"the drill stopped: {error!r}\n{traceback.format_exc()}")
            figures["faults_injected"] = len(self.faults)
            if hasattr(self, "final"):
                figures.update(self.ledger())
            self.changers = getattr(self, "changers", [])
            self.observers = getattr(self, "observers", [])
            figures["retries"] = sum(max(0, c.attempts - 1) for ch in self.changers for c in ch.changes)
            figures["reconnects"] = sum(client.reconnects for client in self.changers + self.observers)
            # Calls that got no answer at all within CALL_TIMEOUT (their connection stayed up): with
            # --postgres-timeout, every request is answered (-32016 at worst) well within it.
            figures["timeouts"] = sum(
                1 for ch in self.changers for c in ch.changes for _, _, outcome in c.trail if outcome == "TimeoutError"
            )
            if figures["timeouts"]:
                self.problems += [
                    f"never answered within {CALL_TIMEOUT:g} s: {change.key} {change.method} {change.trail}"
                    for ch in self.changers
                    for change in ch.changes
                    if any(outcome == "TimeoutError" for _, _, outcome in change.trail)
                ]
            figures["notifications"] = sum(o.notifications for o in self.observers)
            figures["worst_observer_lag_ms"] = round(max(getattr(self, "lags", None) or [0]) * 1000)
            # Resends after a reply dropped on purpose: each hit a stored key (no seed leaves doubling untested).
            figures["key_hits"] = sum(changer.key_hits for changer in self.changers)
            if hasattr(self, "final") and not figures["key_hits"]:
                self.problems.append("no resend hit a stored key: this seed did not test doubling")
            # The quiet phase's slowest observer, from the heal ("never": one did not see the change in TIMEOUT).
            quiet = max(getattr(self, "quiet_lags", None) or [0])
            figures["quiet_lag_ms"] = "never" if quiet == float("inf") else round(quiet * 1000)
            for client in self.changers + self.observers:
                self.problems += [f"{client.name}: {error}" for error in client.errors]
            figures["repairs"] = 0
            figures["repair_checks"] = sum(repair_checks(node) for node in self.fleet.nodes)
            for index, node in enumerate(self.fleet.nodes):
                if node.proc.poll() is not None:
                    self.problems.append(f"node{index + 1} died on its own (exit {node.proc.returncode})")
                log = node.log_text()
                repaired = [
                    line
                    for line in log.splitlines()
                    if "differed from PostgreSQL" in line or "stayed behind PostgreSQL" in line
                ]
                figures["repairs"] += len(repaired)
                self.problems += [f"node{index + 1} repaired an account: {line[:400]}" for line in repaired[:3]]
                for marker in ("Fatal error", "fatal error", "Assertion failed", "Segmentation"):
                    if marker in log:
                        self.problems.append(f"node{index + 1}'s log: {marker}")
            figures["problems"] = len(self.problems)
        finally:
            if self.problems:
                self.keep_logs()
            self.fleet.close()
            import shutil

            shutil.rmtree(self.fleet.directory, ignore_errors=True)
        return DrillReport(config.seed, config.seconds, self.faults, figures, self.problems)

    def keep_logs(self) -> None:
        """The nodes' logs, kept past the fleet's removal for a failed run."""
        import shutil
        import tempfile

        kept = os.environ.get("TIPSD_DRILL_LOGS") or tempfile.mkdtemp(prefix=f"tipsd-drill-{self.config.seed}-")
        for path in self.fleet.directory.glob("*.log"):
            with contextlib.suppress(OSError):
                shutil.copy(path, kept)
        self.problems.append(f"(node logs kept in {kept})")


def donation_event(op: str) -> str | None:
    """The event a stored operation donates, if it is a donation."""
    try:
        payload = json.loads(op)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    kind = payload.get("kind") or payload.get("type") or payload.get("op")
    if kind in ("donate", "donation", "eventDonated"):
        return payload.get("event") or payload.get("id")
    return None


def run(config: DrillConfig) -> DrillReport:
    return Drill(config).run()
