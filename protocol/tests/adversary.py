"""A stateful adversary for a hosted node (issue #33): several signed-in users, an unauthenticated stranger and the
admin send random frames — single messages and batches, every method of protocol/openrpc.json, params naming other
accounts, other sessions' subscription ids, cursors and junk — interleaved with sign-ins, refreshes with other
users' tokens and account deletions, against a real node and PostgreSQL.

After every step it checks:

- the node is alive;
- every request of the frame got exactly one reply (a batch: one array holding each id once), unless the node closed
  the connection saying why (an id-null error: its account was deleted, it did not sign in in time) or the frame
  asked to `exit`;
- no reply or notification to a user's connection carries another account's id or data: every account id and every
  account's donation marker (each user donates with `{"owner": "<its marker>"}`) is a unique random string, and none
  may appear in what another user's connection receives; a notification names a subscription its connection made;
- an erased account never signs in again.

A failure raises ``AdversaryFailure`` naming the seed, the step and the frame, so `TIPSD_ADVERSARY_SEED=N` replays it.
"""

from __future__ import annotations

import base64
import json
import os
import random
import socket
import time
from dataclasses import dataclass, field

DEMO_TIPS = ["welcome.tour", "filter.tip", "advanced-search.tip", "show-location.tip", "rotate-map.tip"]
DEMO_EVENTS = ["search.opened", "search.performed", "filter.used", "map.opened", "trail.visited", "tour.finished"]
REPLY_TIMEOUT = 20.0


class AdversaryFailure(AssertionError):
    pass


@dataclass
class Actor:
    name: str
    account: str | None  # None: the admin, or the stranger
    admin: bool = False
    marker: str | None = None
    doomed: bool = False
    deleted: bool = False
    connections: list = field(default_factory=list)


class Connection:
    """One newline-framed connection to the node's Unix socket, read without blocking the others."""

    def __init__(self, path: str, actor: Actor, ids):
        self.actor = actor
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.setblocking(False)
        self.buffer = b""
        self.ids = ids
        self.initialized = False
        self.signed_as: str | None = None  # the account (or "admin") this connection signed in as
        self.closed = False
        self.close_reason: str | None = None
        self.subscriptions: set[str] = set()
        self.pending_notifications: list = []
        # Whether it sent a subscribing method as a notification (a subscription whose id it never learns).
        self.blind_subscriptions = False
        self.exiting = False
        # The last frames sent and what came back, for a failure's report.
        self.trail: list[str] = []

    def send(self, frame) -> None:
        data = (json.dumps(frame) + "\n").encode()
        try:
            self.sock.setblocking(True)
            self.sock.settimeout(REPLY_TIMEOUT)
            self.sock.sendall(data)
        except OSError:
            self.closed = True
        finally:
            self.sock.setblocking(False)

    def read_available(self) -> list:
        """Whatever whole messages arrived (parsed), without waiting."""
        messages = []
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                break
            self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                messages.append(json.loads(line))
        return messages

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        self.closed = True


class Adversary:
    def __init__(self, node, hosted, seed: int, steps: int, admin_token: str):
        self.node = node
        self.hosted = hosted
        self.seed = seed
        self.steps = steps
        self.rng = random.Random(seed)
        self.admin_token = admin_token
        self.ids = iter(range(1, 1 << 60))
        tag = f"{seed:x}"
        self.users = [
            Actor(f"user{i}", f"acct-{tag}-{i}-{self.rng.randrange(1 << 32):08x}", doomed=i >= 4) for i in range(6)
        ]
        for user in self.users:
            user.marker = f"mark-{self.rng.randrange(1 << 48):012x}"
        self.admin = Actor("admin", None, admin=True)
        self.stranger = Actor("stranger", None)
        self.actors = [*self.users, self.admin, self.stranger]
        # Every subscription id any connection was given: an attacker tries others'.
        self.seen_subscriptions: list[str] = []
        self.owners: dict[str, Connection] = {}
        self.seen_cursors: list[int] = [0]
        self.exports: list[dict] = []
        self.counts = {"frames": 0, "batches": 0, "requests": 0, "replies": 0, "refused": 0, "closed": 0}
        self.step = 0
        self.frame = None
        self.current: Connection | None = None

    # ------------------------------------------------------------------------------------------------- checks

    def fail(self, message: str) -> None:
        trail = "\n".join(self.current.trail[-8:]) if self.current else ""
        raise AdversaryFailure(
            f"seed {self.seed} (TIPSD_ADVERSARY_SEED={self.seed}), step {self.step}: {message}\n"
            f"frame: {json.dumps(self.frame)[:2000]}\nthis connection's last frames and replies:\n{trail}\n"
            f"node log (tail):\n{self.node.log_text()[-3000:]}"
        )

    def alive(self) -> None:
        if self.node.proc.poll() is not None:
            self.fail(f"the node died (status {self.node.proc.returncode})")

    def foreign_strings(self, connection: Connection) -> list[str]:
        """What a connection may never see: other accounts' ids and markers (nothing, for the admin)."""
        if connection.signed_as == "admin":
            return []
        own = connection.signed_as
        strings = []
        for user in self.users:
            if user.account != own:
                strings += [user.account, user.marker]
        return strings

    def inspect(self, connection: Connection, message) -> None:
        text = json.dumps(message)
        for foreign in self.foreign_strings(connection):
            if foreign in text:
                self.fail(
                    f"{connection.actor.name} (signed in as {connection.signed_as}) received another account's "
                    f"data ({foreign}): {text[:600]}"
                )
        if isinstance(message, dict) and "method" in message and "id" not in message:
            # Checked once the frame's replies are in: a batch's reply (naming a subscription it made) is sent
            # after every request of it has run, so a notification of that subscription may come first.
            connection.pending_notifications.append(message)

    def check_notifications(self, connection: Connection) -> None:
        for message in connection.pending_notifications:
            subscription = (message.get("params") or {}).get("subscription")
            if subscription is None or subscription in connection.subscriptions:
                continue
            owner = self.owners.get(subscription)
            # Another connection's subscription is a leak; one this connection made with a notification (a request
            # without an id runs, its reply is not sent) is its own, though it never learnt the id.
            if owner is not None or not connection.blind_subscriptions:
                self.fail(
                    f"{connection.actor.name} got a notification of a subscription it never made "
                    f"({'made by ' + owner.actor.name if owner else 'unknown'}): {json.dumps(message)[:400]}"
                )
        connection.pending_notifications = []

    def note_result(self, connection: Connection, request: dict, reply: dict) -> None:
        result = reply.get("result")
        method = request.get("method")
        if isinstance(result, dict):
            subscription = result.get("subscription")
            if isinstance(subscription, str):
                connection.subscriptions.add(subscription)
                self.seen_subscriptions.append(subscription)
                self.owners[subscription] = connection
            for key in ("head", "next"):
                if isinstance(result.get(key), int):
                    self.seen_cursors.append(result[key])
            if method == "initialize" and "auth" in result:
                auth = result["auth"]
                signed = "admin" if auth and auth.get("admin") else (auth or {}).get("account")
                if connection.signed_as is not None and signed != connection.signed_as:
                    self.fail(f"a session switched accounts: {connection.signed_as} -> {signed}")
                connection.signed_as = signed
                connection.initialized = True
                for user in self.users:
                    if user.deleted and signed == user.account:
                        self.fail(f"the erased account {user.account} signed in again")
            if method == "accounts/export" and "state" in result:
                self.exports.append(result)
            if method == "accounts/delete":
                for user in self.users:
                    if user.account == result.get("account"):
                        user.deleted = True  # from now on its tokens must never sign in
        if "error" in reply:
            self.counts["refused"] += 1
            if method == "initialize" and reply["error"].get("code") == -32600:
                connection.initialized = True  # already initialized

    # ----------------------------------------------------------------------------------------------- running

    def connection(self, actor: Actor) -> Connection:
        live = [c for c in actor.connections if not c.closed]
        actor.connections = live
        if live and (len(live) >= 2 or self.rng.random() < 0.85):
            return self.rng.choice(live)
        connection = Connection(self.node.socket_path, actor, self.ids)
        actor.connections.append(connection)
        return connection

    def exchange(self, connection: Connection, frame) -> None:
        """Sends a frame and waits for its replies; checks each request is answered exactly once."""
        self.frame = frame
        self.current = connection
        connection.trail.append(f"sent: {json.dumps(frame)[:300]}")
        messages = frame if isinstance(frame, list) else [frame]
        requests = {
            m["id"]: m for m in messages if isinstance(m, dict) and "id" in m and m["id"] is not None and "method" in m
        }
        invalid = [m for m in messages if not (isinstance(m, dict) and "method" in m)]
        wants_reply = bool(requests) or bool(invalid) or (isinstance(frame, list) and not frame)
        connection.exiting = any(isinstance(m, dict) and m.get("method") == "exit" for m in messages)
        connection.blind_subscriptions = connection.blind_subscriptions or any(
            isinstance(m, dict) and m.get("method") in SUBSCRIBING and "id" not in m for m in messages
        )
        self.counts["frames"] += 1
        self.counts["batches"] += isinstance(frame, list)
        self.counts["requests"] += len(requests)
        connection.send(frame)
        answered: dict = {}
        deadline = time.monotonic() + REPLY_TIMEOUT
        got_frame_reply = not wants_reply
        if connection.exiting and not wants_reply:
            connection.close()  # `exit` alone: the node closes it; nothing more is sent on it
            return
        while not got_frame_reply:
            for message in connection.read_available():
                connection.trail.append(f"  got: {json.dumps(message)[:300]}")
                if isinstance(message, dict) and "method" in message:
                    self.inspect(connection, message)  # a notification
                    continue
                # Replies are taken before they are inspected: an initialize in the frame decides who the connection
                # is (a user holding another user's valid token signs in as that user).
                if isinstance(message, list):
                    if not isinstance(frame, list):
                        self.fail(f"a batch reply to a single message: {message}")
                    for part in message:
                        self.answer(connection, requests, answered, part)
                    got_frame_reply = True
                elif isinstance(message, dict) and message.get("id") is not None:
                    self.answer(connection, requests, answered, message)
                    got_frame_reply = got_frame_reply or not isinstance(frame, list)
                elif isinstance(message, dict) and "error" in message:
                    if (isinstance(frame, list) and not frame) or (invalid and not requests):
                        got_frame_reply = True  # the reply to an empty batch, or to an unreadable message
                    else:  # the node closes the connection, saying why
                        data = message["error"].get("data") or {}
                        connection.close_reason = data.get("reason") or message["error"].get("message")
                else:
                    self.fail(f"a message that is neither a reply nor a notification: {message}")
                self.inspect(connection, message)
            if got_frame_reply:
                break
            if connection.closed:
                if connection.close_reason or connection.exiting:
                    self.counts["closed"] += 1
                    self.check_notifications(connection)
                    return
                self.fail(f"the connection closed without answering (answered {sorted(answered)})")
            if time.monotonic() > deadline:
                self.fail(f"no reply within {REPLY_TIMEOUT} s (answered {sorted(answered)} of {sorted(requests)})")
            time.sleep(0.0005)
        missing = set(requests) - set(answered)
        if missing:
            self.fail(f"requests {sorted(missing)} got no reply (answered {sorted(answered)})")
        self.check_notifications(connection)
        if connection.exiting:
            connection.close()

    def answer(self, connection: Connection, requests: dict, answered: dict, reply) -> None:
        if not isinstance(reply, dict):
            self.fail(f"a reply that is not an object: {reply}")
        reply_id = reply.get("id")
        if reply_id is None:
            return  # an invalid message's error
        if reply_id in answered:
            self.fail(f"request {reply_id} answered twice: {answered[reply_id]} and {reply}")
        if reply_id not in requests:
            self.fail(f"a reply to no request of the frame: {reply}")
        answered[reply_id] = reply
        self.counts["replies"] += 1
        self.note_result(connection, requests[reply_id], reply)

    def drain(self) -> None:
        for actor in self.actors:
            for connection in actor.connections:
                if connection.closed:
                    continue
                for message in connection.read_available():
                    self.inspect(connection, message)
                    if isinstance(message, dict) and message.get("id") is None and "error" in message:
                        data = message["error"].get("data") or {}
                        connection.close_reason = data.get("reason") or "closed"
                self.check_notifications(connection)

    def run(self) -> dict:
        started = time.monotonic()
        for step in range(1, self.steps + 1):
            self.step = step
            actor = self.rng.choices(self.actors, weights=[5] * len(self.users) + [3, 2])[0]
            connection = self.connection(actor)
            self.exchange(connection, self.make_frame(connection))
            self.alive()
            if self.step % 25 == 0:
                self.drain()
        self.drain()
        self.alive()
        for actor in self.actors:
            for connection in actor.connections:
                connection.close()
        self.counts["seconds"] = round(time.monotonic() - started, 1)
        self.counts["deleted"] = sum(user.deleted for user in self.users)
        return self.counts

    # ------------------------------------------------------------------------------------------------ frames

    def token_for(self, actor: Actor) -> str:
        rng = self.rng
        if actor.admin:
            return self.admin_token if rng.random() < 0.9 else self.admin_token + "\u0000" * rng.choice([1, 256])
        if actor.account is None:  # the stranger: forged, garbage, or someone else's claims badly signed
            victim = rng.choice(self.users).account
            choice = rng.randrange(4)
            if choice == 0:
                return forged(self.hosted.token(victim))
            if choice == 1:
                return "x" * rng.choice([0, 1, 100, 9000])
            if choice == 2:
                return self.hosted.token(victim, audience="another-project")
            return self.hosted.token(victim, lifetime=-60)
        if rng.random() < 0.1:  # a user tries another's token (their own connection stays theirs)
            return self.hosted.token(rng.choice(self.users).account)
        return self.hosted.token(actor.account, lifetime=rng.choice([3600, 3600, 60]))

    def make_frame(self, connection: Connection):
        rng = self.rng
        if not connection.initialized and rng.random() < 0.8:
            first = self.initialize(connection)
            if rng.random() < 0.4:  # signing in and acting in one batch
                return [first] + [self.message(connection) for _ in range(rng.randint(1, 4))]
            return first
        if rng.random() < 0.3:
            size = rng.choice([0, 1, 2, 3, 5, 8])
            return [self.message(connection) for _ in range(size)]
        return self.message(connection)

    def initialize(self, connection: Connection) -> dict:
        params = {"protocolVersion": "1.2", "clientInfo": {"name": "adversary"}}
        if self.rng.random() < 0.95:
            params["auth"] = {"token": self.token_for(connection.actor)}
        return {"jsonrpc": "2.0", "id": next(self.ids), "method": "initialize", "params": params}

    def message(self, connection: Connection):
        rng = self.rng
        roll = rng.random()
        if roll < 0.03:
            return rng.choice(
                [42, "text", None, [], {"jsonrpc": "2.0"}, {"jsonrpc": "1.0", "id": next(self.ids), "method": "x"}]
            )
        # Half the time a method that does something for a signed-in user (so observers, analytics and metrics have
        # data to leak, if they would), else any method of the document.
        method = rng.choice(USEFUL if rng.random() < 0.5 else METHODS)
        if method == "exit" and rng.random() < 0.7:
            method = "tips/status"
        params = self.params(connection, method)
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if method in NOTIFICATIONS or rng.random() < 0.05:
            return message  # a notification: no reply owed
        message["id"] = next(self.ids) if rng.random() < 0.97 else f"s-{next(self.ids)}"
        return message

    def other_account(self, connection: Connection) -> str:
        accounts = [u.account for u in self.users if u.account != connection.signed_as]
        return self.rng.choice(accounts + ["", "nobody", "a" * 300, "x'; DROP TABLE tipsd.ops; --"])

    def subscription(self) -> object:
        rng = self.rng
        if self.seen_subscriptions and rng.random() < 0.8:
            return rng.choice(self.seen_subscriptions)
        return rng.choice(["sub-1", "sub-999999", "", 7, None])

    def params(self, connection: Connection, method: str):
        rng = self.rng
        actor = connection.actor
        tip = rng.choice(DEMO_TIPS + ["no.such.tip"])
        event = rng.choice(DEMO_EVENTS)
        cursor = rng.choice(self.seen_cursors + [-1, 0, 1 << 62, 3.5])
        by_method = {
            "initialize": lambda: self.initialize(connection)["params"],
            "auth/refresh": lambda: {"token": self.token_for(actor)},
            "events/donate": lambda: {"id": event, **self.marker_info(connection)},
            "tips/displayed": lambda: {"id": tip, "duration": rng.choice([0, 3, -1, "x"])},
            "tips/invalidate": lambda: {"id": tip, "reason": rng.choice(["tipClosed", "actionPerformed", 3])},
            "tips/performAction": lambda: {"id": tip, "actionId": rng.choice(["learn-more", "nope"])},
            "tips/resetEligibility": lambda: {"id": tip},
            "tips/setVariant": lambda: {"id": tip, "variant": rng.choice(["a", "b", None])},
            "tips/status": lambda: rng.choice([{}, {"ids": [tip]}, {"ids": "x"}]),
            "tips/explain": lambda: {"id": tip},
            "tips/observe": lambda: rng.choice([{}, {"ids": [tip]}, {"groups": ["compass"]}]),
            "tips/unobserve": lambda: {"subscription": self.subscription()},
            "actions/subscribe": lambda: rng.choice([{}, {"tipIds": [tip]}]),
            "actions/unsubscribe": lambda: {"subscription": self.subscription()},
            "analytics/subscribe": lambda: rng.choice([{}, {"after": cursor}]),
            "analytics/unsubscribe": lambda: {"subscription": self.subscription()},
            "analytics/read": lambda: rng.choice([{}, {"after": cursor, "limit": rng.choice([1, 50, 0, 100000])}]),
            "metrics/get": lambda: rng.choice([{}, {"tips": [tip]}, {"since": cursor}]),
            "inspect/state": lambda: rng.choice([{}, {"watch": True}]),
            "parameters/set": lambda: {"id": rng.choice(["isLoggedIn", "onboardingStep", "nope"]), "value": True},
            "accounts/list": lambda: rng.choice([{}, {"after": self.other_account(connection), "limit": 3}]),
            "accounts/export": lambda: {"account": self.other_account(connection)},
            "accounts/import": lambda: {
                "account": f"imported-{rng.randrange(1 << 30)}",
                "export": rng.choice(self.exports) if self.exports and rng.random() < 0.5 else {"state": {}},
            },
            "accounts/delete": lambda: {"account": self.doomed_or_other(connection)},
            "$/cancelRequest": lambda: {"id": rng.randrange(100)},
            "clock/advance": lambda: {"seconds": 60},
        }
        params = by_method.get(method, lambda: rng.choice([None, {}, {"junk": 1}]))()
        if isinstance(params, dict) and method not in ACCOUNT_FREE and rng.random() < (0.6 if actor.admin else 0.15):
            # Naming an account: the admin's own way of choosing one, any user's attempt at another's.
            params = {**params, "account": self.other_account(connection)}
        return params

    def marker_info(self, connection: Connection) -> dict:
        """A donation's info naming the account the connection acts on (its marker), when it is a user's."""
        for user in self.users:
            if user.account == connection.signed_as:
                return {"info": {"owner": user.marker}}
        return {}

    def doomed_or_other(self, connection: Connection) -> str:
        doomed = [u for u in self.users if u.doomed and not u.deleted]
        if connection.actor.admin and connection.signed_as == "admin" and doomed and self.rng.random() < 0.5:
            return self.rng.choice(doomed).account
        if connection.signed_as == "admin":
            return self.rng.choice(["nobody", "", "a" * 300])  # the admin erases only the doomed accounts
        return self.other_account(connection)


def forged(token: str) -> str:
    header, payload, signature = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[-1] ^= 0x01
    return f"{header}.{payload}.{base64.urlsafe_b64encode(bytes(raw)).rstrip(b'=').decode()}"


def load_methods() -> tuple[list[str], set[str]]:
    document = json.loads((__import__("pathlib").Path(__file__).resolve().parents[1] / "openrpc.json").read_text())
    methods = [m["name"] for m in document["methods"]]
    notifications = {m["name"] for m in document["methods"] if m.get("x-notification")}
    return methods, notifications


METHODS, NOTIFICATIONS = load_methods()
SUBSCRIBING = {"tips/observe", "actions/subscribe", "analytics/subscribe", "inspect/state"}
USEFUL = [
    "events/donate",
    "events/donate",
    "tips/displayed",
    "tips/observe",
    "actions/subscribe",
    "analytics/read",
    "analytics/subscribe",
    "inspect/state",
    "tips/status",
    "metrics/get",
    "tips/invalidate",
    "tips/performAction",
    "tips/resetEligibility",
    "parameters/set",
    "auth/refresh",
]
ACCOUNT_FREE = {
    "initialize",
    "shutdown",
    "rpc.discover",
    "auth/refresh",
    "accounts/list",
    "accounts/export",
    "accounts/import",
    "accounts/delete",
    "catalog/reload",
    "sync/status",
    "exit",
    "initialized",
    "$/cancelRequest",
}


def default_seed() -> int:
    explicit = os.environ.get("TIPSD_ADVERSARY_SEED")
    return int(explicit) if explicit else random.randrange(1 << 31)
