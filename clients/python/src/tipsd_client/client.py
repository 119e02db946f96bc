"""The asyncio tipsd client: a connection (``connection.py``), the typed calls
(``calls.py``) and the subscriptions (``subscription.py``), opened by
:meth:`TipsClient.connect`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Mapping, Sequence

from . import __version__
from .calls import Calls
from .methods import PROTOCOL_VERSION
from .subscription import AwaitableContext, Subscribing
from .transport import SocketTransport, StdioTransport, Transport, normalize_framing
from .websocket import TokenSource, WebSocketTransport

__all__ = ["PROTOCOL_VERSION", "TipsClient", "connect"]


class TipsClient(Subscribing, Calls):
    """A JSON-RPC 2.0 client for tipsd (protocol ``PROTOCOL_VERSION``).

    Connect with :meth:`connect` (a Unix socket, a WebSocket listener, or a
    child ``tipsd serve --stdio``)::

        client = await TipsClient.connect(socket_path="/tmp/tipsd.sock")
        count = await client.donate("search.opened")
        async with client.observe(["filter.tip"]) as sub:
            async for change in sub:
                print(change.id, change.should_display)

    Every method raises :class:`~tipsd_client.TipsdError` for a JSON-RPC error
    reply and :class:`~tipsd_client.TipsdConnectionError` when the daemon is
    gone.
    """

    @classmethod
    def connect(
        cls,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        token: TokenSource | None = None,
        stdio_command: Sequence[str] | None = None,
        framing: str = "newline",
        initialize: bool = True,
        client_name: str = "tipsd-python",
        client_version: str | None = __version__,
        locale: str | None = None,
        protocol_version: str = PROTOCOL_VERSION,
        request_timeout: float | None = None,
        connect_timeout: float | None = 10.0,
        stderr: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AwaitableContext[TipsClient]:
        """Open a connection and (by default) ``initialize`` it.

        Give exactly one of ``socket_path`` (``tipsd serve --socket PATH``),
        ``url`` (``tipsd serve --listen``: ``ws://127.0.0.1:8787/``, with
        ``token``) or ``stdio_command`` (e.g. ``["tipsd", "serve", "--stdio",
        "--datastore", ":memory:"]``; the child is stopped by :meth:`close`).
        ``token`` is what ``tipsd token`` prints, or a provider called with a
        :class:`~tipsd_client.websocket.TokenRequest` before the connection is
        made, returning the token or an awaitable of it. ``framing`` (socket and
        stdio) is ``"newline"`` or ``"content-length"``.

        Use as ``client = await TipsClient.connect(...)`` or
        ``async with TipsClient.connect(...) as client:``.
        """
        if sum(x is not None for x in (socket_path, url, stdio_command)) != 1:
            raise ValueError("give exactly one of socket_path=, url= or stdio_command=")
        if token is not None and url is None:
            raise ValueError("token= goes with url= (the Unix socket and stdio need none)")
        framing = normalize_framing(framing)

        async def open_() -> TipsClient:
            opener: Awaitable[Transport]
            if socket_path is not None:
                opener = SocketTransport.open(socket_path, framing)
            elif url is not None:
                opener = WebSocketTransport.open(url, token)
            else:
                opener = StdioTransport.spawn(
                    list(stdio_command or []), framing, stderr=stderr, env=dict(env) if env is not None else None
                )
            transport = await (asyncio.wait_for(opener, connect_timeout) if connect_timeout else opener)
            client = cls(transport, request_timeout=request_timeout)
            client._start()
            if initialize:
                try:
                    init = client.initialize(
                        client_name=client_name,
                        client_version=client_version,
                        locale=locale,
                        protocol_version=protocol_version,
                    )
                    await (asyncio.wait_for(init, connect_timeout) if connect_timeout else init)
                except BaseException:
                    await client.close()
                    raise
            return client

        return AwaitableContext(open_)


connect = TipsClient.connect
