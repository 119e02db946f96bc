"""Errors raised by the tipsd client.

Every JSON-RPC error reply raises :class:`TipsdError` (or one of its
subclasses, chosen by ``code``), so ``except TipsdError as e: e.code`` always
works and ``except UnknownTipError`` works when you care about one case.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ErrorCode(IntEnum):
    """The protocol's error codes (protocol/README.md, "Errors")."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_NOT_INITIALIZED = -32002
    UNKNOWN_TIP = -32001
    UNKNOWN_SUBSCRIPTION = -32003
    VIRTUAL_CLOCK_DISABLED = -32004
    DATASTORE_FAILURE = -32005
    SHUTTING_DOWN = -32006
    UNKNOWN_GROUP = -32007
    UNKNOWN_ACTION = -32008
    INVALID_RULE = -32009
    TOO_MANY_CONNECTIONS = -32010
    TESTING_DISABLED = -32011
    SYNC_OUTBOX_FULL = -32012
    UNAUTHORIZED = -32013
    FORBIDDEN = -32014
    QUOTA_EXCEEDED = -32015
    UNAVAILABLE = -32016


class TipsdError(Exception):
    """A JSON-RPC error reply from tipsd: ``code``, ``message`` and ``data``."""

    def __init__(self, code: int, message: str, data: Any = None, *, method: str | None = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        super().__init__(code, message, data)

    def __str__(self) -> str:
        try:
            name = ErrorCode(self.code).name
        except ValueError:
            name = "error"
        where = f" ({self.method})" if self.method else ""
        text = f"tipsd {name} {self.code}{where}: {self.message}"
        if self.data is not None:
            text += f" data={self.data!r}"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, data={self.data!r})"

    @classmethod
    def from_error(cls, error: Any, method: str | None = None) -> TipsdError:
        """Build the most specific subclass for a JSON-RPC ``error`` member."""
        if not isinstance(error, dict):
            return TipsdError(ErrorCode.INTERNAL_ERROR, f"malformed error member: {error!r}", method=method)
        code = error.get("code")
        message = error.get("message")
        if not isinstance(code, int):
            code = ErrorCode.INTERNAL_ERROR
        if not isinstance(message, str):
            message = str(message)
        klass = _BY_CODE.get(code, TipsdError)
        return klass(code, message, error.get("data"), method=method)


class ParseError(TipsdError):
    pass


class InvalidRequestError(TipsdError):
    pass


class MethodNotFoundError(TipsdError):
    pass


class InvalidParamsError(TipsdError):
    pass


class InternalError(TipsdError):
    pass


class ServerNotInitializedError(TipsdError):
    pass


class UnknownTipError(TipsdError):
    pass


class UnknownSubscriptionError(TipsdError):
    pass


class VirtualClockDisabledError(TipsdError):
    pass


class DatastoreFailureError(TipsdError):
    pass


class ShuttingDownError(TipsdError):
    pass


class UnknownGroupError(TipsdError):
    pass


class UnknownActionError(TipsdError):
    pass


class InvalidRuleError(TipsdError):
    pass


class TooManyConnectionsError(TipsdError):
    pass


class SyncOutboxFullError(TipsdError):
    """A synced change refused while the sync outbox is full (``--sync-outbox-limit``)."""


class UnauthorizedError(TipsdError):
    """Hosted mode: no valid sign-in (``data["reason"]``); also sent when a session's token expires."""


class ForbiddenError(TipsdError):
    """Hosted mode: signed in, but not allowed (an admin method, a definition method)."""


class QuotaExceededError(TipsdError):
    """Hosted mode: the account's quota is used up (``data["quota"]``, ``data["retryAfter"]``)."""


class UnavailableError(TipsdError):
    """Hosted mode: PostgreSQL did not commit the change; retry after ``data["retryAfter"]`` seconds."""


_BY_CODE: dict[int, type[TipsdError]] = {
    ErrorCode.PARSE_ERROR: ParseError,
    ErrorCode.INVALID_REQUEST: InvalidRequestError,
    ErrorCode.METHOD_NOT_FOUND: MethodNotFoundError,
    ErrorCode.INVALID_PARAMS: InvalidParamsError,
    ErrorCode.INTERNAL_ERROR: InternalError,
    ErrorCode.SERVER_NOT_INITIALIZED: ServerNotInitializedError,
    ErrorCode.UNKNOWN_TIP: UnknownTipError,
    ErrorCode.UNKNOWN_SUBSCRIPTION: UnknownSubscriptionError,
    ErrorCode.VIRTUAL_CLOCK_DISABLED: VirtualClockDisabledError,
    ErrorCode.DATASTORE_FAILURE: DatastoreFailureError,
    ErrorCode.SHUTTING_DOWN: ShuttingDownError,
    ErrorCode.UNKNOWN_GROUP: UnknownGroupError,
    ErrorCode.UNKNOWN_ACTION: UnknownActionError,
    ErrorCode.INVALID_RULE: InvalidRuleError,
    ErrorCode.TOO_MANY_CONNECTIONS: TooManyConnectionsError,
    ErrorCode.SYNC_OUTBOX_FULL: SyncOutboxFullError,
    ErrorCode.UNAUTHORIZED: UnauthorizedError,
    ErrorCode.FORBIDDEN: ForbiddenError,
    ErrorCode.QUOTA_EXCEEDED: QuotaExceededError,
    ErrorCode.UNAVAILABLE: UnavailableError,
}


class TipsdConnectionError(ConnectionError):
    """The connection to tipsd is closed (or could not be opened).

    Pending requests fail with this when the daemon goes away; subscriptions
    end (their ``async for`` loops finish).
    """


class TipsdProtocolError(Exception):
    """tipsd sent bytes that do not follow the framing or JSON-RPC 2.0."""


class SubscriptionClosed(Exception):
    """``await sub.next()`` on a subscription that has ended (closed by you,
    or its connection dropped)."""
