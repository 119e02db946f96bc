"""Hosted-mode test fixtures: a private PostgreSQL (pgcluster), an identity provider's keys and tokens (tokens, PyJWT),
and hosted tipsd nodes (`tipsd serve --hosted`) on a Unix socket and a loopback WebSocket port.

Also a small asyncio JSON-RPC client over the Unix socket, enough to drive thousands of sessions from one process.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import pathlib
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import pgcluster
import tokens
from harness import REPO, TIMEOUT, tipsd_bin

DEMO_CATALOG = REPO / "catalog" / "demo.json"
# A random admin token per run (never a fixed one: `make fleet` prints it, and a demo fleet or a staging copied from
# it must not share a published credential).
ADMIN_TOKEN = secrets.token_hex(32)


class HostedNode:
    """One `tipsd serve --hosted` process. `kill()` is kill -9; `start()` starts it again with the same options."""

    def __init__(
        self,
        directory: pathlib.Path,
        url: str,
        issuer: tokens.Issuer,
        name: str = "node-1",
        catalog: pathlib.Path = DEMO_CATALOG,
        extra: list[str] | None = None,
        listen_port: int = 0,
        admin_token_file: bool = True,
    ):
        self.directory = directory
        self.url = url
        self.name = name
        self.socket_path = str(directory / f"{name}.sock")
        self.token_file = directory / "admin-token"
        if not self.token_file.exists():
            self.token_file.write_text(ADMIN_TOKEN + "\n")
            os.chmod(self.token_file, 0o600)
        self.args = [
            tipsd_bin(),
            "serve",
            "--hosted",
            url,
            "--catalog",
            str(catalog),
            "--socket",
            self.socket_path,
            "--jwt-secret-file",
            str(issuer.secret_path),
            "--jwks",
            str(issuer.jwks_path),
            "--jwt-audience",
            tokens.AUDIENCE,
            "--jwt-issuer",
            tokens.ISSUER,
            *(["--token-file", str(self.token_file)] if admin_token_file else []),
            "--listen",
            f"127.0.0.1:{listen_port}",
            "--node",
            name,
            *(extra or []),
        ]
        self.log_path = directory / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.start()

    def start(self) -> None:
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        self.port = None
        self.log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hosted node did not start:\n{self.log_text()}")
            if os.path.exists(self.socket_path) and self.port is None:
                self.port = self._listen_port()
            if self.port is not None and self.healthy():
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the hosted node did not become healthy:\n{self.log_text()}")
            time.sleep(0.02)

    def _listen_port(self) -> int | None:
        for line in self.log_text()[self.log_offset :].splitlines():
            if "serving HTTP and WebSocket" in line and "ws://127.0.0.1:" in line:
                return int(line.split("ws://127.0.0.1:")[1].split("/")[0])
        return None

    def health(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=TIMEOUT) as reply:
            return json.loads(reply.read())

    def healthy(self) -> bool:
        try:
            return self.health().get("hosted", {}).get("postgres") == "connected"
        except OSError:
            return False

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """kill -9: no shutdown at all."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=TIMEOUT)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Hosted:
    """A PostgreSQL server, an issuer of tokens, and the nodes started on them."""

    def __init__(self):
        self.directory = pathlib.Path(tempfile.mkdtemp(prefix="tipsd-hosted-"))
        self.cluster = pgcluster.Cluster()
        self.postgres = self.cluster.primary().start()
        self.issuer = tokens.Issuer(self.directory)
        self.nodes: list[HostedNode] = []

    def node(self, name: str = "node-1", **options) -> HostedNode:
        node = HostedNode(self.directory, self.postgres.url, self.issuer, name=name, **options)
        self.nodes.append(node)
        return node

    def token(self, account: str, **options) -> str:
        return self.issuer.token(account, **options)

    def query(self, sql: str) -> str:
        return self.postgres.query(sql)

    def close(self) -> None:
        """Stops the nodes and PostgreSQL, and removes the directory (tokens' keys, the admin token, node logs)."""
        for node in self.nodes:
            node.stop()
        self.cluster.destroy()
        shutil.rmtree(self.directory, ignore_errors=True)


class RpcError(Exception):
    def __init__(self, error: dict):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


class Session:
    """One newline-framed JSON-RPC connection over a Unix socket, on asyncio: requests (pipelined or not) and the
    notifications received, in order."""

    _ids = itertools.count(1)

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer
        self.pending: dict[int, asyncio.Future] = {}
        self.notifications: list[dict] = []
        self.unsolicited_errors: list[dict] = []
        self.closed = asyncio.Event()
        self._task = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, socket_path: str, token: str | None = None, *, initialize: bool = True) -> Session:
        reader, writer = await asyncio.open_unix_connection(socket_path, limit=16 << 20)
        session = cls(reader, writer)
        if initialize:
            params: dict = {"protocolVersion": "1.2", "clientInfo": {"name": "hosted-test"}}
            if token is not None:
                params["auth"] = {"token": token}
            session.initialize_result = await session.call("initialize", params)
        return session

    async def _read(self) -> None:
        try:
            while True:
                line = await self.reader.readline()
                if not line:
                    break
                message = json.loads(line)
                if "id" in message and message["id"] is not None and ("result" in message or "error" in message):
                    future = self.pending.pop(message["id"], None)
                    if future and not future.done():
                        future.set_result(message)
                elif "method" in message:
                    self.notifications.append(message)
                else:
                    self.unsolicited_errors.append(message)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed.set()
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("closed"))

    def send(self, method: str, params: dict | None = None) -> asyncio.Future:
        request_id = next(self._ids)
        future = asyncio.get_event_loop().create_future()
        if self.closed.is_set():
            # The daemon closed the connection already (a session it signed out, say): nothing will answer.
            future.set_exception(ConnectionError("closed"))
            return future
        self.pending[request_id] = future
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.writer.write((json.dumps(message) + "\n").encode())
        return future

    async def call(self, method: str, params: dict | None = None):
        reply = await asyncio.wait_for(self.send(method, params), TIMEOUT)
        if "error" in reply:
            raise RpcError(reply["error"])
        return reply["result"]

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass
        self._task.cancel()
