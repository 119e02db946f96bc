"""Hosted mode: signed webhooks from PostgreSQL's durable outbox (issue #48).

A receiver on the loopback interface verifies every delivery with the `standardwebhooks` package (the Standard
Webhooks specification's own Python library): the `webhook-id`, `webhook-timestamp` and `webhook-signature` headers
over the body, with the endpoint's `whsec_` secret. Events come from `accounts/delete` (`account.deleted`, enqueued in
the erasure's transaction) and `webhooks/test`.

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time

import pytest
from standardwebhooks import Webhook

from harness import TIMEOUT
from hosted import ADMIN_TOKEN, Hosted, Session


class Receiver:
    """An HTTP receiver on 127.0.0.1. `mode`: up (204), down (503), hang (answers nothing until released), redirect
    (302 to /landed). Records every verified delivery in arrival order: (webhook-id, payload)."""

    def __init__(self):
        self.mode = "up"
        self.secret: str | None = None
        self.deliveries: list[tuple[str, dict]] = []
        self.attempts = 0
        self.bad_signatures = 0
        self.landed = 0
        self.release = threading.Event()
        self.hung = threading.Event()
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/landed":
                    with receiver.lock:
                        receiver.landed += 1
                    self.send_response(204)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.attempts += 1
                    mode = receiver.mode
                if mode == "down":
                    self.send_response(503)
                    self.end_headers()
                    return
                if mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", "/landed")
                    self.end_headers()
                    return
                if mode == "hang":
                    receiver.hung.set()
                    receiver.release.wait(TIMEOUT)
                    return  # the connection closes without an answer
                try:
                    payload = Webhook(receiver.secret).verify(body, dict(self.headers))
                except Exception:
                    with receiver.lock:
                        receiver.bad_signatures += 1
                    self.send_response(400)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.deliveries.append((self.headers["webhook-id"], payload))
                self.send_response(204)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ids(self) -> list[str]:
        with self.lock:
            return [id for id, _ in self.deliveries]

    def close(self):
        self.release.set()
        self.server.shutdown()


def wait_for(condition, what: str, seconds: float = TIMEOUT):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


@pytest.fixture(scope="module")
def node(hosted):
    return hosted.node("hooks", extra=["--webhook-retry-first", "0.2", "--webhook-lease", "2"])


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


async def admin(node) -> Session:
    return await Session.open(node.socket_path, ADMIN_TOKEN)


async def erase(session: Session, prefix: str, count: int) -> None:
    """`accounts/delete` of PREFIX-0 … PREFIX-(count-1), one after the other: an `account.deleted` event each."""
    for index in range(count):
        await session.call("accounts/delete", {"account": f"{prefix}-{index}"})


async def create(session: Session, receiver: Receiver, url: str | None = None) -> dict:
    endpoint = await session.call(
        "webhooks/create", {"app": "default", "url": url or receiver.url, "events": ["account.deleted"]}
    )
    receiver.secret = endpoint["secret"]
    return endpoint


def test_each_event_once_while_the_receiver_is_up(node, receiver):
    async def body():
        session = await admin(node)
        endpoint = await create(session, receiver)
        assert endpoint["secret"].startswith("whsec_")
        await erase(session, "up", 5)
        test = await session.call("webhooks/test", {"app": "default", "id": endpoint["id"]})
        wait_for(lambda: len(receiver.ids()) >= 6, "six deliveries")
        time.sleep(1.5)  # several polls later: nothing is delivered twice while the receiver answers
        listed = await session.call("webhooks/list", {"app": "default"})
        await session.call("webhooks/delete", {"app": "default", "id": endpoint["id"]})
        await session.close()
        return test, listed

    test, listed = asyncio.run(body())
    ids = receiver.ids()
    assert len(ids) == 6 and len(set(ids)) == 6, ids
    assert receiver.bad_signatures == 0
    payloads = [payload for _, payload in receiver.deliveries]
    assert [p["data"]["account"] for p in payloads[:5]] == [f"up-{i}" for i in range(5)]
    assert all(p["type"] == "account.deleted" for p in payloads[:5])
    assert payloads[5]["type"] == "webhook.test" and ids[5] == f"evt_{test['event']}"
    assert all(set(p) == {"type", "timestamp", "data"} for p in payloads)
    (only,) = listed["webhooks"]
    assert only["pending"] == 0 and only["lastResult"] == "HTTP 204" and "secret" not in only


def test_every_event_in_order_after_the_receiver_was_down(node, receiver):
    receiver.mode = "down"

    async def body():
        session = await admin(node)
        endpoint = await create(session, receiver)
        await erase(session, "down", 8)
        wait_for(lambda: receiver.attempts >= 3, "retries while the receiver is down")
        failing = await session.call("webhooks/list", {"app": "default"})
        receiver.mode = "up"
        wait_for(lambda: len(receiver.ids()) >= 8, "eight deliveries")
        await session.call("webhooks/delete", {"app": "default", "id": endpoint["id"]})
        await session.close()
        return failing

    failing = asyncio.run(body())
    (endpoint,) = failing["webhooks"]
    assert endpoint["pending"] == 8 and endpoint["lastResult"] == "HTTP 503", endpoint
    accounts = [payload["data"]["account"] for _, payload in receiver.deliveries]
    assert accounts == [f"down-{i}" for i in range(8)], accounts  # in creation order, each once
    event_ids = [int(id.removeprefix("evt_")) for id in receiver.ids()]
    assert event_ids == sorted(event_ids)


def test_every_event_after_the_receiver_was_down_for_a_minute(hosted, receiver):
    """The issue's own figure, at the production backoff's shape: a receiver down for a full minute (60 s of wall
    time, every attempt answered 503) gets every event once it is back, once each, in creation order. The node's first
    retry wait is 1 s here (5 s by default) so the doubling waits reach past the minute in a few attempts; the next
    attempt after the receiver returns is at most one doubled wait later, so the wait below allows two minutes."""
    slow = hosted.node("hooks-minute", extra=["--webhook-retry-first", "1", "--webhook-lease", "2"])
    receiver.mode = "down"

    async def events():
        session = await admin(slow)
        endpoint = await create(session, receiver)
        await erase(session, "minute", 5)
        await session.close()
        return endpoint

    endpoint = asyncio.run(events())
    wait_for(lambda: receiver.attempts >= 1, "a first attempt")
    time.sleep(60)  # the receiver stays down a full minute of wall time
    attempts_while_down = receiver.attempts
    receiver.mode = "up"
    wait_for(lambda: len(receiver.ids()) >= 5, "the deliveries after the minute", seconds=150)

    async def remove():
        session = await admin(slow)
        listed = await session.call("webhooks/list", {"app": "default"})
        await session.call("webhooks/delete", {"app": "default", "id": endpoint["id"]})
        await session.close()
        return listed

    listed = asyncio.run(remove())
    slow.stop()
    assert attempts_while_down >= 4, attempts_while_down  # it kept retrying through the minute, backing off
    assert receiver.bad_signatures == 0
    accounts = [payload["data"]["account"] for _, payload in receiver.deliveries]
    assert accounts == [f"minute-{i}" for i in range(5)], accounts  # each once, in creation order
    mine = [hook for hook in listed["webhooks"] if hook["id"] == endpoint["id"]]
    assert mine and mine[0]["pending"] == 0, listed


def test_replay_sends_events_again_under_the_same_ids(node, receiver):
    async def body():
        session = await admin(node)
        endpoint = await create(session, receiver)
        await erase(session, "replay", 3)
        wait_for(lambda: len(receiver.ids()) >= 3, "three deliveries")
        first = receiver.ids()
        after = int(first[0].removeprefix("evt_"))
        replayed = await session.call("webhooks/replay", {"app": "default", "after": after})
        wait_for(lambda: len(receiver.ids()) >= 5, "the replayed deliveries")
        await session.call("webhooks/delete", {"app": "default", "id": endpoint["id"]})
        await session.close()
        return first, replayed

    first, replayed = asyncio.run(body())
    assert replayed == {"queued": 2}
    assert receiver.ids() == first + first[1:]


def test_bad_urls_and_secrets_are_refused_and_users_may_not_call(hosted, node):
    async def body():
        session = await admin(node)
        refusals = []
        for url in ["http://example.com/hook", "http://10.0.0.1/hook", "ftp://127.0.0.1/", "https://u@x.example/"]:
            reply = await session.send("webhooks/create", {"app": "default", "url": url, "events": ["account.deleted"]})
            refusals.append(reply)
        bad_secret = await session.send(
            "webhooks/create",
            {"app": "default", "url": "https://x.example/", "events": ["account.deleted"], "secret": "nope"},
        )
        bad_event = await session.send(
            "webhooks/create", {"app": "default", "url": "https://x.example/", "events": ["tips.everything"]}
        )
        user = await Session.open(node.socket_path, hosted.token("someone"))
        forbidden = await user.send("webhooks/list", {})
        listed = await session.call("webhooks/list", {})
        await user.close()
        await session.close()
        return refusals, bad_secret, bad_event, forbidden, listed

    refusals, bad_secret, bad_event, forbidden, listed = asyncio.run(body())
    for reply in refusals + [bad_secret, bad_event]:
        assert reply["error"]["code"] == -32602, reply
    assert "loopback" in refusals[0]["error"]["message"]
    assert forbidden["error"]["code"] == -32014, forbidden
    assert listed == {"webhooks": []}


def test_redirects_are_not_followed(node, receiver):
    receiver.mode = "redirect"

    async def body():
        session = await admin(node)
        endpoint = await create(session, receiver)
        await session.call("accounts/delete", {"account": "redirected"})
        wait_for(lambda: receiver.attempts >= 2, "two attempts")
        listed = await session.call("webhooks/list", {"app": "default"})
        await session.call("webhooks/delete", {"app": "default", "id": endpoint["id"]})
        await session.close()
        return listed

    listed = asyncio.run(body())
    assert receiver.landed == 0
    (endpoint,) = listed["webhooks"]
    assert endpoint["pending"] == 1 and endpoint["lastResult"] == "HTTP 302", endpoint


def test_a_node_killed_mid_delivery_loses_nothing(receiver):
    world = Hosted()
    try:
        options = {"extra": ["--webhook-retry-first", "0.2", "--webhook-lease", "2"]}
        first = world.node("first", **options)
        second = world.node("second", **options)
        receiver.mode = "hang"

        async def body():
            session = await admin(second)
            await create(session, receiver)
            await erase(session, "killed", 4)
            await session.close()

        asyncio.run(body())
        wait_for(receiver.hung.is_set, "a delivery in flight")
        holder = world.query("SELECT holder FROM tipsd.webhook_lease")
        victim, survivor = (first, second) if holder.startswith("first ") else (second, first)
        victim.kill()
        receiver.mode = "up"
        receiver.release.set()
        wait_for(lambda: len(set(receiver.ids())) >= 4, "every event from the surviving node")
        assert world.query("SELECT holder FROM tipsd.webhook_lease").startswith(survivor.name + " ")
        accounts = []
        for _, payload in receiver.deliveries:
            if payload["data"]["account"] not in accounts:
                accounts.append(payload["data"]["account"])
        assert accounts == [f"killed-{i}" for i in range(4)], accounts
        delivered = int(world.query("SELECT count(*) FROM tipsd.webhook_deliveries WHERE delivered_at IS NOT NULL"))
        assert delivered == 4
    finally:
        world.close()


def test_an_event_enqueued_once_per_key_is_delivered_once(hosted, node, receiver):
    """experiment.srm and experiment.decided go through tipsd.webhook_enqueue_once: the first crossing of a key is
    delivered, every later one is not (the dedupe row is in PostgreSQL, so it holds across nodes and restarts)."""
    data = json.dumps({"app": "default", "tip": "t", "experiment": "lift", "pValue": 1e-9})
    enqueue = f"SELECT tipsd.webhook_enqueue_once('default', 'experiment.srm', 't/lift', '{data}')"

    async def body():
        session = await admin(node)
        endpoint = await session.call(
            "webhooks/create", {"app": "default", "url": receiver.url, "events": ["experiment.srm"]}
        )
        receiver.secret = endpoint["secret"]
        answers = [hosted.query(enqueue).strip() for _ in range(3)]
        wait_for(lambda: len(receiver.ids()) >= 1, "the srm event")
        await asyncio.sleep(1)
        await session.call("webhooks/delete", {"app": "default", "id": endpoint["id"]})
        await session.close()
        return answers

    answers = asyncio.run(body())
    assert answers[0] != "" and answers[1:] == ["", ""], answers
    assert receiver.ids() == [f"evt_{answers[0]}"]
    assert receiver.deliveries[0][1]["data"]["tip"] == "t"


def test_catalog_publish_and_rollback_are_delivered_from_their_own_transactions(node, receiver):
    """`catalog.published` and `catalog.rolledBack` are enqueued by the publish's and the rollback's own transactions
    (the outbox): each reaches the app's endpoint once, signed, with the version it made current."""

    async def body():
        session = await admin(node)
        endpoint = await session.call(
            "webhooks/create",
            {"app": "default", "url": receiver.url, "events": ["catalog.published", "catalog.rolledBack"]},
        )
        receiver.secret = endpoint["secret"]
        catalog = {"tips": [{"id": "welcome.tour", "title": "Welcome"}]}
        first = await session.call("catalogs/publish", {"app": "default", "catalog": catalog, "note": "one"})
        catalog["tips"][0]["title"] = "Welcome back"
        second = await session.call("catalogs/publish", {"app": "default", "catalog": catalog, "note": "two"})
        await session.call("catalogs/rollback", {"app": "default", "version": first["version"]})
        wait_for(lambda: len(receiver.ids()) >= 3, "three catalog events")
        await session.call("webhooks/delete", {"app": "default", "id": endpoint["id"]})
        await session.close()
        return first["version"], second["version"]

    first, second = asyncio.run(body())
    events = [(payload["type"], payload["data"]["version"]) for _, payload in receiver.deliveries]
    assert events == [
        ("catalog.published", first),
        ("catalog.published", second),
        ("catalog.rolledBack", first),
    ], events
    assert len(set(receiver.ids())) == 3


def test_every_change_to_the_endpoints_is_audited_with_it(hosted, node, receiver):
    """webhooks/create, test, replay and delete each append their audit entry in their own statement (actor admin);
    a refused change (no such endpoint) appends none; an endpoint tipsd disables is audited as tipsd's."""

    async def body():
        session = await admin(node)
        start = (await session.call("audit/list", {"limit": 1000}))["entries"]
        after = start[-1]["id"] if start else 0
        endpoint = await create(session, receiver)
        await session.call("webhooks/test", {"app": "default", "id": endpoint["id"]})
        wait_for(lambda: len(receiver.ids()) >= 1, "the test delivery")
        await session.call("webhooks/replay", {"app": "default", "after": 0})
        missing = await session.send("webhooks/delete", {"app": "default", "id": endpoint["id"] + 1000})
        await session.call("webhooks/delete", {"app": "default", "id": endpoint["id"]})
        # An endpoint whose stored URL no longer parses is given up on at its next delivery: disabled, by tipsd.
        broken = await create(session, receiver)
        hosted.query(f"UPDATE tipsd.webhook_endpoints SET url = 'ftp://x' WHERE id = {broken['id']}")
        await session.call("accounts/delete", {"account": "audited-webhooks"})

        async def disabled():
            listed = await session.call("webhooks/list", {"app": "default"})
            return [e for e in listed["webhooks"] if e["id"] == broken["id"] and e["disabledAt"] is not None]

        deadline = time.monotonic() + TIMEOUT
        while not await disabled():
            assert time.monotonic() < deadline, "the broken endpoint was not disabled"
            await asyncio.sleep(0.05)
        entries = (await session.call("audit/list", {"after": after, "limit": 1000}))["entries"]
        await session.call("webhooks/delete", {"app": "default", "id": broken["id"]})
        await session.close()
        return endpoint, broken, missing, entries

    endpoint, broken, missing, entries = asyncio.run(body())
    assert missing.get("result", {}).get("deleted") is False, missing
    hooks = [(e["action"], e["actor"], e["detail"].get("id")) for e in entries if e["action"].startswith("webhook.")]
    assert hooks == [
        ("webhook.create", "admin", endpoint["id"]),
        ("webhook.test", "admin", endpoint["id"]),
        ("webhook.replay", "admin", None),
        ("webhook.delete", "admin", endpoint["id"]),
        ("webhook.create", "admin", broken["id"]),
        ("webhook.disable", "tipsd", broken["id"]),
    ], hooks
    replay = next(e for e in entries if e["action"] == "webhook.replay")
    assert replay["detail"]["after"] == 0 and replay["detail"]["queued"] >= 1, replay
    assert all(e["app"] == "default" for e in entries if e["action"].startswith("webhook.")), entries
