"""Framing and byte transports (Unix socket, child process over stdio; the
WebSocket transport is in ``websocket.py``).

A transport moves whole JSON-RPC messages (as ``bytes``) in both directions;
the framing decides how they are delimited on the wire:

* ``"newline"`` — one JSON text per line (protocol/README.md);
* ``"content-length"`` — LSP style ``Content-Length: N\\r\\n\\r\\n`` + N bytes;
* ``"websocket"`` — one message per WebSocket frame.

Traffic tap (a debugging aid): when the environment variable
``TIPSD_TRAFFIC_LOG`` names a file when a connection is opened, every message
that connection sends or receives is appended to that file as one JSON line
``{"conn": ..., "peer": {...}, "dir": "out"|"in", "t": ..., "msg": ...}``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

from .errors import TipsdConnectionError, TipsdProtocolError

# Reader buffer limit: large enough for rpc.discover and big status replies.
STREAM_LIMIT = 64 * 1024 * 1024

FRAMINGS = ("newline", "content-length")


def normalize_framing(framing: str) -> str:
    f = framing.lower().replace("_", "-")
    if f in ("newline", "ndjson", "jsonl", "lines"):
        return "newline"
    if f in ("content-length", "contentlength", "lsp"):
        return "content-length"
    raise ValueError(f"unknown framing {framing!r}: use 'newline' or 'content-length'")


class Framer:
    name = ""

    def encode(self, payload: bytes) -> bytes:
        raise NotImplementedError

    async def read(self, reader: asyncio.StreamReader) -> bytes | None:
        """The next message, or ``None`` at a clean end of stream."""
        raise NotImplementedError


class NewlineFramer(Framer):
    name = "newline"

    def encode(self, payload: bytes) -> bytes:
        if b"\n" in payload:
            raise ValueError("newline framing: payload contains a raw newline")
        return payload + b"\n"

    async def read(self, reader: asyncio.StreamReader) -> bytes | None:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as e:
                rest = e.partial.strip()
                if rest:
                    # A last message without its terminator: accept it.
                    return rest
                return None
            except asyncio.LimitOverrunError as e:
                raise TipsdProtocolError(f"newline framing: line longer than {STREAM_LIMIT} bytes") from e
            line = line.rstrip(b"\r\n")
            if line.strip():
                return line


class ContentLengthFramer(Framer):
    name = "content-length"

    def encode(self, payload: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(payload) + payload

    async def read(self, reader: asyncio.StreamReader) -> bytes | None:
        length: int | None = None
        first = True
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as e:
                if first and not e.partial.strip():
                    return None
                raise TipsdProtocolError("content-length framing: stream ended inside a header") from e
            except asyncio.LimitOverrunError as e:
                raise TipsdProtocolError("content-length framing: header line too long") from e
            stripped = line.strip()
            if not stripped:
                if first:
                    continue  # tolerate stray blank lines between messages
                break
            first = False
            name, sep, value = stripped.partition(b":")
            if not sep:
                raise TipsdProtocolError(f"content-length framing: bad header line {stripped!r}")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError as e:
                    raise TipsdProtocolError(f"content-length framing: bad length {value!r}") from e
        if length is None or length < 0:
            raise TipsdProtocolError("content-length framing: header block without Content-Length")
        try:
            return await reader.readexactly(length)
        except asyncio.IncompleteReadError as e:
            raise TipsdProtocolError(
                f"content-length framing: stream ended after {len(e.partial)} of {length} bytes"
            ) from e


TRAFFIC_LOG_ENV = "TIPSD_TRAFFIC_LOG"


class TrafficTap:
    """Appends one connection's messages to the ``TIPSD_TRAFFIC_LOG`` file.

    Each line is a JSON object: ``conn`` (unique across processes and
    threads), ``peer`` (what the connection talks to), ``dir`` (``"out"`` =
    sent by the client, ``"in"`` = received), ``t`` (Unix time) and ``msg``
    (the message as JSON; a frame that is not JSON is logged as ``raw``
    text instead) and, under pytest, ``test`` (``$PYTEST_CURRENT_TEST`` when
    the connection opened). Lines are written with a single ``O_APPEND`` write under a
    process-wide lock, so concurrent connections, threads and processes may
    share one file. Logging never raises into the client.
    """

    _lock = threading.Lock()
    _counter = itertools.count(1)

    def __init__(self, path: str, peer: dict[str, Any]) -> None:
        self.path = path
        self.peer = peer
        self.conn = f"{os.getpid()}-{next(self._counter)}"
        # Under pytest, which test opened the connection (inherited by subprocesses).
        self.test = os.environ.get("PYTEST_CURRENT_TEST")

    @classmethod
    def from_env(cls, peer: dict[str, Any]) -> TrafficTap | None:
        path = os.environ.get(TRAFFIC_LOG_ENV)
        return cls(path, peer) if path else None

    def record(self, direction: str, payload: bytes) -> None:
        entry: dict[str, Any] = {"conn": self.conn, "peer": self.peer, "dir": direction, "t": time.time()}
        if self.test:
            entry["test"] = self.test
        try:
            entry["msg"] = json.loads(payload)
        except ValueError:
            entry["raw"] = payload.decode("utf-8", "replace")
        try:
            line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
            with self._lock:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
        except (OSError, TypeError, ValueError):
            pass


def make_framer(framing: str) -> Framer:
    return NewlineFramer() if normalize_framing(framing) == "newline" else ContentLengthFramer()


class Transport:
    """A bidirectional message pipe. Subclasses open the streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, framing: str | Framer) -> None:
        self.reader = reader
        self.writer = writer
        self.framer = framing if isinstance(framing, Framer) else make_framer(framing)
        self._drain_lock = asyncio.Lock()
        self._closed = False
        self._tap: TrafficTap | None = None

    def _open_tap(self) -> None:
        """Start logging to ``$TIPSD_TRAFFIC_LOG`` if it is set (called by the openers)."""
        self._tap = TrafficTap.from_env(self.peer())

    def peer(self) -> dict[str, Any]:
        """What this transport talks to, for the traffic log."""
        return {"kind": type(self).__name__}

    @property
    def framing(self) -> str:
        return self.framer.name

    @property
    def closed(self) -> bool:
        return self._closed

    async def send(self, payload: bytes) -> None:
        if self._closed:
            raise TipsdConnectionError("tipsd connection is closed")
        data = self.framer.encode(payload)
        if self._tap is not None:
            self._tap.record("out", payload)
        try:
            # write() appends atomically, so concurrent senders never interleave.
            self.writer.write(data)
            async with self._drain_lock:
                await self.writer.drain()
        except (ConnectionError, BrokenPipeError, RuntimeError) as e:
            raise TipsdConnectionError(f"tipsd connection lost while sending: {e}") from e

    async def receive(self) -> bytes | None:
        try:
            payload = await self.framer.read(self.reader)
        except (ConnectionError, BrokenPipeError) as e:
            raise TipsdConnectionError(f"tipsd connection lost: {e}") from e
        if self._tap is not None and payload is not None:
            self._tap.record("in", payload)
        return payload

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.writer.close()
            await asyncio.wait_for(self.writer.wait_closed(), 2.0)
        except Exception:
            pass

    def describe(self) -> str:
        return type(self).__name__


class SocketTransport(Transport):
    def __init__(self, reader, writer, framing: str, path: str) -> None:
        super().__init__(reader, writer, framing)
        self.path = path
        self._open_tap()

    def peer(self) -> dict[str, Any]:
        return {"kind": "socket", "path": self.path, "framing": self.framing}

    @classmethod
    async def open(cls, path: str | os.PathLike[str], framing: str = "newline") -> SocketTransport:
        path = os.fspath(path)
        try:
            reader, writer = await asyncio.open_unix_connection(path, limit=STREAM_LIMIT)
        except (FileNotFoundError, ConnectionRefusedError, OSError) as e:
            raise TipsdConnectionError(f"cannot connect to tipsd at {path}: {e}") from e
        return cls(reader, writer, framing, path)

    def describe(self) -> str:
        return f"unix socket {self.path}"


class StdioTransport(Transport):
    """Talks to a child ``tipsd serve --stdio`` over its stdin/stdout."""

    def __init__(self, process: asyncio.subprocess.Process, framing: str, command: Sequence[str]) -> None:
        assert process.stdout is not None and process.stdin is not None
        super().__init__(process.stdout, process.stdin, framing)
        self.process = process
        self.command = list(command)
        self._open_tap()

    def peer(self) -> dict[str, Any]:
        return {"kind": "stdio", "command": self.command, "framing": self.framing}

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str],
        framing: str = "newline",
        *,
        stderr: int | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> StdioTransport:
        if isinstance(command, (str, bytes)):
            raise TypeError("stdio_command must be a list of arguments, e.g. ['tipsd', 'serve', '--stdio']")
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=env,
                cwd=cwd,
                limit=STREAM_LIMIT,
            )
        except OSError as e:
            raise TipsdConnectionError(f"cannot start {command[0]!r}: {e}") from e
        return cls(process, framing, command)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def close(self, timeout: float = 5.0) -> None:
        """Close stdin (the daemon exits when stdin closes) and reap it."""
        await super().close()
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    self.process.send_signal(sig)
                except ProcessLookupError:
                    break
                try:
                    await asyncio.wait_for(self.process.wait(), 2.0)
                    break
                except TimeoutError:
                    continue

    def describe(self) -> str:
        return f"stdio child {' '.join(self.command)}"
