"""A TCP proxy of our own for fault drills (issue #34): one per (node, PostgreSQL) link, loopback only, run on its own
asyncio loop in a daemon thread and controlled from the test's thread.

Modes (``FaultProxy.set``; ``heal`` is ``pass``):

- ``pass``: bytes flow both ways.
- ``delay``: every chunk is forwarded ``ms`` milliseconds after it was read (order kept).
- ``drop``: nothing is forwarded either way, the sockets stay open and what was read is held; healing forwards it (a
  partition that heals before TCP gives up). New connections are accepted and connected upstream, but held too.
- ``blackhole``: accept and forward nothing: what arrives is read and thrown away, new connections never reach the
  server; healing closes every connection that lost bytes (their streams are broken).
- ``cut``: every connection is closed now (both sides, with a reset) and new ones are accepted and closed at once,
  until healed.

``retarget(port)`` points the proxy at another server (the promoted standby: the proxy is the fleet's "DNS name");
connections to the old one are closed.
"""

from __future__ import annotations

import asyncio
import threading
import time

MODES = ("pass", "delay", "drop", "blackhole", "cut")
LOOPBACK = "127.0.0.1"


class _Connection:
    def __init__(self, proxy: FaultProxy, client: asyncio.StreamWriter):
        self.proxy = proxy
        self.client = client
        self.server: asyncio.StreamWriter | None = None
        self.target = proxy.target
        self.broken = False  # bytes were thrown away: the stream cannot be resumed
        self.tasks: list[asyncio.Task] = []
        self.closed = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for writer in (self.client, self.server):
            if writer is not None:
                transport = writer.transport
                if transport is not None and not transport.is_closing():
                    transport.abort()
        for task in self.tasks:
            task.cancel()
        self.proxy._connections.discard(self)


class FaultProxy:
    """Listens on 127.0.0.1 (an ephemeral port unless given) and forwards to 127.0.0.1:``target``."""

    def __init__(self, target: int, *, name: str = "proxy", port: int = 0):
        self.name = name
        self.target = target
        self.mode = "pass"
        self.delay_ms = 0
        self._connections: set[_Connection] = set()
        self._flowing: asyncio.Event | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self.accepted = 0
        self.bytes_forwarded = 0
        self._thread = threading.Thread(target=self._run, args=(port,), name=f"faultproxy-{name}", daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._server is None:
            raise RuntimeError(f"{name}: the fault proxy did not start")
        self.port: int = self._server.sockets[0].getsockname()[1]

    # -- control (any thread)

    @property
    def url_host(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def set(self, mode: str, ms: int = 0) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r} (expected one of {MODES})")
        self._call(self._set, mode, ms)

    def heal(self) -> None:
        self.set("pass")

    def delay(self, ms: int) -> None:
        self.set("delay", ms)

    def drop(self) -> None:
        self.set("drop")

    def blackhole(self) -> None:
        self.set("blackhole")

    def cut(self) -> None:
        self.set("cut")

    def retarget(self, target: int) -> None:
        """New connections go to ``target``; those to the old server are closed."""
        self._call(self._retarget, target)

    @property
    def bound_address(self) -> str:
        return self._server.sockets[0].getsockname()[0]

    @property
    def connections(self) -> int:
        return self._call(lambda: len(self._connections))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._call(self._shutdown)
        except RuntimeError:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _call(self, function, *args):
        """Runs ``function`` on the proxy's loop and returns its result."""
        done = threading.Event()
        box: list = []

        def run():
            try:
                box.append((True, function(*args)))
            except BaseException as error:  # noqa: BLE001 — handed to the caller
                box.append((False, error))
            done.set()

        self._loop.call_soon_threadsafe(run)
        if not done.wait(10):
            raise RuntimeError(f"{self.name}: the fault proxy's loop did not answer")
        ok, value = box[0]
        if not ok:
            raise value
        return value

    # -- the loop's side

    def _run(self, port: int) -> None:
        asyncio.set_event_loop(self._loop)
        self._flowing = asyncio.Event()
        self._flowing.set()

        async def listen():
            self._server = await asyncio.start_server(self._accept, LOOPBACK, port, reuse_address=True)

        try:
            self._loop.run_until_complete(listen())
        finally:
            self._ready.set()
        self._loop.run_forever()
        self._loop.close()

    def _set(self, mode: str, ms: int) -> None:
        previous = self.mode
        self.mode = mode
        self.delay_ms = ms if mode == "delay" else 0
        if mode in ("drop", "blackhole"):
            self._flowing.clear()
        else:
            self._flowing.set()
        if mode == "cut":
            for connection in list(self._connections):
                connection.close()
        if previous == "blackhole" and mode != "blackhole":
            for connection in list(self._connections):
                if connection.broken or connection.server is None:
                    connection.close()

    def _retarget(self, target: int) -> None:
        self.target = target
        for connection in list(self._connections):
            if connection.target != target:
                connection.close()

    def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        connection = _Connection(self, writer)
        if self.mode == "cut":
            connection.close()
            return
        self._connections.add(connection)
        if self.mode == "blackhole":
            # Accepted, never connected upstream: what the client sends goes nowhere.
            connection.broken = True
            connection.tasks.append(asyncio.ensure_future(self._swallow(connection, reader)))
            return
        try:
            upstream_reader, upstream = await asyncio.open_connection(LOOPBACK, connection.target)
        except OSError:
            connection.close()
            return
        if connection.closed:  # cut while connecting
            upstream.transport.abort()
            return
        connection.server = upstream
        for source, destination in ((reader, upstream), (upstream_reader, writer)):
            queue: asyncio.Queue = asyncio.Queue()
            connection.tasks.append(asyncio.ensure_future(self._read(connection, source, queue)))
            connection.tasks.append(asyncio.ensure_future(self._write(connection, destination, queue)))

    async def _swallow(self, connection: _Connection, reader: asyncio.StreamReader) -> None:
        try:
            while await reader.read(65536):
                pass
        except (ConnectionError, OSError):
            pass
        connection.close()

    async def _read(self, connection: _Connection, reader: asyncio.StreamReader, queue: asyncio.Queue) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                queue.put_nowait((time.monotonic() + self.delay_ms / 1000, data))
        except (ConnectionError, OSError):
            pass
        queue.put_nowait(None)

    async def _write(self, connection: _Connection, writer: asyncio.StreamWriter, queue: asyncio.Queue) -> None:
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                at, data = item
                wait = at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if self.mode == "blackhole":
                    connection.broken = True
                    continue
                await self._flowing.wait()
                if self.mode == "blackhole":  # black-holed while held
                    connection.broken = True
                    continue
                writer.write(data)
                self.bytes_forwarded += len(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        # One side ended: so does the other.
        connection.close()
