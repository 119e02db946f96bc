"""A device daemon syncing through a hosted node (`tipsd serve --sync wss://… --sync-token-file F`, issue #37): the
user's JWT, never a database password, against a real PostgreSQL started for the tests, with tokens minted by PyJWT
(tokens.py).

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import socket
import subprocess
import threading
import time

import pytest

from harness import REPO, TIMEOUT, tipsd_bin
from hosted import Hosted, RpcError, Session
from test_hosted import state_of

DEVICE = "device:test-phone"


@pytest.fixture(scope="module")
def hosted():
    world = Hosted()
    yield world
    world.close()


def count(hosted: Hosted, sql: str) -> int:
    return int(hosted.query(sql).strip())


def run(coroutine):
    return asyncio.run(coroutine)


class Proxy:
    """A TCP proxy on 127.0.0.1 to the node's listener, whose link can be cut (every connection closed, new ones
    refused) and restored: a device going offline and coming back."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.up = True
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if not self.up:
                    client.close()
                    continue
                try:
                    server = socket.create_connection(("127.0.0.1", self.target_port))
                except OSError:
                    client.close()
                    continue
                self.accepted += 1
                self.sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self.lock:
            self.up = False
            for s in self.sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self.sockets = []

    def restore(self) -> None:
        with self.lock:
            self.up = True

    def close(self) -> None:
        self.cut()
        self.listener.close()


class Device:
    """A device daemon (`tipsd serve --datastore … --sync ws://127.0.0.1:PORT/ --sync-token-file F`)."""

    def __init__(
        self,
        directory: pathlib.Path,
        port: int,
        token: str,
        account: str,
        *,
        name: str = "phone",
        extra=(),
        command: bool = False,
    ):
        self.socket_path = str(directory / f"{name}.sock")
        self.token_file = directory / f"{name}.token"
        self.token_file.write_text(token + "\n")
        os.chmod(self.token_file, 0o600)
        self.log_path = directory / f"{name}.log"
        self.args = [
            tipsd_bin(),
            "serve",
            "--socket",
            self.socket_path,
            "--datastore",
            str(directory / f"{name}.sqlite"),
            "--catalog",
            str(REPO / "catalog" / "demo.json"),
            "--sync",
            f"ws://127.0.0.1:{port}/",
            *(
                ["--sync-token-command", f"cat {self.token_file}"]
                if command
                else ["--sync-token-file", str(self.token_file)]
            ),
            "--device",
            DEVICE,
            # Variants are each device's own, assigned from its install id: the account's id, as a hosted node
            # assigns them, so the two states compare in full.
            "--install-id",
            account,
            *extra,
        ]
        self.proc = subprocess.Popen(
            self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w")
        )
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(self.socket_path):
            if self.proc.poll() is not None:
                raise RuntimeError(f"the device daemon did not start:\n{self.log()}")
            assert time.monotonic() < deadline, "the device daemon did not start"
            time.sleep(0.01)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=TIMEOUT)


async def open_device(device: Device) -> Session:
    phone = await Session.open(device.socket_path, initialize=False)
    await phone.call("initialize", {"protocolVersion": "1.2", "clientInfo": {"name": "phone"}})
    return phone


async def converge(phone: Session, web: Session, done, why) -> dict:
    deadline = time.monotonic() + TIMEOUT
    while True:
        a, b = await state_of(phone), await state_of(web)
        if a == b and done(a):
            return a
        assert time.monotonic() < deadline, f"did not converge:\nphone: {a}\nweb:   {b}\n{why()}"
        await asyncio.sleep(0.05)


def test_a_device_syncing_through_a_hosted_node_and_a_hosted_session_converge(hosted, tmp_path):
    node = hosted.node("relay")
    device = Device(tmp_path, node.port, hosted.token("ivy"), "ivy")
    # The device's command line names the node and a token file: no database, no password.
    assert not any("postgres" in arg for arg in device.args)
    assert hosted.postgres.url not in " ".join(device.args)
    try:

        async def body():
            phone = await open_device(device)
            web = await Session.open(node.socket_path, hosted.token("ivy"))
            for _ in range(3):
                await phone.call("events/donate", {"id": "search.opened"})
                await web.call("events/donate", {"id": "map.opened"})
            await web.call("tips/displayed", {"id": "welcome.tour", "duration": 5})
            await phone.call("tips/displayed", {"id": "welcome.tour", "duration": 7})
            await phone.call("tips/invalidate", {"id": "show-location.tip", "reason": "tipClosed"})
            await web.call("parameters/set", {"id": "isLoggedIn", "value": True})
            await web.call("tips/observe", {"ids": ["welcome.tour"]})
            state = await converge(
                phone,
                web,
                lambda a: (
                    ("search.opened", 3, 3) in a["events"]
                    and ("map.opened", 3, 3) in a["events"]
                    and ("isLoggedIn", "true") in a["parameters"]
                    and next(t for t in a["tips"] if t["id"] == "welcome.tour")["displayCount"] == 2
                ),
                lambda: f"device log:\n{device.log()[-3000:]}\nnode log:\n{node.log_text()[-3000:]}",
            )
            # Compared in full: every tip's state and content, every event's counts, every parameter.
            assert state == await state_of(web)
            welcome = next(t for t in state["tips"] if t["id"] == "welcome.tour")
            assert welcome["displayCount"] == 2 and welcome["displayedDuration"] == 12
            located = next(t for t in state["tips"] if t["id"] == "show-location.tip")
            assert located["status"] == "invalidated"
            # The device's operations are stored as its own, through the node.
            assert count(hosted, f"SELECT count(*) FROM tipsd.ops WHERE account = 'ivy' AND device = '{DEVICE}'") > 0
            status = await phone.call("sync/status")
            assert status["state"] == "connected" and status["account"] == "ivy"
            assert status["server"].startswith("ws://127.0.0.1:") and status["outbox"] == 0
            await phone.close()
            await web.close()

        run(body())
    finally:
        device.stop()


def test_a_device_through_one_node_hears_what_a_session_on_another_node_changes(hosted, tmp_path):
    near, far = hosted.node("near"), hosted.node("far")
    device = Device(tmp_path, near.port, hosted.token("olga"), "olga")
    try:

        async def body():
            phone = await open_device(device)
            web = await Session.open(far.socket_path, hosted.token("olga"))
            await phone.call("events/donate", {"id": "search.opened"})
            await converge(phone, web, lambda a: ("search.opened", 1, 1) in a["events"], lambda: device.log()[-3000:])
            # Another node's commit reaches the device through sync/changed on its own node (the fleet's channel).
            await web.call("parameters/set", {"id": "isLoggedIn", "value": True})
            await web.call("tips/invalidate", {"id": "filter.tip", "reason": "actionPerformed"})
            await converge(
                phone,
                web,
                lambda a: (
                    ("isLoggedIn", "true") in a["parameters"]
                    and next(t for t in a["tips"] if t["id"] == "filter.tip")["status"] == "invalidated"
                ),
                lambda: f"device log:\n{device.log()[-3000:]}\nnear:\n{near.log_text()[-2000:]}",
            )
            await phone.close()
            await web.close()

        run(body())
    finally:
        device.stop()


def test_a_token_cannot_push_or_pull_another_account_and_garbage_is_refused(hosted):
    node = hosted.node("guard")
    op = {"hlc": int(time.time() * 1000) << 16, "epoch": 0, "kind": "donation", "event": "search.opened"}
    donation = {**op, "at": time.time(), "lifetime": 1}

    async def body():
        mallory = await Session.open(node.socket_path, hosted.token("mallory"))
        for method, params in (
            ("sync/push", {"device": DEVICE, "ops": [{"seq": 1, "op": donation}], "account": "victim"}),
            ("sync/pull", {"device": DEVICE, "account": "victim"}),
        ):
            with pytest.raises(RpcError) as refused:
                await mallory.call(method, params)
            assert refused.value.code == -32014, refused.value
        assert count(hosted, "SELECT count(*) FROM tipsd.ops WHERE account = 'victim'") == 0
        assert count(hosted, "SELECT count(*) FROM tipsd.devices WHERE account = 'victim'") == 0

        refusals = {
            "a node's id": {"device": "guard", "ops": [{"seq": 1, "op": donation}]},
            "no device prefix": {"device": "phone", "ops": []},
            "garbage op": {"device": DEVICE, "ops": [{"seq": 1, "op": {"kind": "donation"}}]},
            "unknown kind": {"device": DEVICE, "ops": [{"seq": 1, "op": {**op, "kind": "drop-table"}}]},
            "a node's kind": {"device": DEVICE, "ops": [{"seq": 1, "op": {**op, "kind": "variant", "tip": "x"}}]},
            "a clock far ahead": {"device": DEVICE, "ops": [{"seq": 1, "op": {**donation, "hlc": (1 << 62)}}]},
            "a count that overflows": {
                "device": DEVICE,
                "ops": [{"seq": 1, "op": {**donation, "lifetime": 1 << 62}}],
            },
            "an unknown tip": {
                "device": DEVICE,
                "ops": [{"seq": 1, "op": {**op, "kind": "resetEligibility", "key": "no.such.tip"}}],
            },
            "seq zero": {"device": DEVICE, "ops": [{"seq": 0, "op": donation}]},
            "too many": {"device": DEVICE, "ops": [{"seq": i + 1, "op": donation} for i in range(501)]},
            "too large": {
                "device": DEVICE,
                "ops": [{"seq": 1, "op": {**donation, "info": {"blob": "x" * 20_000}}}],
            },
        }
        for why, params in refusals.items():
            with pytest.raises(RpcError) as refused:
                await mallory.call("sync/push", params)
            assert refused.value.code == -32602, (why, refused.value)
        assert count(hosted, "SELECT count(*) FROM tipsd.ops WHERE account = 'mallory'") == 0

        # Its own account: stored once, however often it is sent (idempotent by device and seq).
        first = await mallory.call("sync/push", {"device": DEVICE, "ops": [{"seq": 1, "op": donation}]})
        again = await mallory.call("sync/push", {"device": DEVICE, "ops": [{"seq": 1, "op": donation}]})
        assert first["cursor"] == again["cursor"] >= 1
        mine = f"SELECT count(*) FROM tipsd.ops WHERE account = 'mallory' AND device = '{DEVICE}'"
        assert count(hosted, mine) == 1
        page = await mallory.call("sync/pull", {"device": DEVICE, "after": 0})
        assert [(o["device"], o["seq"]) for o in page["operations"] if o["device"] == DEVICE] == [(DEVICE, 1)]
        assert page["cursor"] == first["cursor"] and page["more"] is False and page["snapshot"] is None
        # Merged into the account the node holds.
        deadline = time.monotonic() + TIMEOUT
        while ("search.opened", 1, 1) not in (await state_of(mallory))["events"]:
            assert time.monotonic() < deadline, node.log_text()[-2000:]
            await asyncio.sleep(0.05)

        # A pull subscribes the session: another session's change is announced with sync/changed.
        other = await Session.open(node.socket_path, hosted.token("mallory"))
        await other.call("events/donate", {"id": "map.opened"})
        deadline = time.monotonic() + TIMEOUT
        while not any(n["method"] == "sync/changed" for n in mallory.notifications):
            assert time.monotonic() < deadline, "no sync/changed"
            await asyncio.sleep(0.02)
        note = next(n for n in mallory.notifications if n["method"] == "sync/changed")
        assert note["params"]["subscription"] == page["subscription"] and note["params"]["cursor"] > first["cursor"]
        await other.close()
        await mallory.close()

    run(body())


def test_a_device_refuses_a_token_of_another_account_than_its_own(hosted, tmp_path):
    node = hosted.node("mismatch")
    with pytest.raises(RuntimeError) as refused:
        Device(tmp_path, node.port, hosted.token("judy"), "judy", extra=["--account", "kim"])
    assert "the token is account" in str(refused.value)


def test_a_device_offline_converges_when_back_each_change_applied_once(hosted, tmp_path):
    node = hosted.node("tunnel")
    proxy = Proxy(node.port)
    device = Device(tmp_path, proxy.port, hosted.token("leo"), "leo")
    try:

        async def body():
            phone = await open_device(device)
            web = await Session.open(node.socket_path, hosted.token("leo"))
            await phone.call("events/donate", {"id": "search.opened"})
            await converge(
                phone,
                web,
                lambda a: ("search.opened", 1, 1) in a["events"],
                lambda: device.log()[-3000:],
            )
            accepted = proxy.accepted
            proxy.cut()
            deadline = time.monotonic() + TIMEOUT
            while (await phone.call("sync/status"))["state"] == "connected":
                assert time.monotonic() < deadline, "the device did not notice its link was cut"
                await asyncio.sleep(0.05)
            # Offline: both sides change; the device queues its changes durably.
            for _ in range(5):
                await phone.call("events/donate", {"id": "search.opened"})
                await web.call("events/donate", {"id": "map.opened"})
            await phone.call("tips/displayed", {"id": "welcome.tour", "duration": 3})
            await web.call("tips/displayed", {"id": "welcome.tour", "duration": 4})
            assert (await phone.call("sync/status"))["outbox"] > 0
            proxy.restore()
            state = await converge(
                phone,
                web,
                lambda a: ("search.opened", 6, 6) in a["events"] and ("map.opened", 5, 5) in a["events"],
                lambda: f"device log:\n{device.log()[-3000:]}\nnode log:\n{node.log_text()[-3000:]}",
            )
            assert proxy.accepted > accepted, "the device connected again"
            # Each change applied once: exact counts on both sides, and each operation stored once.
            welcome = next(t for t in state["tips"] if t["id"] == "welcome.tour")
            assert welcome["displayCount"] == 2 and welcome["displayedDuration"] == 7
            duplicates = count(
                hosted,
                "SELECT count(*) FROM (SELECT device, seq FROM tipsd.ops WHERE account = 'leo' "
                "GROUP BY device, seq HAVING count(*) > 1) d",
            )
            assert duplicates == 0
            # What the merge itself queued (a budget reached by the merged displays invalidates here too) goes out.
            deadline = time.monotonic() + TIMEOUT
            while (status := await phone.call("sync/status"))["outbox"] != 0 or status["state"] != "connected":
                assert time.monotonic() < deadline, status
                await asyncio.sleep(0.05)
            await phone.close()
            await web.close()

        run(body())
    finally:
        device.stop()
        proxy.close()


def test_an_expired_token_is_read_again_and_the_device_goes_on(hosted, tmp_path):
    node = hosted.node("renewal", extra=["--jwt-leeway", "0"])
    # The command is run before every connection: the node ends the session when the token expires, and the device
    # signs in again with what the command prints then.
    device = Device(tmp_path, node.port, hosted.token("mia", lifetime=2), "mia", command=True)
    try:

        async def body():
            phone = await open_device(device)
            web = await Session.open(node.socket_path, hosted.token("mia"))
            await phone.call("events/donate", {"id": "search.opened"})
            await converge(phone, web, lambda a: ("search.opened", 1, 1) in a["events"], lambda: device.log()[-3000:])
            device.token_file.write_text(hosted.token("mia") + "\n")
            deadline = time.monotonic() + TIMEOUT
            while "ended the session" not in device.log():
                assert time.monotonic() < deadline, f"the session did not end:\n{device.log()[-3000:]}"
                await asyncio.sleep(0.1)
            await phone.call("events/donate", {"id": "search.opened"})
            await converge(phone, web, lambda a: ("search.opened", 2, 2) in a["events"], lambda: device.log()[-3000:])
            assert device.log().count("sync connected") >= 2
            await phone.close()
            await web.close()

        run(body())
    finally:
        device.stop()


def test_a_renewed_token_file_replaces_the_sessions_token_before_it_expires(hosted, tmp_path):
    node = hosted.node("refresh", extra=["--jwt-leeway", "0"])
    device = Device(tmp_path, node.port, hosted.token("noor", lifetime=3), "noor")
    try:

        async def body():
            phone = await open_device(device)
            web = await Session.open(node.socket_path, hosted.token("noor"))
            await phone.call("events/donate", {"id": "search.opened"})
            await converge(phone, web, lambda a: ("search.opened", 1, 1) in a["events"], lambda: device.log()[-3000:])
            # Renewed by replacing the file (written beside it, renamed over it): sent with auth/refresh at once.
            fresh = device.token_file.with_suffix(".new")
            fresh.write_text(hosted.token("noor") + "\n")
            os.replace(fresh, device.token_file)
            # Past the first token's expiry, the session goes on: no expiry, no reconnection.
            await asyncio.sleep(4)
            await phone.call("events/donate", {"id": "search.opened"})
            await converge(phone, web, lambda a: ("search.opened", 2, 2) in a["events"], lambda: device.log()[-3000:])
            log = device.log()
            assert "ended the session" not in log and log.count("sync connected") == 1, log[-3000:]
            await phone.close()
            await web.close()

        run(body())
    finally:
        device.stop()


def test_ws_to_another_machine_is_refused_the_token_would_cross_in_clear_text():
    proc = subprocess.run(
        [tipsd_bin(), "serve", "--sync", "ws://192.0.2.1:9/", "--sync-token-file", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode != 0 and "wss://" in proc.stderr
