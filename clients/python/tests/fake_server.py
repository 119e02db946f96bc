"""A tiny scripted JSON-RPC server for the client's own unit tests (framing,
correlation, notifications, errors). It is NOT tipsd: it knows a handful of
methods and some test-only ones (``test/*``).

Run as ``python fake_server.py --stdio`` for a stdio child, or use
:class:`FakeServer` in-process on a Unix socket.

Nothing here depends on time: a connection handles its messages one at a time,
in order, and a reply that must come late or out of order is held until the
client says so (``test/hold`` then ``test/release``), never delayed by a sleep.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any


class Connection:
    def __init__(self, reader: asyncio.StreamReader, write: Callable[[bytes], Any], close: Callable[[], Any]) -> None:
        self.reader = reader
        self._write = write
        self._close = close
        self.framing: str | None = None
        self.received: list[Any] = []
        self.initialized = False
        self.counts: dict[str, int] = {}
        self.next_sub = 1
        self.seq: dict[str, int] = {}
        self.closed = False
        self.sent: list[Any] = []  # every message written to the client, in order
        self.held: dict[Any, Any] = {}  # test/hold key -> the held request's id and value
        self.ended = asyncio.Event()  # set when serve() has returned (connection closed by either side)
        self.keys: list[Any] = []  # each events/donate's idempotencyKey, in order
        self.replies: dict[str, Any] = {}  # idempotencyKey -> the first reply

    def send(self, message: Any) -> None:
        self.sent.append(message)
        payload = json.dumps(message, separators=(",", ":")).encode()
        if self.framing == "content-length":
            data = b"Content-Length: %d\r\nContent-Type: application/json\r\n\r\n" % len(payload) + payload
        else:
            data = payload + b"\n"
        self._write(data)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def read_frame(self) -> bytes | None:
        if self.framing is None:
            first = await self.reader.read(1)
            if not first:
                return None
            self.framing = "content-length" if first == b"C" else "newline"
            self.reader._buffer[0:0] = first  # type: ignore[attr-defined]  # push back
        if self.framing == "newline":
            while True:
                line = await self.reader.readline()
                if not line:
                    return None
                line = line.strip()
                if line:
                    return line
        length = None
        while True:
            line = await self.reader.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return await self.reader.readexactly(length)

    async def serve(self) -> None:
        try:
            while not self.closed:
                frame = await self.read_frame()
                if frame is None:
                    break
                try:
                    msg = json.loads(frame)
                except ValueError:
                    self.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
                    continue
                self.received.append(msg)
                if isinstance(msg, list):
                    replies = [r for r in [await self.handle(m, batch=True) for m in msg] if r is not None]
                    if replies:
                        self.send(list(reversed(replies)))  # any order is allowed
                else:
                    reply = await self.handle(msg)
                    if reply is not None:
                        self.send(reply)
                    await self.after(msg)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed = True
            self._close()
            self.ended.set()

    async def wait_ended(self, timeout: float) -> None:
        """Until serve() has returned; ``timeout`` only guards against hanging."""
        await asyncio.wait_for(self.ended.wait(), timeout)

    async def after(self, msg: Any) -> None:
        """Side effects sent right after a reply, in the same turn."""
        if not isinstance(msg, dict):
            return
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "tips/observe":
            sub = self._last_sub
            # Immediately after the result, before the client can "see" it.
            self.seq[sub] = 1
            self.notify(
                "tips/shouldDisplayChanged",
                {
                    "subscription": sub,
                    "seq": 1,
                    "id": "filter.tip",
                    "shouldDisplay": True,
                    "status": "available",
                    "tip": {"id": "filter.tip", "title": "t", "message": None, "image": None, "actions": []},
                },
            )
        elif method == "test/notify":
            for n in params.get("notifications", []):
                self.notify(n["method"], n["params"])
        elif method == "test/closeAfterReply":
            self.closed = True
            self._close()

    async def handle(self, msg: Any, batch: bool = False) -> Any:
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request"}}
        method = msg.get("method")
        params = msg.get("params")
        mid = msg.get("id")
        is_request = "id" in msg

        def ok(result: Any) -> Any:
            return {"jsonrpc": "2.0", "id": mid, "result": result} if is_request else None

        def err(code: int, message: str, data: Any = None) -> Any:
            e: dict[str, Any] = {"code": code, "message": message}
            if data is not None:
                e["data"] = data
            return {"jsonrpc": "2.0", "id": mid, "error": e} if is_request else None

        if method == "exit":
            self.closed = True
            self._close()
            return None
        if method == "initialize":
            if self.initialized:
                return err(-32600, "already initialized")
            self.initialized = True
            return ok(
                {
                    "protocolVersion": "1.0",
                    "serverInfo": {"name": "fake-tipsd", "version": "0"},
                    "capabilities": {
                        "framings": ["newline", "contentLength"],
                        "virtualClock": True,
                        "methods": ["events/donate", "tips/observe"],
                        "echoClientInfo": params,
                    },
                }
            )
        if not self.initialized and method not in ("rpc.discover",):
            return err(-32002, "server not initialized")
        if method == "shutdown":
            return ok(None)
        if method == "test/echo":
            return ok({"method": method, "params": params, "framing": self.framing})
        if method == "test/hold":
            # No reply now: test/release sends it (or nothing ever does, for timeout tests).
            self.held[params["key"]] = (mid, params.get("value"))
            return None
        if method == "test/release":
            # The held replies, in the order given, then this request's own reply.
            for key in params["keys"]:
                held_id, value = self.held.pop(key)
                self.send({"jsonrpc": "2.0", "id": held_id, "result": value})
            return ok(None)
        if method == "test/fail":
            return err(params["code"], params["message"], params.get("data"))
        if method in ("test/notify", "test/closeAfterReply"):
            return ok(None)
        if method == "test/noReply":
            self.closed = True
            self._close()
            return None
        if method == "events/donate":
            if isinstance(params, list):
                params = {"id": params[0]}
            if not isinstance(params, dict) or not isinstance(params.get("id"), str):
                return err(-32602, "events/donate: params.id: expected a string")
            key = params.get("idempotencyKey")
            self.keys.append(key)
            # `info.failFirst`: the first attempt of each key is not acknowledged (-32016), as a failed commit.
            if (params.get("info") or {}).get("failFirst") and self.keys.count(key) == 1:
                return err(-32016, "events/donate: not acknowledged, retry", {"retryAfter": 0.01})
            if key in self.replies:
                return ok(self.replies[key])
            self.counts[params["id"]] = self.counts.get(params["id"], 0) + 1
            reply = {"count": self.counts[params["id"]], "lifetime": self.counts[params["id"]]}
            if key is not None:
                self.replies[key] = reply
            return ok(reply)
        if method == "tips/observe":
            sub = f"sub-{self.next_sub}"
            self.next_sub += 1
            self._last_sub = sub
            return ok(
                {
                    "subscription": sub,
                    "tips": [
                        {
                            "id": "filter.tip",
                            "shouldDisplay": False,
                            "status": "pending",
                            "displayCount": 0,
                            "displayedDuration": 0,
                            "tip": {"id": "filter.tip", "title": "t", "message": None, "image": None, "actions": []},
                        }
                    ],
                    "groups": [],
                }
            )
        if method in ("tips/unobserve", "actions/unsubscribe"):
            return ok({"removed": True})
        if method == "actions/subscribe":
            sub = f"act-{self.next_sub}"
            self.next_sub += 1
            return ok({"subscription": sub})
        if method == "tips/status":
            return err(-32001, "unknown tip", {"id": (params or {}).get("ids")})
        return err(-32601, f"unknown method {method}")


class FakeServer:
    """An in-process fake on a Unix socket."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="tfake-")
        self.socket_path = os.path.join(self._dir.name, "fake.sock")
        self.connections: list[Connection] = []
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> FakeServer:
        self._server = await asyncio.start_unix_server(self._on_client, self.socket_path)
        return self

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(reader, writer.write, writer.close)
        self.connections.append(conn)
        await conn.serve()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for c in self.connections:
                c.closed = True
                c._close()
            await self._server.wait_closed()
        self._dir.cleanup()

    async def __aenter__(self) -> FakeServer:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


async def _stdio_main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    conn = Connection(reader, write, lambda: None)
    await conn.serve()


if __name__ == "__main__":
    if "--stdio" in sys.argv:
        asyncio.run(_stdio_main())
