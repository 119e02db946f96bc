"""A stateful adversary for a hosted node (issue #33): several signed-in users, an unauthenticated stranger and the
admin send random frames — single messages and batches, every method of protocol/openrpc.json, params naming other
accounts, other sessions' subscription ids, cursors and junk — interleaved with sign-ins, refreshes with other
users' tokens and account deletions, against a real node and PostgreSQL.

An attacker holding one valid token of its own takes some steps (issue #42: one account can never hurt another) for
resource attacks, each of which must be refused by its own budget (-32015 naming the quota; its own rate is allowed
too), never by anything else: donations whose `info` is exactly `--max-info-bytes` of JSON (kept until its state is
full) and past it (`infoBytes`, by events/donate and sync/push); pushes of 500 parameter operations naming undeclared
ids (`undeclaredParameters`, storing no operation) and on the catalog's declared parameters with ever larger values
(until `stateBytes`); floods of sessions of its account (`sessions`, the refused connection closed); forged tokens
naming a live honest user's `sub` (HS256 with the wrong key, flipped signatures; three per connection, and as its
own refresh: -32013, never a sign-in); and, given a second node on the same PostgreSQL, one idempotency key sent to
both nodes at once while every honest user writes on both (both replies the first commit's, and a retry on either
node too). Each attack that ran three times must have met its own budget at least once.

Honest users (those never erased) keep working: after every step each sends a small request (a tips/status, or now
and then a tips/displayed) on a connection of its own on every node, and it must be answered with a result — no
refusal of any kind, no lost reply, no closed connection; while a flood of sessions is held and while forgeries
naming a user arrive, the user signs in afresh with a valid token on every node. The adversary's nodes run with
NODE_FLAGS: an account rate well above what the honest users send (their probes are a few hundred a second).

After every step it checks:

- the node is alive;
- every request of the frame got exactly one reply (a batch: one array holding each id once), unless the node closed
  the connection saying why (an id-null error: its account was deleted, it did not sign in in time) or the frame
  asked to `exit`;
- no reply or notification to a user's connection carries another account's id or data: every account id and every
  account's donation marker (each user donates with `{"owner": "<its marker>"}`) is a unique random string, and none
  may appear in what another user's connection receives; a notification names a subscription its connection made;
- every reply and notification to a user's session holds only numbers and booleans its own account may have (issue
  #43: a leak of another account's tip states, counts or parameters shows though no string of it does). Each account
  has distinctive state (`AccountModel`): its display durations are multiples of a prime of its own (every
  `tips/displayed` for it, by the user or the admin, uses one), its `onboardingStep` is a multiple of another prime of
  its own, its `isLoggedIn` a constant of its own (or the default); its donations' lifetime counts and tips' display
  counts lie between what its acknowledged changes since its last reset add up to and every change ever sent for it
  (a notification, a -32016 or a lost reply counts as maybe applied); it starts with counts of its own (a setup batch
  donates `tour.skipped` and displays every tip a number of times no other account does). Refusals of any kind are
  allowed outcomes: a refused change changes nothing;
- an erased account never signs in again with a token issued before its erasure (a newer one starts it afresh, with
  nothing of its old state).

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

import jwt

import tokens

DEMO_TIPS = ["welcome.tour", "filter.tip", "advanced-search.tip", "show-location.tip", "rotate-map.tip"]
DEMO_EVENTS = ["search.opened", "search.performed", "filter.used", "map.opened", "trail.visited", "tour.finished"]
REPLY_TIMEOUT = 20.0
# Each user's own primes: its display durations are multiples of the first, its onboardingStep of the second; no
# multiple of one (below its square) is a multiple of another, so a value names the account it belongs to.
DURATION_UNITS = [10007, 10009, 10037, 10039, 10061, 10067]
STEP_UNITS = [20011, 20021, 20023, 20029, 20047, 20051]
# Only the setup donates it: each account's lifetime count of it is its own (3, 5, 7, …) until a reset.
IDENTITY_EVENT = "tour.skipped"
# Steps after a reset that may not have run yet (sent without an id, or its reply lost) during which acknowledged
# changes do not raise the lower bounds (the reset may still come after them).
RESET_GRACE = 40
# The attacker (one valid token of its own) takes this share of the steps; each attack and the budget it must meet.
ATTACK_SHARE = 0.04
ATTACKS = {
    "info": "infoBytes",
    "undeclared": "undeclaredParameters",
    "declared": "stateBytes",
    "sessions": "sessions",
    "forged": None,
    "race": None,
}
DECLARED = ["isLoggedIn", "onboardingStep"]  # the demo catalog's parameters
FLOOD_OPS = 500
SESSION_FLOOD = 48  # past --account-max-sessions (32)
FORGERS = 3  # connections presenting forged tokens per attack, three forgeries each
FORGERY_REASONS = {"badSignature", "throttled", "tooManyAttempts"}
PROBE_WRITES = 0.125  # an honest probe is a tips/displayed this often, else a tips/status
# The adversary's nodes: honest users are probed after every step, a few hundred requests a second per account, so
# the account rate is set well above what they send (the rate budget itself is test_budgets.py's); the budget of
# failed signature checks is small, so the attacker's forgeries spend it and honest users sign in past it.
NODE_FLAGS = ["--allow-testing", "--sign-in-timeout", "5", "--account-rate", "2000", "--sign-in-failures", "5"]


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
    erased_at: float | None = None  # when accounts/delete erased it (its tokens issued before are refused for good)
    connections: list = field(default_factory=list)
    model: AccountModel | None = None
    probes: list = field(default_factory=list)  # an honest user's own connections, one per node, probed every step


class AccountModel:
    """What one account may show (issue #43): bounds on its counts, its own units for durations and steps."""

    def __init__(self, index: int):
        self.index = index
        self.duration_unit = DURATION_UNITS[index]
        self.step_unit = STEP_UNITS[index]
        self.logged_in = index % 2 == 0  # the only value this account's isLoggedIn is set to (default: false)
        # Lifetime donations per event and display counts per tip: hi counts every change ever sent for the account
        # that was not refused; lo the acknowledged ones since the last reset (and its grace).
        self.hi: dict[tuple[str, str], int] = {}
        self.lo: dict[tuple[str, str], int] = {}
        self.frozen_until: dict[tuple[str, str], int] = {}
        self.all_frozen_until = -1

    def bounds(self, key: tuple[str, str]) -> tuple[int, int]:
        return self.lo.get(key, 0), self.hi.get(key, 0)

    def changed(self, key: tuple[str, str], step: int, acknowledged: bool) -> None:
        self.hi[key] = self.hi.get(key, 0) + 1
        if acknowledged and step > max(self.frozen_until.get(key, -1), self.all_frozen_until):
            self.lo[key] = self.lo.get(key, 0) + 1

    def reset(self, keys: list[tuple[str, str]] | None, step: int, acknowledged: bool) -> None:
        until = step + (0 if acknowledged else RESET_GRACE)
        if keys is None:
            self.lo.clear()
            self.all_frozen_until = max(self.all_frozen_until, until)
            return
        for key in keys:
            self.lo[key] = 0
            self.frozen_until[key] = max(self.frozen_until.get(key, -1), until)

    def durations(self, rng: random.Random) -> object:
        return rng.choice([0, self.duration_unit, 2 * self.duration_unit, -1, "x"])

    def parameter_value(self, rng: random.Random, parameter: str) -> object:
        if parameter == "isLoggedIn":
            return self.logged_in
        if parameter == "onboardingStep":
            return self.step_unit * rng.randint(1, 9)
        return True


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
        # The account whose token its last initialize carried (the one it acts on once that sign-in is answered).
        self.presumed: str | None = None
        # Notifications read during its current frame: checked against the model once the frame's changes are in it.
        self.unchecked: list = []
        self.closed = False
        self.close_reason: str | None = None
        self.subscriptions: set[str] = set()
        self.pending_notifications: list = []
        # Whether it sent a subscribing method as a notification (a subscription whose id it never learns).
        self.blind_subscriptions = False
        self.exiting = False
        self.shut = False  # `shutdown` answered: it refuses everything but `exit` from now on
        # The last frames sent and what came back, for a failure's report.
        self.trail: list[str] = []
        # On the second node: its reads may lag the first node's acknowledged changes (no lower bounds), and its
        # changes count as maybe applied there.
        self.remote = False
        self.node_name = "A"

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
    def __init__(self, node, hosted, seed: int, steps: int, admin_token: str, node_b=None, max_info_bytes: int = 4096):
        self.node = node
        self.node_b = node_b  # a second node on the same PostgreSQL: honest probes there, idempotency-key races
        self.max_info_bytes = max_info_bytes
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
        for index, user in enumerate(self.users):
            user.marker = f"mark-{self.rng.randrange(1 << 48):012x}"
            user.model = AccountModel(index)
        self.honest = [user for user in self.users if not user.doomed]  # never erased: probed after every step
        self.attacker = Actor("attacker", f"acct-{tag}-attacker-{self.rng.randrange(1 << 32):08x}")
        self.attacker.marker = f"mark-{self.rng.randrange(1 << 48):012x}"
        self.attacker_sessions: dict[str, Connection] = {}
        self.attacker_seq = 0
        self.attacker_hlc = 0
        self.attack_runs: dict[str, int] = {kind: 0 for kind in ATTACKS}
        self.attack_outcomes: dict[str, dict[str, int]] = {}
        self.admin = Actor("admin", None, admin=True)
        self.stranger = Actor("stranger", None)
        self.actors = [*self.users, self.admin, self.stranger]
        # Every subscription id any connection was given: an attacker tries others'.
        self.seen_subscriptions: list[str] = []
        self.owners: dict[str, Connection] = {}
        self.seen_cursors: list[int] = [0]
        self.exports: list[dict] = []
        self.counts = {
            "frames": 0,
            "batches": 0,
            "requests": 0,
            "replies": 0,
            "refused": 0,
            "closed": 0,
            "checked": 0,
            "erased": 0,
            "attacks": 0,
            "probes": 0,
            "fresh sign-ins": 0,
        }
        self.step = 0
        self.frame = None
        self.current: Connection | None = None
        self.issued: dict[str, set[str]] = {}  # the valid tokens minted for each user
        self.token_account: str | None = None
        self.token_iat: dict[str, int] = {}

    # ------------------------------------------------------------------------------------------------- checks

    def fail(self, message: str) -> None:
        trail = "\n".join(self.current.trail[-8:]) if self.current else ""
        raise AdversaryFailure(
            f"seed {self.seed} (TIPSD_ADVERSARY_SEED={self.seed}), step {self.step}: {message}\n"
            f"frame: {json.dumps(self.frame)[:2000]}\nthis connection's last frames and replies:\n{trail}\n"
            + "".join(f"node {node.name} log (tail):\n{node.log_text()[-3000:]}\n" for node in self.nodes())
        )

    def alive(self) -> None:
        for node in self.nodes():
            if node.proc.poll() is not None:
                self.fail(f"the node {node.name} died (status {node.proc.returncode})")

    def nodes(self) -> list:
        return [self.node] + ([self.node_b] if self.node_b is not None else [])

    def foreign_strings(self, connection: Connection) -> list[str]:
        """What a connection may never see: other accounts' ids and markers (nothing, for the admin)."""
        if connection.signed_as == "admin":
            return []
        # The attacker's connections are its own even before (or without) a sign-in: a forgery naming a user is
        # refused, and the attacker's own account id in a refusal is no leak.
        own = self.attacker.account if connection.actor is self.attacker else connection.signed_as
        strings = []
        for user in [*self.users, self.attacker]:
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
            if connection is self.current:
                connection.unchecked.append(message)
            else:
                self.check_model(connection, message, None)

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
                token = ((request.get("params") or {}).get("auth") or {}).get("token")
                for user in self.users:
                    if user.erased_at is None or signed != user.account:
                        continue
                    issued = self.token_iat.get(token)
                    # iat is whole seconds: a token of the erasure's second is not told apart.
                    if issued is None or issued < int(user.erased_at):
                        self.fail(
                            f"the erased account {user.account} signed in again with a token issued before its "
                            f"erasure (iat {issued}, erased at {user.erased_at:.3f})"
                        )
                    user.deleted = False  # started afresh by a newer token: it may be erased again
            if method == "accounts/export" and "state" in result:
                self.exports.append(result)
            if method == "accounts/delete":
                for user in self.users:
                    if user.account == result.get("account"):
                        # From now on its tokens issued so far must never sign in; its state is gone.
                        user.deleted = True
                        user.erased_at = time.time()
                        self.counts["erased"] += 1
                        user.model.reset(None, self.step, True)
        if method == "shutdown" and "result" in reply:
            connection.shut = True
        if "error" in reply:
            self.counts["refused"] += 1
            if method == "initialize" and reply["error"].get("code") == -32600:
                connection.initialized = True  # already initialized

    # ------------------------------------------------------------------------------------ the accounts' model

    def model_of(self, account) -> AccountModel | None:
        for user in self.users:
            if user.account == account:
                return user.model
        return None

    def whose(self, value, unit: str) -> list[str]:
        """The users a duration (or an onboardingStep) may belong to."""
        return [user.name for user in self.users if value and value % getattr(user.model, unit) == 0 and not value % 1]

    def check_model(self, connection: Connection, message, lows: dict | None) -> None:
        """The numbers and booleans of what a session receives against its account's model. ``lows``: a reply's (the
        lower bounds at its frame's start; None for a notification, which may tell of an earlier state)."""
        signed = connection.signed_as
        if signed == "admin":
            return
        model = self.model_of(signed)

        def leak(what: str, value, owners: list[str]) -> None:
            whose = f"{', '.join(owners)}'s" if owners else "no account's"
            self.fail(
                f"{connection.actor.name} (signed in as {signed}) received {what} = {value!r}, which is {whose}, "
                f"not its account's: {json.dumps(message)[:600]}"
            )

        for part in dicts(message):
            self.counts["checked"] += 1
            duration = part.get("displayedDuration")
            if duration is None and part.get("type") == "impression":
                duration = part.get("duration")
            if isinstance(duration, (int, float)) and duration:
                if model is None or duration % model.duration_unit or duration % 1:
                    leak("a display duration", duration, self.whose(duration, "duration_unit"))
            ident = part.get("id")
            value = part.get("value")
            if ident == "onboardingStep" and isinstance(value, (int, float)) and value:
                if model is None or value % model.step_unit:
                    leak("onboardingStep", value, self.whose(value, "step_unit"))
            if ident == "isLoggedIn" and value is True and (model is None or not model.logged_in):
                leak("isLoggedIn", value, [u.name for u in self.users if u.model.logged_in])
            if model is None or not isinstance(ident, str):
                continue
            for key, count in (
                (("display", ident), part.get("displayCount")),
                (("event", ident), part.get("lifetime")),
            ):
                if not isinstance(count, int) or (key[0] == "display" and ident not in DEMO_TIPS):
                    continue
                if key[0] == "event" and "count" not in part:
                    continue
                low, high = model.bounds(key)
                if lows is not None:
                    low = min(low, lows.get(key, 0))
                else:
                    low = 0
                if not low <= count <= high:
                    owners = [
                        u.name
                        for u in self.users
                        if u.model is not model and u.model.bounds(key)[0] <= count <= u.model.bounds(key)[1]
                    ]
                    leak(
                        f"{'the display count of' if key[0] == 'display' else 'the lifetime donations of'} {ident} "
                        f"(its account's bounds: {low}..{high})",
                        count,
                        owners,
                    )

    def target_of(self, connection: Connection, message: dict) -> AccountModel | None:
        params = message.get("params")
        named = params.get("account") if isinstance(params, dict) else None
        if connection.signed_as == "admin":
            return self.model_of(named) if named is not None else None
        if named is not None and message.get("method") not in ACCOUNT_FREE:
            return None  # refused: a user's session names no account
        return self.model_of(connection.signed_as)

    def apply_frame(self, connection: Connection, messages: list, answered: dict, lows: dict) -> None:
        """The frame's changes, in the order they ran, into the model of the account each acted on; a donation's reply
        checked against the bounds just before it."""
        for message in messages:
            if not isinstance(message, dict) or not isinstance(message.get("method"), str):
                continue
            method = message["method"]
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            reply = answered.get(message["id"]) if message.get("id") is not None else None
            if reply is not None and "error" in reply and reply["error"].get("code") != -32016:
                continue  # refused: nothing changed
            acknowledged = reply is not None and "result" in reply and not connection.remote
            if (
                acknowledged
                and connection.signed_as not in (None, "admin")
                and "account" in params
                and method not in ACCOUNT_FREE
            ):
                self.fail(f"a user's session named an account and was answered: {json.dumps(reply)[:400]}")
            model = self.target_of(connection, message)
            if model is None:
                continue
            if method == "events/donate" and isinstance(params.get("id"), str):
                key = ("event", params["id"])
                low, high = model.bounds(key)
                model.changed(key, self.step, acknowledged)
                lifetime = (reply or {}).get("result", {}) if acknowledged else {}
                lifetime = lifetime.get("lifetime") if isinstance(lifetime, dict) else None
                if isinstance(lifetime, int) and not min(low, lows.get(key, 0)) + 1 <= lifetime <= high + 1:
                    self.fail(
                        f"{connection.actor.name} (signed in as {connection.signed_as}) donated {params['id']} and was "
                        f"told lifetime {lifetime}; its account's bounds were {low}..{high} before it"
                    )
            elif method == "tips/displayed" and isinstance(params.get("id"), str):
                model.changed(("display", params["id"]), self.step, acknowledged)
            elif method == "tips/resetEligibility" and isinstance(params.get("id"), str):
                model.reset([("display", params["id"])], self.step, acknowledged)
            elif method in ("datastore/reset", "accounts/delete"):
                # An erasure sent as a notification is never answered: like a reset of unknown timing, it may have
                # emptied the account at any point of its grace (an answered one also marks the user erased).
                model.reset(None, self.step, acknowledged)

    def setup(self) -> None:
        """Each user's distinctive state before the adversary starts: its own count of IDENTITY_EVENT, every tip
        displayed its own number of times (with its own duration), its own parameter values."""
        for user in self.users:
            model = user.model
            connection = Connection(self.node.socket_path, user, self.ids)
            user.connections.append(connection)
            self.exchange(connection, self.initialize(connection, token=self.hosted.token(user.account)))
            frame = [self.request("events/donate", {"id": IDENTITY_EVENT}) for _ in range(2 * model.index + 3)]
            for tip in DEMO_TIPS:
                frame += [
                    self.request("tips/displayed", {"id": tip, "duration": model.duration_unit})
                    for _ in range(model.index + 1)
                ]
            frame.append(self.request("parameters/set", {"id": "isLoggedIn", "value": model.logged_in}))
            frame.append(self.request("parameters/set", {"id": "onboardingStep", "value": model.step_unit}))
            self.exchange(connection, frame)
        self.setup_probes()

    def request(self, method: str, params: dict) -> dict:
        return {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}

    # ----------------------------------------------------------------------------------------------- running

    def connection(self, actor: Actor) -> Connection:
        live = [c for c in actor.connections if not c.closed]
        actor.connections = live
        # A connection that was shut down refuses everything: used now and then only (else most frames would be
        # refused -32006), and closed once it is not the newest.
        usable = [c for c in live if not c.shut]
        if any(c.shut for c in live) and self.rng.random() < 0.05:
            return self.rng.choice([c for c in live if c.shut])
        for stale in [c for c in live if c.shut][:-1]:
            stale.close()
        if usable and (len(usable) >= 2 or self.rng.random() < 0.85):
            return self.rng.choice(usable)
        connection = Connection(self.node.socket_path, actor, self.ids)
        actor.connections.append(connection)
        return connection

    def exchange(self, connection: Connection, frame) -> dict:
        """Sends a frame and waits for its replies; checks each request is answered exactly once. Returns the replies
        by id."""
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
        # The lower bounds as the frame starts (a reply read from PostgreSQL may show its frame's later changes).
        before = self.model_of(connection.signed_as) if connection.signed_as != "admin" else None
        lows = dict(before.lo) if before is not None and not connection.remote else {}
        for message in connection.unchecked:  # read by a drain after its last frame
            self.check_model(connection, message, None)
        connection.unchecked = []
        connection.send(frame)
        answered: dict = {}
        deadline = time.monotonic() + REPLY_TIMEOUT
        got_frame_reply = not wants_reply
        if connection.exiting and not wants_reply:
            connection.close()  # `exit` alone: the node closes it; nothing more is sent on it
            return {}
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
                    self.settle_frame(connection, messages, requests, answered, lows)
                    return answered
                self.fail(f"the connection closed without answering (answered {sorted(answered)})")
            if time.monotonic() > deadline:
                self.fail(f"no reply within {REPLY_TIMEOUT} s (answered {sorted(answered)} of {sorted(requests)})")
            time.sleep(0.0005)
        missing = set(requests) - set(answered)
        if missing:
            self.fail(f"requests {sorted(missing)} got no reply (answered {sorted(answered)})")
        self.check_notifications(connection)
        self.settle_frame(connection, messages, requests, answered, lows)
        if connection.exiting:
            connection.close()
        return answered

    def settle_frame(self, connection: Connection, messages: list, requests: dict, answered: dict, lows: dict) -> None:
        """The frame's changes into the model, then its replies and the notifications read meanwhile checked."""
        self.apply_frame(connection, messages, answered, lows)
        for reply_id, reply in answered.items():
            if requests[reply_id].get("method") != "rpc.discover":  # the document's examples are nobody's
                self.check_model(connection, reply, lows)
        for message in connection.unchecked:
            self.check_model(connection, message, None)
        connection.unchecked = []

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
        self.current = None  # what arrives now is checked at once
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
        self.setup()
        for step in range(1, self.steps + 1):
            self.step = step
            if self.rng.random() < ATTACK_SHARE:
                self.attack()
            else:
                actor = self.rng.choices(self.actors, weights=[5] * len(self.users) + [3, 2])[0]
                connection = self.connection(actor)
                self.exchange(connection, self.make_frame(connection))
            self.alive()
            self.check_honest("this step")
            if self.step % 25 == 0:
                self.drain()
        self.drain()
        self.alive()
        self.check_attack_outcomes()
        for actor in [*self.actors, self.attacker]:
            for connection in actor.connections + actor.probes:
                connection.close()
        for connection in self.attacker_sessions.values():
            connection.close()
        self.counts["attack runs"] = ", ".join(f"{kind} {n}" for kind, n in self.attack_runs.items() if n)
        self.counts["attack outcomes"] = "; ".join(
            f"{kind}: " + ", ".join(f"{outcome} {n}" for outcome, n in sorted(tally.items()))
            for kind, tally in sorted(self.attack_outcomes.items())
        )
        self.counts["seconds"] = round(time.monotonic() - started, 1)
        return self.counts

    # ------------------------------------------------------------------------------------------ honest users

    def node_name(self, node) -> str:
        return "A" if node is self.node else "B"

    def open(self, actor: Actor, node) -> Connection:
        connection = Connection(node.socket_path, actor, self.ids)
        connection.remote = node is not self.node
        connection.node_name = self.node_name(node)
        return connection

    def setup_probes(self) -> None:
        """Each honest user's probe connections, one per node, signed in with a token of its own."""
        for user in self.honest:
            for node in self.nodes():
                connection = self.open(user, node)
                self.sign_in_honest(user, connection, "at setup")
                user.probes.append(connection)

    def sign_in_honest(self, user: Actor, connection: Connection, what: str) -> None:
        answered = self.exchange(connection, self.initialize(connection, token=self.user_token(user.account)))
        reply = next(iter(answered.values()), None)
        if reply is None or "result" not in reply or connection.signed_as != user.account or connection.closed:
            self.fail(
                f"honest {user.name}'s sign-in with its own valid token on node {connection.node_name} failed "
                f"{what}: {json.dumps(reply)[:400] if reply else connection.close_reason or 'the connection closed'}"
            )

    def fresh_sign_in(self, user: Actor, what: str) -> None:
        """A new connection of an honest user signs in with a fresh valid token on every node, then is closed."""
        for node in self.nodes():
            connection = self.open(user, node)
            self.sign_in_honest(user, connection, what)
            self.counts["fresh sign-ins"] += 1
            connection.close()

    def probe_request(self, user: Actor) -> dict:
        tip = self.rng.choice(DEMO_TIPS)
        if self.rng.random() < PROBE_WRITES:
            return self.request("tips/displayed", {"id": tip, "duration": user.model.duration_unit})
        return self.request("tips/status", {"ids": [tip]})

    def check_honest(self, what: str) -> None:
        """Every honest user's probe on every node is answered with a result: no refusal of any kind, no lost reply,
        no closed connection — whatever the attacker did this step."""
        for user in self.honest:
            for connection in user.probes:
                request = self.probe_request(user)
                answered = self.exchange(connection, request)
                self.counts["probes"] += 1
                self.honest_reply(user, connection, request, answered.get(request["id"]), what)

    def honest_reply(self, user: Actor, connection: Connection, request: dict, reply, what: str) -> None:
        if reply is None or "result" not in reply or connection.closed:
            self.fail(
                f"honest {user.name}'s {request['method']} on node {connection.node_name} failed after {what}: "
                f"{json.dumps(reply)[:400] if reply else connection.close_reason or 'the connection closed'}"
            )

    # ---------------------------------------------------------------------------------------------- attacker

    def attack(self) -> None:
        kinds = [kind for kind in ATTACKS if kind != "race" or self.node_b is not None]
        kind = self.rng.choice(kinds)
        self.counts["attacks"] += 1
        self.attack_runs[kind] += 1
        self.frame = f"attack: {kind}"
        getattr(self, "attack_" + kind.replace("-", "_"))()

    def outcome(self, kind: str, reply, quotas: tuple[str, ...], may_succeed: bool = True) -> str:
        """The attacker's reply: a result (when allowed) or -32015 naming one of `quotas` (or its own rate); anything
        else fails the step."""
        if not isinstance(reply, dict):
            self.fail(f"the attacker's {kind} got no reply")
        if "result" in reply:
            if not may_succeed:
                self.fail(f"the attacker's {kind} was accepted, not refused -32015 {quotas}: {json.dumps(reply)[:300]}")
            got = "ok"
        else:
            error = reply.get("error") or {}
            data = error.get("data") if isinstance(error.get("data"), dict) else {}
            got = data.get("quota")
            if error.get("code") != -32015 or got not in (*quotas, "rate"):
                self.fail(f"the attacker's {kind} was refused {json.dumps(error)[:400]}, not -32015 {quotas}")
        tally = self.attack_outcomes.setdefault(kind, {})
        tally[got] = tally.get(got, 0) + 1
        return got

    def check_attack_outcomes(self) -> None:
        """Each attack that ran a few times met its own budget at least once."""
        for kind, quota in ATTACKS.items():
            if quota and self.attack_runs[kind] >= 3 and not self.attack_outcomes.get(kind, {}).get(quota):
                self.fail(
                    f"the attack {kind} ran {self.attack_runs[kind]} times and was never refused -32015 {quota}: "
                    f"{self.attack_outcomes.get(kind)}"
                )

    def attacker_session(self, node=None) -> Connection | None:
        """The attacker's signed-in session on a node (opened again if it closed); None if it was refused."""
        node = node or self.node
        name = self.node_name(node)
        connection = self.attacker_sessions.get(name)
        if connection is not None and not connection.closed and connection.close_reason is None:
            return connection
        connection = self.open(self.attacker, node)
        answered = self.exchange(connection, self.initialize(connection, token=self.user_token(self.attacker.account)))
        reply = next(iter(answered.values()), None)
        # Its flood's sessions may not all be closed on the node yet.
        if self.outcome("sign-in", reply, ("sessions",)) != "ok":
            connection.close()
            return None
        self.attacker_sessions[name] = connection
        return connection

    def hlc(self) -> int:
        self.attacker_hlc = max(self.attacker_hlc + 1, int(time.time() * 1000) << 16)
        return self.attacker_hlc

    def push(self, ops: list[dict]) -> dict:
        items = []
        for op in ops:
            self.attacker_seq += 1
            items.append({"seq": self.attacker_seq, "op": op})
        return self.request("sync/push", {"device": "device:attacker", "ops": items})

    def parameter_op(self, ident: str, value) -> dict:
        return {"hlc": self.hlc(), "epoch": 0, "kind": "parameter", "id": ident, "value": value}

    def attacker_cursor(self) -> int:
        """The attacker's account's newest operation cursor in PostgreSQL (compaction deletes rows, never moves it)."""
        account = self.attacker.account
        return int(
            self.hosted.query(f"SELECT coalesce(max(last_cursor), 0) FROM tipsd.accounts WHERE account = '{account}'")
        )

    def attack_info(self) -> None:
        """Donations whose info is exactly --max-info-bytes of JSON (kept, until the attacker's state is full) and
        past it, by events/donate and by sync/push (refused infoBytes)."""
        session = self.attacker_session()
        if session is None:
            return
        marker = self.attacker.marker
        room = self.max_info_bytes - len(json.dumps({"owner": marker, "b": ""}, separators=(",", ":")))
        past = room + self.rng.choice([1, 2, 100, 5000])
        huge = room + self.rng.choice([1, 5000, 200_000])
        event = self.rng.choice(DEMO_EVENTS)
        donation = {"hlc": self.hlc(), "epoch": 0, "kind": "donation", "event": event, "at": time.time()}
        donation.update({"lifetime": 1, "info": {"owner": marker, "b": "x" * past}})
        frame = [
            self.request("events/donate", {"id": event, "info": {"owner": marker, "b": "x" * room}}),
            self.request("events/donate", {"id": event, "info": {"owner": marker, "b": "x" * huge}}),
            self.push([donation]),
        ]
        answered = self.exchange(session, frame)
        # A change (a push too) is refused stateBytes once the attacker's state is full, before its info is looked at.
        self.outcome("info-at-limit", answered.get(frame[0]["id"]), ("stateBytes",))
        self.outcome("info", answered.get(frame[1]["id"]), ("infoBytes", "stateBytes"), may_succeed=False)
        self.outcome("info", answered.get(frame[2]["id"]), ("infoBytes", "stateBytes"), may_succeed=False)

    def attack_undeclared(self) -> None:
        """A push of 500 parameter operations naming undeclared ids (or 499 declared ones and one undeclared):
        refused undeclaredParameters, storing nothing."""
        session = self.attacker_session()
        if session is None:
            return
        if self.rng.random() < 0.5:
            ops = [self.parameter_op(f"made.up.{i}", "x" * self.rng.choice([1, 300])) for i in range(FLOOD_OPS)]
        else:
            ops = [self.parameter_op(self.rng.choice(DECLARED), "x" * 100) for _ in range(FLOOD_OPS - 1)]
            ops.insert(self.rng.randrange(FLOOD_OPS), self.parameter_op("made.up.one", 1))
        before = self.attacker_cursor()
        request = self.push(ops)
        answered = self.exchange(session, request)
        # Once the attacker's state is full, the change budget (checked first) refuses it stateBytes.
        quotas = ("undeclaredParameters", "stateBytes")
        self.outcome("undeclared", answered.get(request["id"]), quotas, may_succeed=False)
        after = self.attacker_cursor()
        if after != before:
            self.fail(f"a refused push of undeclared parameters moved the account's cursor from {before} to {after}")

    def attack_declared(self) -> None:
        """Pushes of 500 operations on the catalog's declared parameters with ever larger values, until
        stateBytes refuses one (500 values of 600 bytes are past --account-max-state-bytes)."""
        session = self.attacker_session()
        if session is None:
            return
        for size in (100, 300, 600):
            request = self.push([self.parameter_op(self.rng.choice(DECLARED), "x" * size) for _ in range(FLOOD_OPS)])
            answered = self.exchange(session, request)
            got = self.outcome("declared", answered.get(request["id"]), ("stateBytes",), may_succeed=size < 600)
            if got != "ok":
                break

    def attack_sessions(self) -> None:
        """Sessions of the attacker's account opened on the first node until -32015 sessions; honest users sign in
        afresh and are probed while the flood is held."""
        flood = []
        refusal = None
        refused_connection = None
        main = self.attacker_sessions.get("A")
        held = int(main is not None and not main.closed and main.close_reason is None)  # its session there already
        for _ in range(SESSION_FLOOD):
            connection = self.open(self.attacker, self.node)
            token = self.user_token(self.attacker.account)
            answered = self.exchange(connection, self.initialize(connection, token=token))
            reply = next(iter(answered.values()), None)
            if reply is not None and "result" in reply:
                flood.append(connection)
                continue
            refusal, refused_connection = reply, connection
            break
        try:
            for user in self.honest:
                self.fresh_sign_in(user, f"a flood of {len(flood)} sessions")
            self.check_honest(f"a flood of {len(flood)} sessions")
            if refusal is None:
                closed = (
                    f"; its last connection closed: {refused_connection.close_reason}" if refused_connection else ""
                )
                self.fail(
                    f"the attacker's flood of sessions was never refused -32015 sessions ({len(flood)} signed in"
                    f"{closed})"
                )
            self.outcome("sessions", refusal, ("sessions",), may_succeed=False)
            limit = (refusal["error"].get("data") or {}).get("limit")
            if refusal["error"]["data"]["quota"] == "sessions":
                if not isinstance(limit, int) or held + len(flood) > limit:
                    self.fail(f"{held + len(flood)} sessions of the attacker signed in on a node, its limit {limit}")
                deadline = time.monotonic() + REPLY_TIMEOUT
                while not refused_connection.closed:  # the refused connection is closed after the reply
                    refused_connection.read_available()
                    if time.monotonic() > deadline:
                        self.fail("the connection refused -32015 sessions was not closed")
                    time.sleep(0.001)
        finally:
            for connection in flood + ([refused_connection] if refused_connection else []):
                connection.close()

    def attack_forged(self) -> None:
        """Tokens naming a live honest user's sub, signed with the wrong key (HS256) or a flipped signature
        (RS256), several per connection on fresh connections and as the attacker's refresh; the victim signs in
        afresh meanwhile."""
        victim = self.rng.choice(self.honest)
        self.frame = {"attack": "forged tokens", "victim": victim.account}
        forgers = [self.open(self.attacker, self.rng.choice(self.nodes())) for _ in range(FORGERS)]
        pending = []
        for connection in forgers:  # the first forgery of each, all in flight as the victim signs in
            request = self.initialize(connection, token=self.forgery(victim.account))
            connection.presumed = None
            connection.send(request)
            pending.append((connection, request))
        self.fresh_sign_in(victim, f"forged tokens naming {victim.account}")
        for connection, request in pending:
            self.forgery_refused(connection, self.collect(connection, request["id"]))
        for connection in forgers:
            for _ in range(2):  # two more per connection: the third failure closes it
                if connection.closed:
                    break
                request = self.initialize(connection, token=self.forgery(victim.account))
                connection.presumed = None
                answered = self.exchange(connection, request)
                if request["id"] in answered:
                    self.forgery_refused(connection, answered[request["id"]])
            connection.close()
        session = self.attacker_session()
        if session is not None:
            request = self.request("auth/refresh", {"token": self.forgery(victim.account)})
            answered = self.exchange(session, request)
            self.forgery_refused(session, answered.get(request["id"]), refresh=True)
            if session.signed_as != self.attacker.account:
                self.fail(f"the attacker's session is now {session.signed_as}'s")
            # Its third failed refresh closes it (saying why); until then it keeps answering as the attacker.
            if session.close_reason is None:
                status = self.request("tips/status", {"ids": ["filter.tip"]})
                answered = self.exchange(session, status)
                if session.close_reason is None:
                    self.outcome("forged-refresh-then-status", answered.get(status["id"]), ())
        self.fresh_sign_in(victim, f"forged tokens naming {victim.account}")

    def forgery(self, sub: str) -> str:
        if self.rng.random() < 0.5:
            now = int(time.time())
            payload = {"sub": sub, "iat": now, "exp": now + 3600, "aud": tokens.AUDIENCE, "iss": tokens.ISSUER}
            return jwt.encode(payload, b"not-the-node-key-" * 4, algorithm="HS256")
        return forged(self.hosted.token(sub, alg=self.rng.choice(["RS256", "HS256"])))

    def forgery_refused(self, connection: Connection, reply, refresh: bool = False) -> None:
        reasons = FORGERY_REASONS | ({"subjectChanged"} if refresh else set())
        error = (reply or {}).get("error") or {}
        reason = (error.get("data") or {}).get("reason") if isinstance(error.get("data"), dict) else None
        if reply is None and connection.close_reason is not None:
            return  # closed saying why (its third failed sign-in)
        if error.get("code") != -32013 or reason not in reasons:
            self.fail(f"a forged token naming a user got {json.dumps(reply)[:400]}, not -32013 {sorted(reasons)}")
        tally = self.attack_outcomes.setdefault("forged", {})
        tally[reason] = tally.get(reason, 0) + 1

    def collect(self, connection: Connection, request_id) -> dict | None:
        """The reply to a request sent without waiting (notifications and replies inspected as they come)."""
        self.current = None
        deadline = time.monotonic() + REPLY_TIMEOUT
        while True:
            for message in connection.read_available():
                connection.trail.append(f"  got: {json.dumps(message)[:300]}")
                self.inspect(connection, message)
                if isinstance(message, dict) and message.get("id") == request_id:
                    return message
                if isinstance(message, dict) and message.get("id") is None and "error" in message:
                    connection.close_reason = (message["error"].get("data") or {}).get("reason") or "closed"
            if connection.closed:
                return None
            if time.monotonic() > deadline:
                self.fail(f"no reply to {request_id} within {REPLY_TIMEOUT} s on the attacker's connection")
            time.sleep(0.0005)

    def attack_race(self) -> None:
        """The same idempotency key sent to both nodes at once, while every honest user writes on both: both get
        the first commit's reply, and a retry on either node gets it again; the honest writes all succeed."""
        sessions = [self.attacker_session(node) for node in self.nodes()]
        if None in sessions:
            return
        key = f"race-{self.seed}-{self.step}-{self.rng.randrange(1 << 32):08x}"
        event = self.rng.choice(DEMO_EVENTS)
        self.frame = {"attack": "race", "events/donate": event, "idempotencyKey": key}
        pending = []
        for session in sessions:
            request = self.request("events/donate", {"id": event, "idempotencyKey": key})
            session.send(request)
            pending.append((session, request))
        honest = []
        for user in self.honest:
            for connection in user.probes:
                tip = self.rng.choice(DEMO_TIPS)
                request = self.request("tips/displayed", {"id": tip, "duration": user.model.duration_unit})
                connection.send(request)
                # Sent outside `exchange`: counted as maybe applied, before any reply (one node's reply may show the
                # other's) is checked for the account's own.
                user.model.changed(("display", tip), self.step, False)
                honest.append((user, connection, request))
        for user, connection, request in honest:
            reply = self.collect(connection, request["id"])
            self.counts["probes"] += 1
            self.honest_reply(user, connection, request, reply, f"an idempotency-key race on {key}")
            self.check_model(connection, reply, None)
        replies = [self.collect(session, request["id"]) for session, request in pending]
        outcomes = [self.outcome("race", reply, ("stateBytes",)) for reply in replies]
        if outcomes == ["ok", "ok"] and replies[0]["result"] != replies[1]["result"]:
            self.fail(f"one idempotency key on two nodes got two replies: {replies[0]} and {replies[1]}")
        first = next((reply for reply in replies if "result" in reply), None)
        for session in sessions:  # a retry on each node answers the first reply
            request = self.request("events/donate", {"id": event, "idempotencyKey": key})
            reply = self.exchange(session, request).get(request["id"])
            if (
                self.outcome("race-retry", reply, ("stateBytes",)) == "ok"
                and first
                and reply["result"] != first["result"]
            ):
                self.fail(f"a retry of idempotency key {key} on node {session.node_name} got {reply}, not {first}")

    # ------------------------------------------------------------------------------------------------ frames

    def token_for(self, actor: Actor) -> str:
        """A token for the actor to present; self.token_account: the user it signs in as when it is valid."""
        token = self.pick_token(actor)
        self.token_account = next((account for account, tokens in self.issued.items() if token in tokens), None)
        return token

    def user_token(self, account: str, **options) -> str:
        before = int(time.time())
        token = self.hosted.token(account, **options)
        self.issued.setdefault(account, set()).add(token)
        self.token_iat[token] = before  # its iat, or a second before it
        return token

    def pick_token(self, actor: Actor) -> str:
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
            return self.user_token(rng.choice(self.users).account)
        return self.user_token(actor.account, lifetime=rng.choice([3600, 3600, 60]))

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

    def initialize(self, connection: Connection, token: str | None = None) -> dict:
        params = {"protocolVersion": "1.2", "clientInfo": {"name": "adversary"}}
        if token is not None:
            params["auth"] = {"token": token}
            connection.presumed = connection.actor.account
        elif self.rng.random() < 0.95:
            params["auth"] = {"token": self.token_for(connection.actor)}
            if connection.signed_as is None:
                connection.presumed = self.token_account
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
        named = None
        if method not in ACCOUNT_FREE and rng.random() < (0.6 if actor.admin else 0.15):
            # Naming an account: the admin's own way of choosing one, any user's attempt at another's.
            named = self.other_account(connection)
        # The account it acts on, if it is a user's: its durations and parameter values are that account's own.
        if connection.signed_as == "admin" or (connection.signed_as is None and actor.admin):
            model = self.model_of(named)
        else:
            model = self.model_of(connection.signed_as or connection.presumed)
        tip = rng.choice(DEMO_TIPS + ["no.such.tip"])
        event = rng.choice(DEMO_EVENTS)
        cursor = rng.choice(self.seen_cursors + [-1, 0, 1 << 62, 3.5])
        by_method = {
            "initialize": lambda: self.initialize(connection)["params"],
            "auth/refresh": lambda: {"token": self.token_for(actor)},
            "events/donate": lambda: {"id": event, **self.marker_info(connection)},
            "tips/displayed": lambda: {
                "id": tip,
                "duration": model.durations(rng) if model else rng.choice([0, 3, -1, "x"]),
            },
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
            "parameters/set": lambda: self.parameter(model),
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
        if isinstance(params, dict) and named is not None:
            params = {**params, "account": named}
        return params

    def parameter(self, model: AccountModel | None) -> dict:
        parameter = self.rng.choice(["isLoggedIn", "onboardingStep", "nope"])
        return {"id": parameter, "value": model.parameter_value(self.rng, parameter) if model else True}

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
        if connection.signed_as == "admin" or connection.actor.admin:
            # The admin erases only the doomed accounts (also from a batch that signs it in first): the others are
            # the honest users, probed after every step.
            return self.rng.choice(["nobody", "", "a" * 300] + [u.account for u in doomed])
        return self.other_account(connection)


def dicts(value):
    """Every object in a JSON value, outermost first."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from dicts(item)
    elif isinstance(value, list):
        for item in value:
            yield from dicts(item)


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
