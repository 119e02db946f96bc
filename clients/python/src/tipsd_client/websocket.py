"""A WebSocket transport (RFC 6455, client side) for ``tipsd serve --listen``,
standard library only.

The daemon's own token (what ``tipsd token`` prints) is offered as the
subprotocols ``tipsd.v1`` and ``tipsd.token.<token>``; a longer one — a hosted
node's JWT (``tipsd serve --hosted``) — does not fit a subprotocol and is sent
as ``Authorization: Bearer <token>``. ``token`` may also be a provider, called
before the connection with a :class:`TokenRequest` and returning the token or an
awaitable of it. The token never appears in an error or a log line. One
JSON-RPC message per text frame; pings are answered, a close from the daemon
ends the stream.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import ssl
import struct
from typing import Any
from urllib.parse import urlsplit

from .auth import TokenRequest, TokenSource, fits_subprotocol, resolve_token
from .errors import TipsdConnectionError, TipsdProtocolError
from .transport import STREAM_LIMIT, Framer, Transport

__all__ = ["SUBPROTOCOL", "TOKEN_SUBPROTOCOL_PREFIX", "TokenRequest", "TokenSource", "WebSocketTransport"]

SUBPROTOCOL = "tipsd.v1"
TOKEN_SUBPROTOCOL_PREFIX = "tipsd.token."
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

_TEXT, _BINARY, _CONTINUATION, _CLOSE, _PING, _PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


def _frame(opcode: int, payload: bytes) -> bytes:
    """One final, masked client frame."""
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    mask = os.urandom(4)
    # XOR with the repeated mask, on whole integers rather than byte by byte.
    repeated = (mask * (length // 4 + 1))[:length]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(length, "big")
    return header + mask + masked


class WebSocketFramer(Framer):
    """Text frames out (masked, as a client's must be); messages in, with
    fragments joined, pings answered and a close ending the stream."""

    name = "websocket"

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.close_sent = False

    def encode(self, payload: bytes) -> bytes:
        return _frame(_TEXT, payload)

    def close_frame(self, code: int = 1000) -> bytes | None:
        """The close frame to send, once."""
        if self.close_sent:
            return None
        self.close_sent = True
        return _frame(_CLOSE, struct.pack("!H", code))

    async def read(self, reader: asyncio.StreamReader) -> bytes | None:
        message = bytearray()
        fragmented = False
        while True:
            try:
                first, second = await reader.readexactly(2)
            except asyncio.IncompleteReadError as e:
                if not e.partial and not fragmented:
                    return None  # the daemon went away between messages
                raise TipsdProtocolError("websocket: the stream ended inside a frame") from None
            fin, opcode, masked, length = first & 0x80, first & 0x0F, second & 0x80, second & 0x7F
            try:
                if length == 126:
                    (length,) = struct.unpack("!H", await reader.readexactly(2))
                elif length == 127:
                    (length,) = struct.unpack("!Q", await reader.readexactly(8))
                if length > STREAM_LIMIT or len(message) + length > STREAM_LIMIT:
                    raise TipsdProtocolError(f"websocket: message longer than {STREAM_LIMIT} bytes")
                mask = await reader.readexactly(4) if masked else b""
                payload = await reader.readexactly(length)
            except asyncio.IncompleteReadError:
                raise TipsdProtocolError("websocket: the stream ended inside a frame") from None
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == _PING:
                self.writer.write(_frame(_PONG, payload))
            elif opcode == _PONG:
                pass
            elif opcode == _CLOSE:
                reply = self.close_frame(struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1000)
                if reply is not None:
                    try:
                        self.writer.write(reply)
                    except (ConnectionError, RuntimeError):
                        pass
                return None
            elif opcode in (_TEXT, _BINARY, _CONTINUATION):
                if (opcode == _CONTINUATION) != fragmented:
                    raise TipsdProtocolError("websocket: a continuation frame out of place")
                message += payload
                if fin:
                    return bytes(message)
                fragmented = True
            else:
                raise TipsdProtocolError(f"websocket: unknown opcode {opcode}")


class WebSocketTransport(Transport):
    """A connection to ``tipsd serve --listen`` (``ws://`` or ``wss://``)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, url: str) -> None:
        self.url = url
        super().__init__(reader, writer, WebSocketFramer(writer))
        self._open_tap()

    def peer(self) -> dict[str, Any]:
        return {"kind": "websocket", "url": self.url}

    def describe(self) -> str:
        return f"websocket {self.url}"

    @classmethod
    async def open(
        cls,
        url: str,
        token: TokenSource | None,
        *,
        ssl_context: ssl.SSLContext | None = None,
        headers: dict[str, str] | None = None,
    ) -> WebSocketTransport:
        """Connect and upgrade. ``token``: what ``tipsd token`` prints (offered as
        a subprotocol), a hosted node's JWT or admin token (a JWT is sent as
        ``Authorization: Bearer``), or a provider of it (``None`` offers no
        token: a hosted node then expects it in ``initialize``, a bridge of your
        own needs none)."""
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError(f"not a WebSocket URL: {url!r} (expected ws://HOST:PORT/ or wss://…)")
        secure = parts.scheme == "wss"
        port = parts.port or (443 if secure else 80)
        protocols = [SUBPROTOCOL]
        headers = dict(headers or {})
        if token is not None:
            resolved = await resolve_token(token, TokenRequest("connect"))
            if fits_subprotocol(resolved):
                protocols.append(TOKEN_SUBPROTOCOL_PREFIX + resolved)
            else:
                headers["Authorization"] = f"Bearer {resolved}"
        try:
            reader, writer = await asyncio.open_connection(
                parts.hostname,
                port,
                ssl=(ssl_context or ssl.create_default_context()) if secure else None,
                limit=STREAM_LIMIT,
            )
        except OSError as e:
            raise TipsdConnectionError(f"cannot connect to tipsd at {url}: {e}") from e
        try:
            await cls._upgrade(reader, writer, parts, protocols, headers, token is not None, url)
        except BaseException:
            writer.close()
            raise
        return cls(reader, writer, url)

    @staticmethod
    async def _upgrade(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        parts: Any,
        protocols: list[str],
        headers: dict[str, str],
        with_token: bool,
        url: str,
    ) -> None:
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [
            f"GET {target} HTTP/1.1",
            f"Host: {host}:{parts.port}" if parts.port else f"Host: {host}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            f"Sec-WebSocket-Protocol: {', '.join(protocols)}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        hint = (
            "; check that tipsd serves --listen there and that the token is the one `tipsd token` prints"
            " (hosted mode: a valid JWT)"
        )
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError) as e:
            raise TipsdConnectionError(
                f"tipsd at {url} closed the connection during the WebSocket upgrade{hint}"
            ) from (None if isinstance(e, asyncio.IncompleteReadError) else e)
        status, *header_lines = head.decode("latin-1").split("\r\n")
        fields = {}
        for line in header_lines:
            name, sep, value = line.partition(":")
            if sep:
                fields[name.strip().lower()] = value.strip()
        words = status.split(" ", 2)
        if len(words) < 2 or words[1] != "101":
            refused = " ".join(words[1:]) if len(words) > 1 else status
            raise TipsdConnectionError(f"tipsd at {url} refused the WebSocket upgrade: HTTP {refused}{hint}")
        accept = base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")
        if fields.get("sec-websocket-accept") != accept:
            raise TipsdProtocolError(f"tipsd at {url} answered the upgrade with a wrong Sec-WebSocket-Accept")
        if with_token and fields.get("sec-websocket-protocol") != SUBPROTOCOL:
            raise TipsdProtocolError(f"tipsd at {url} did not select the {SUBPROTOCOL} subprotocol")

    async def close(self) -> None:
        if not self._closed:
            frame = self.framer.close_frame() if isinstance(self.framer, WebSocketFramer) else None
            if frame is not None:
                try:
                    self.writer.write(frame)
                except (ConnectionError, RuntimeError):
                    pass
        await super().close()
