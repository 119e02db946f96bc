"""Signing in: the token a connection presents — tipsd's own (``tipsd token``,
64 characters) for a daemon serving one user, or, in hosted mode (``tipsd
serve --hosted``), the app's JWT or the admin token — given as a string or a
provider, and when to refresh a hosted session's token before it expires."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .errors import TipsdConnectionError


@dataclass(frozen=True)
class TokenRequest:
    """What a token provider is asked for (an object, so members can be added
    without breaking providers). ``reason`` is ``"connect"`` when the client
    connects, ``"refresh"`` when a hosted session's token expires soon and the
    client replaces it on the live connection (``auth/refresh``) — return a
    freshly issued token then (e.g. Firebase Auth's ``get_id_token(True)``)."""

    reason: str = "connect"


#: A fixed token, or a provider (plain or async) called whenever a token is needed.
TokenSource = str | Callable[[TokenRequest], str | Awaitable[str]]

#: The length of tipsd's own token; longer ones (JWTs) do not fit a WebSocket subprotocol.
DAEMON_TOKEN_LENGTH = 64
#: Refresh at most this many seconds before the token expires.
REFRESH_MARGIN = 60.0

# tchar (RFC 7230): what a subprotocol, hence tipsd's own token, may contain.
_SUBPROTOCOL_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# b64token (RFC 6750): what a bearer token may be — JWTs (base64url and dots) among them.
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def fits_subprotocol(token: str) -> bool:
    """Whether ``token`` can travel as the ``tipsd.token.<token>`` subprotocol (tipsd's own token can)."""
    return len(token) <= DAEMON_TOKEN_LENGTH and _SUBPROTOCOL_TOKEN.fullmatch(token) is not None


async def resolve_token(token: TokenSource, request: TokenRequest) -> str:
    """The token to present: ``token`` itself, or what the provider returns
    (awaited if need be), stripped. A failing provider, an empty or malformed
    token raise :class:`TipsdConnectionError` without quoting the token."""
    if callable(token):
        try:
            value: Any = token(request)
            if inspect.isawaitable(value):
                value = await value
        except Exception as e:
            raise TipsdConnectionError(f"the tipsd token provider failed: {e}") from None
        if not isinstance(value, str):
            raise TipsdConnectionError(f"the tipsd token provider returned {type(value).__name__}, not a string")
        token = value
    token = token.strip()
    if not token:
        raise TipsdConnectionError("no tipsd token given (`tipsd token` prints it)")
    if _SUBPROTOCOL_TOKEN.fullmatch(token) is None and _BEARER_TOKEN.fullmatch(token) is None:
        raise TipsdConnectionError("the tipsd token is malformed (expected what `tipsd token` prints, or a JWT)")
    return token


def refresh_delay(expires_at: float, now: float) -> float:
    """Seconds from ``now`` until a session whose token expires at ``expires_at``
    (seconds since the epoch, as ``initialize`` and ``auth/refresh`` report it)
    should be refreshed: 60 s before, or a tenth of the remaining lifetime when
    that is shorter. 0 when that moment has passed."""
    lifetime = expires_at - now
    if lifetime <= 0:
        return 0.0
    return lifetime - min(REFRESH_MARGIN, lifetime / 10)
