"""The retention of `tipsd.ops` (issue #34): operations a snapshot holds are deleted, except those a device that synced
recently has not read yet; a device away longer merges the account's snapshot when it comes back and converges.

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import signal
import subprocess
import time

import pytest

from harness import REPO, TIMEOUT, tipsd_bin
from hosted import Hosted, Session


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


def run(coroutine):
    return asyncio.run(coroutine)


async def until(condition, what: str, seconds: float = TIMEOUT) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened within {seconds} s: {what}"
        await asyncio.sleep(0.05)


class Device:
    """A one-user daemon syncing account `account` straight with PostgreSQL (`--sync`), on its own datastore."""

    def __init__(self, hosted: Hosted, directory: pathlib.Path, account: str, name: str = "phone"):
        self.socket = str(directory / f"{name}.sock")
        self.log_path = directory / f"{name}.log"
        self.args = [
            tipsd_bin(),
            "serve",
            "--socket",
            self.socket,
            "--datastore",
            str(directory / f"{name}.sqlite"),
            "--catalog",
            str(REPO / "catalog" / "demo.json"),
            "--sync",
            hosted.postgres.url,
            "--account",
            account,
            "--device",
            name,
        ]
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        self.proc = subprocess.Popen(
            self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log_path, "a")
        )
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(self.socket):
            assert self.proc.poll() is None, f"the device daemon exited:\n{self.log()}"
            assert time.monotonic() < deadline, "the device daemon did not start"
            time.sleep(0.01)

    async def session(self) -> Session:
        session = await Session.open(self.socket, initialize=False)
        await session.call("initialize", {"protocolVersion": "1.2", "clientInfo": {"name": "device"}})
        return session

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=TIMEOUT)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


async def synced_state(session: Session) -> dict:
    """What sync carries: events, parameters, and the records of tips without variants (variants are each device's
    own)."""
    status = await session.call("tips/status", {})
    inspect = await session.call("inspect/state", {})
    tips = [
        {k: t[k] for k in ("id", "status", "displayCount", "displayedDuration") if k in t}
        for t in sorted(status["tips"], key=lambda tip: tip["id"])
        if "variant" not in t
    ]
    return {
        "events": sorted((e["id"], e["count"], e["lifetime"]) for e in inspect["events"]),
        "parameters": sorted((p["id"], json.dumps(p["value"])) for p in inspect["parameters"]),
        "tips": tips,
    }


def stored(hosted: Hosted, account: str) -> dict:
    """The account's operations in PostgreSQL: how many are kept, the last cursor, the pruned floor."""
    row = hosted.query(
        "SELECT (SELECT count(*) FROM tipsd.ops WHERE account = a.account), a.last_cursor, a.ops_floor "
        f"FROM tipsd.accounts a WHERE a.account = '{account}'"
    ).strip()
    if not row:
        return {"kept": 0, "last": 0, "floor": 0}
    kept, last, floor = (int(x) for x in row.split("|"))
    return {"kept": kept, "last": last, "floor": floor}


def device_cursor(hosted: Hosted, account: str, device: str) -> int:
    row = hosted.query(f"SELECT cursor FROM tipsd.devices WHERE account = '{account}' AND device = '{device}'")
    return int(row.strip() or -1)


async def converge(device: Device, node, web: Session, want: list[tuple[str, int]]) -> dict:
    phone = await device.session()
    deadline = time.monotonic() + TIMEOUT
    try:
        while True:
            a, b = await synced_state(phone), await synced_state(web)
            lifetimes = {event: lifetime for event, _, lifetime in a["events"]}
            if a == b and all(lifetimes.get(event) == n for event, n in want):
                return a
            assert time.monotonic() < deadline, (
                f"did not converge:\ndevice: {a}\nnode:   {b}\n"
                f"device log:\n{device.log()[-3000:]}\nnode log:\n{node.log_text()[-3000:]}"
            )
            await asyncio.sleep(0.05)
    finally:
        await phone.close()


def test_operations_a_snapshot_holds_are_pruned_and_a_device_away_longer_merges_the_snapshot(hosted, tmp_path):
    # A device not seen for 0.0001 day (8.6 s) no longer holds the operations it has not read.
    node = hosted.node("retain-a", extra=["--compaction-threshold", "20", "--ops-device-days", "0.0001"])
    device = Device(hosted, tmp_path, "ret-away")
    device.start()

    async def body():
        web = await Session.open(node.socket_path, hosted.token("ret-away"))
        phone = await device.session()
        for _ in range(3):
            await phone.call("events/donate", {"id": "search.opened"})
        await phone.call("tips/displayed", {"id": "welcome.tour", "duration": 7})
        await phone.close()
        await converge(device, node, web, [("search.opened", 3)])
        read_to = device_cursor(hosted, "ret-away", "phone")
        assert read_to > 0
        device.stop()
        # Away past --ops-device-days: its registration no longer holds what it has not read.
        await asyncio.sleep(9)
        for _ in range(60):
            await web.call("events/donate", {"id": "map.opened"})
        await web.call("tips/displayed", {"id": "welcome.tour", "duration": 5})
        await web.call("parameters/set", {"id": "isLoggedIn", "value": True})
        await until(lambda: stored(hosted, "ret-away")["floor"] > read_to, "the operations the device missed pruned")
        kept = stored(hosted, "ret-away")
        assert kept["kept"] == kept["last"] - kept["floor"], kept
        assert kept["kept"] < 60, kept

        # Back: it is behind what is kept, reads the snapshot, merges it with what it did meanwhile, converges.
        device.start()
        phone = await device.session()
        await phone.call("events/donate", {"id": "search.opened"})
        await phone.close()
        state = await converge(device, node, web, [("search.opened", 4), ("map.opened", 60)])
        welcome = next(t for t in state["tips"] if t["id"] == "welcome.tour")
        assert welcome["displayCount"] == 2 and welcome["displayedDuration"] == 12
        assert ("isLoggedIn", "true") in state["parameters"]
        assert "merging the account's snapshot" in device.log()
        await web.close()

    try:
        run(body())
    finally:
        device.stop()


def test_a_device_seen_recently_keeps_the_operations_it_has_not_read(hosted, tmp_path):
    node = hosted.node("retain-b", extra=["--compaction-threshold", "20"])
    device = Device(hosted, tmp_path, "ret-near")
    device.start()

    async def body():
        web = await Session.open(node.socket_path, hosted.token("ret-near"))
        phone = await device.session()
        await phone.call("events/donate", {"id": "search.opened"})
        await phone.close()
        await converge(device, node, web, [("search.opened", 1)])
        read_to = device_cursor(hosted, "ret-near", "phone")
        device.stop()
        # A second account's snapshot shows when this node has compacted: its floor moves once its snapshot is there.
        other = await Session.open(node.socket_path, hosted.token("ret-near-other"))
        for _ in range(60):
            await web.call("events/donate", {"id": "map.opened"})
            await other.call("events/donate", {"id": "map.opened"})
        await until(lambda: stored(hosted, "ret-near-other")["floor"] > 0, "the other account pruned")
        await until(
            lambda: (
                hosted.query("SELECT count(*) FROM tipsd.snapshots WHERE account = 'ret-near' AND cursor > 20")
                .strip()
                .startswith("1")
            ),
            "the account's snapshot",
        )
        await asyncio.sleep(1)
        kept = stored(hosted, "ret-near")
        # Nothing the device has not read went: the floor stops at its cursor.
        assert kept["floor"] <= read_to, (kept, read_to)
        assert kept["kept"] == kept["last"] - kept["floor"], kept
        assert kept["kept"] >= kept["last"] - read_to, (kept, read_to)

        device.start()
        await converge(device, node, web, [("search.opened", 1), ("map.opened", 60)])
        assert "merging the account's snapshot" not in device.log()
        await other.close()
        await web.close()

    try:
        run(body())
    finally:
        device.stop()


def test_a_node_behind_the_pruned_operations_reads_the_account_again_and_tells_its_observers(hosted):
    first = hosted.node("retain-c1", extra=["--compaction-threshold", "20"])
    second = hosted.node("retain-c2", extra=["--compaction-threshold", "20"])

    async def body():
        actor = await Session.open(first.socket_path, hosted.token("ret-node"))
        watcher = await Session.open(second.socket_path, hosted.token("ret-node"))
        observed = await watcher.call("tips/observe", {"ids": ["welcome.tour"]})
        assert observed["tips"][0]["shouldDisplay"] is True
        seen = len(watcher.notifications)
        # The second node hears nothing while it is stopped (SIGSTOP: as a node stalled on a long pause); meanwhile
        # the first node's commits pass the threshold, it writes a snapshot and prunes what the snapshot holds.
        second.proc.send_signal(signal.SIGSTOP)
        try:
            for _ in range(60):
                await actor.call("events/donate", {"id": "map.opened"})
            await actor.call("tips/invalidate", {"id": "welcome.tour", "reason": "tipClosed"})
            await until(lambda: stored(hosted, "ret-node")["floor"] > 1, "the account's operations pruned")
        finally:
            second.proc.send_signal(signal.SIGCONT)
        # Its pull from its cursor finds them gone: it reads the account again; the observer hears the change.
        await until(lambda: len(watcher.notifications) > seen, "the change reached the other node's observer")
        assert watcher.notifications[-1]["params"]["shouldDisplay"] is False
        inspect = await watcher.call("inspect/state", {})
        assert [e["lifetime"] for e in inspect["events"] if e["id"] == "map.opened"] == [60]
        await actor.close()
        await watcher.close()

    run(body())
    assert "behind the operations kept" in second.log_text()
