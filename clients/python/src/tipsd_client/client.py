"""The asyncio tipsd client: a connection (``connection.py``), the typed calls
(``calls.py``) and the subscriptions (``subscription.py``), opened by
:meth:`TipsClient.connect`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Mapping, Sequence

from . import __version__
from .auth import TokenRequest, TokenSource, resolve_token
from .calls import Calls
from .methods import PROTOCOL_VERSION
from .subscription import AwaitableContext, Subscribing
from .transport import SocketTransport, StdioTransport, Transport, normalize_framing
from .websocket import WebSocketTransport

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
        auto_refresh: bool = True,
        account: str | None = None,
        app: str | None = None,
    ) -> AwaitableContext[TipsClient]:
        """Open a connection and (by default) ``initialize`` it.

        Give exactly one of ``socket_path`` (``tipsd serve --socket PATH``),
        ``url`` (``tipsd serve --listen``: ``ws://127.0.0.1:8787/``, with
        ``token``) or ``stdio_command`` (e.g. ``["tipsd", "serve", "--stdio",
        "--datastore", ":memory:"]``; the child is stopped by :meth:`close`).
        ``token`` is what ``tipsd token`` prints, or a provider called with a
        :class:`~tipsd_client.TokenRequest` before the connection is
        made, returning the token or an awaitable of it. ``framing`` (socket and
        stdio) is ``"newline"`` or ``"content-length"``.

        Hosted mode (``tipsd serve --hosted``): ``token`` is the app's JWT (or
        the admin token) or a provider of it. With ``url`` it is presented at
        the WebSocket upgrade; with ``socket_path`` or ``stdio_command`` it
        signs in inside ``initialize`` (``auth.token``). ``client.auth`` then
        says who the session is (``{account, admin, expiresAt}``). When the
        token expires and ``token`` is a provider, the client refreshes the
        session a margin before (``auto_refresh``; ``auth/refresh``, asking the
        provider with ``TokenRequest("refresh")``), keeping its subscriptions;
        should that fail, the daemon ends the session at expiry and the
        connection closes (``close_reason`` says so: this client does not
        reconnect). ``account`` (admin token): the account every
        account-scoped request acts on; see also :meth:`acting_as`. ``app``: the
        app to sign in to on a deployment with several (``tipsd serve --apps``;
        over WebSocket the path ``/apps/<id>`` names it too).

        Use as ``client = await TipsClient.connect(...)`` or
        ``async with TipsClient.connect(...) as client:``.
        """
        if sum(x is not None for x in (socket_path, url, stdio_command)) != 1:
            raise ValueError("give exactly one of socket_path=, url= or stdio_command=")
        framing = normalize_framing(framing)

        async def open_() -> TipsClient:
            # Over the Unix socket and stdio, a token signs in inside initialize.
            auth_token = None
            if token is not None and url is None:
                auth_token = await resolve_token(token, TokenRequest("connect"))
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
            client.account = account
            client._start()
            if initialize:
                try:
                    init = client.initialize(
                        client_name=client_name,
                        client_version=client_version,
                        locale=locale,
                        protocol_version=protocol_version,
                        auth_token=auth_token,
                        app=app,
                    )
                    await (asyncio.wait_for(init, connect_timeout) if connect_timeout else init)
                except BaseException:
                    await client.close()
                    raise
                if auto_refresh:
                    client._keep_signed_in(token)
            return client

        return AwaitableContext(open_)


connect = TipsClient.connect
