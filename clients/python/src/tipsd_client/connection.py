"""The connection: one transport, the read loop, and raw JSON-RPC.

:class:`Connection` owns the transport, numbers and matches requests, reads
messages in a background task and routes notifications to their
:class:`~tipsd_client.Subscription` and to ``on_notification`` listeners,
and closes cleanly. The typed calls (``calls.py``) and the subscriptions
(``subscription.py``) build on it; :class:`~tipsd_client.TipsClient` is all
three.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from .errors import ErrorCode, TipsdConnectionError, TipsdError, TipsdProtocolError, UnavailableError
from .models import Notification, parse_notification
from .transport import StdioTransport, Transport

#: Methods that change state: sent with a fresh ``idempotencyKey`` and retried with it when their outcome is unknown.
IDEMPOTENT_METHODS = frozenset(
    {
        "events/donate",
        "tips/displayed",
        "tips/invalidate",
        "tips/performAction",
        "tips/resetEligibility",
        "parameters/set",
        "tips/setVariant",
        "datastore/reset",
    }
)
#: How long a change is retried with its key before its error is raised.
CHANGE_RETRY_SECONDS = 30.0

if TYPE_CHECKING:  # pragma: no cover
    from .subscription import Subscription

log = logging.getLogger("tipsd_client")

_MISSING: Any = object()

#: Methods that act on no account (hosted mode): ``account`` is never added to them.
ACCOUNT_FREE = frozenset(
    {
        "initialize",
        "shutdown",
        "rpc.discover",
        "auth/refresh",
        "accounts/list",
        "accounts/export",
        "accounts/import",
        "accounts/delete",
        "webhooks/create",
        "webhooks/delete",
        "webhooks/list",
        "webhooks/replay",
        "webhooks/test",
        "catalog/reload",
        "catalogs/publish",
        "catalogs/diff",
        "catalogs/rollback",
        "catalogs/schedule",
        "catalogs/history",
        "audit/list",
        "sync/status",
    }
)

# ``Connection.acting_as``: the connection and the account its requests act on, in this context.
_ACTING_AS: ContextVar[tuple[Connection, str] | None] = ContextVar("tipsd_acting_as", default=None)


@dataclass
class _Pending:
    future: asyncio.Future[Any]
    method: str
    on_result: Callable[[Any], Any] | None


def _key(value: Any) -> Any:
    """A hashable key for a JSON subscription id (string or number, usually)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return (type(value).__name__ if isinstance(value, bool) else "v", value)
    return ("json", json.dumps(value, sort_keys=True))


def _ids(value: str | Iterable[str] | None) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return list(value)


class Connection:
    """A JSON-RPC 2.0 connection to tipsd over one :class:`Transport`."""

    def __init__(self, transport: Transport, *, request_timeout: float | None = None) -> None:
        self._transport = transport
        self.request_timeout = request_timeout
        self._next_id = 1
        self._pending: dict[Any, _Pending] = {}
        self._subscriptions: dict[Any, Subscription] = {}
        self._listeners: list[Callable[[Notification], Any]] = []
        self._callback_tasks: set[asyncio.Task[Any]] = set()
        self._reader_task: asyncio.Task[None] | None = None
        self._closed_event = asyncio.Event()
        self._close_reason: BaseException | None = None
        self._closing = False
        self._shutdown_sent = False
        self.unmatched_errors: list[TipsdError] = []
        #: Hosted mode, admin token: the account every account-scoped request acts on (``params.account``).
        self.account: str | None = None
        #: Hosted mode: who the session is signed in as (``{account, admin, expiresAt}``), updated by each refresh.
        self.auth: dict[str, Any] | None = None
        self._refresh_task: asyncio.Task[None] | None = None
        self._ended_by: TipsdError | None = None
        self.initialize_result: dict[str, Any] | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.protocol_version: str | None = None

    def _start(self) -> None:
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop(), name="tipsd-reader")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def transport(self) -> Transport:
        return self._transport

    @property
    def framing(self) -> str:
        return self._transport.framing

    @property
    def closed(self) -> bool:
        return self._closed_event.is_set() or self._closing

    @property
    def requests_sent(self) -> int:
        """How many requests this client has sent (including ``initialize``)."""
        return self._next_id - 1

    async def wait_closed(self) -> None:
        """Wait until the connection is gone (closed by either side)."""
        await self._closed_event.wait()

    @property
    def close_reason(self) -> BaseException | None:
        """Why the connection closed (None while it is open), e.g. the daemon
        ending a hosted session whose token expired."""
        return self._close_reason

    # ---------------------------------------------------------------- accounts (hosted mode, admin)

    @contextlib.contextmanager
    def acting_as(self, account: str) -> Iterator[None]:
        """Hosted mode, admin token: within the block, this client's
        account-scoped requests (and the subscriptions made in it) act on
        ``account`` (``params.account``)::

            with admin.acting_as("alice"):
                await admin.donate("search.opened")
                states = await admin.status()

        It follows the asyncio context, so concurrent tasks may act on different
        accounts. A user's session acts on its own account only."""
        if not isinstance(account, str) or not account:
            raise ValueError("acting_as: the account must be a non-empty string")
        token = _ACTING_AS.set((self, account))
        try:
            yield
        finally:
            _ACTING_AS.reset(token)

    def _scoped(self, method: str, params: Any) -> Any:
        """``params`` with the account this request acts on, if any (``acting_as``, else ``account``)."""
        acting = _ACTING_AS.get()
        account = acting[1] if acting is not None and acting[0] is self else self.account
        if account is None or method in ACCOUNT_FREE:
            return params
        if params is _MISSING or params is None:
            return {"account": account}
        if isinstance(params, dict) and "account" not in params:
            return {**params, "account": account}
        return params

    # ---------------------------------------------------------------- reading

    async def _read_loop(self) -> None:
        reason: BaseException | None = None
        try:
            while True:
                payload = await self._transport.receive()
                if payload is None:
                    if self._ended_by is not None:
                        reason = TipsdConnectionError(f"tipsd ended the session: {self._ended_by.message}")
                    else:
                        reason = TipsdConnectionError(f"tipsd closed the connection ({self._transport.describe()})")
                    break
                try:
                    message = json.loads(payload)
                except ValueError:
                    log.warning("tipsd sent a frame that is not JSON: %r", payload[:200])
                    continue
                if isinstance(message, list):
                    for item in message:
                        self._dispatch(item)
                else:
                    self._dispatch(message)
        except asyncio.CancelledError:
            reason = TipsdConnectionError("tipsd connection closed by the client")
        except (TipsdProtocolError, TipsdConnectionError) as e:
            reason = e if isinstance(e, TipsdConnectionError) else TipsdConnectionError(str(e))
            log.warning("tipsd connection lost: %s", e)
        except Exception as e:  # pragma: no cover - defensive
            log.exception("tipsd reader crashed")
            reason = TipsdConnectionError(f"tipsd reader crashed: {e!r}")
        finally:
            self._connection_lost(reason or TipsdConnectionError("tipsd connection closed"))

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            log.warning("tipsd sent a non-object message: %r", message)
            return
        if "method" in message:
            method = message.get("method")
            params = message.get("params")
            if message.get("id") is not None:
                # The protocol has no server→client requests; answer politely.
                self._spawn(
                    self._send(
                        {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "error": {"code": -32601, "message": f"client does not handle {method}"},
                        }
                    )
                )
                return
            self._on_notification(str(method), params)
            return
        if "id" not in message:
            log.warning("tipsd sent a message that is neither response nor notification: %r", message)
            return
        msg_id = message.get("id")
        pending = self._pending.pop(msg_id, None) if msg_id is not None else None
        if pending is None:
            if "error" in message:
                err = TipsdError.from_error(message["error"])
                self.unmatched_errors.append(err)
                if msg_id is None and err.code == ErrorCode.UNAUTHORIZED:
                    # Hosted mode: the daemon ends the session (its token expired, its account was deleted).
                    self._ended_by = err
                    log.warning("tipsd ended the session: %s", err)
                else:
                    log.warning("tipsd error for no pending request (id=%r): %s", msg_id, err)
            else:
                log.debug("tipsd response for unknown id %r dropped", msg_id)
            return
        fut = pending.future
        if "error" in message:
            if not fut.done():
                fut.set_exception(TipsdError.from_error(message["error"], pending.method))
            return
        result = message.get("result")
        if pending.on_result is not None:
            # Runs before the reader looks at the next message, so a
            # subscription exists before its first notification is read.
            try:
                result = pending.on_result(result)
            except Exception as e:
                if not fut.done():
                    fut.set_exception(e)
                return
        if not fut.done():
            fut.set_result(result)

    def _on_notification(self, method: str, params: Any) -> None:
        note = parse_notification(method, params)
        sub_id = getattr(note, "subscription", None)
        if sub_id is not None:
            sub = self._subscriptions.get(_key(sub_id))
            if sub is not None:
                sub._deliver(note)
            else:
                log.debug("tipsd notification for unknown subscription %r dropped", sub_id)
        for listener in list(self._listeners):
            self._invoke_callback(listener, note)

    def _invoke_callback(self, callback: Callable[[Any], Any], arg: Any) -> None:
        try:
            value = callback(arg)
        except Exception:
            log.exception("tipsd callback %r raised", callback)
            return
        if inspect.isawaitable(value):
            self._spawn(value)

    def _spawn(self, awaitable: Any) -> None:
        async def guarded() -> None:
            try:
                await awaitable
            except Exception:
                log.exception("tipsd background task failed")

        task = asyncio.get_running_loop().create_task(guarded())
        self._callback_tasks.add(task)
        task.add_done_callback(self._callback_tasks.discard)

    def _connection_lost(self, reason: BaseException) -> None:
        if self._close_reason is None:
            self._close_reason = reason
        if self._refresh_task is not None and self._refresh_task is not asyncio.current_task():
            self._refresh_task.cancel()
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if not p.future.done():
                p.future.set_exception(TipsdConnectionError(f"{p.method}: {reason}"))
        subs, self._subscriptions = self._subscriptions, {}
        for sub in subs.values():
            sub._end()
        self._closed_event.set()

    def _forget_subscription(self, sub: Subscription) -> None:
        current = self._subscriptions.get(_key(sub.id))
        if current is sub:
            del self._subscriptions[_key(sub.id)]

    # ---------------------------------------------------------------- sending

    async def _send(self, message: Any) -> None:
        payload = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        await self._transport.send(payload)

    async def request(
        self,
        method: str,
        params: Any = _MISSING,
        *,
        timeout: float | None = _MISSING,
        on_result: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Send one request and return its ``result`` (raw JSON-RPC access).

        A change (:data:`IDEMPOTENT_METHODS`) is sent with a fresh ``idempotencyKey`` unless it has one, and sent again
        with the same key when its outcome is unknown — ``-32016`` (not acknowledged) or no answer in time — for up to
        :data:`CHANGE_RETRY_SECONDS`: the daemon applies it once, and a retry of a change already made gets its first
        reply (issue #34).
        """
        if method not in IDEMPOTENT_METHODS or (
            params is not _MISSING and params is not None and not isinstance(params, dict)
        ):
            return await self._request_once(method, params, timeout=timeout, on_result=on_result)
        keyed = dict(params) if isinstance(params, dict) else {}
        keyed.setdefault("idempotencyKey", uuid.uuid4().hex)
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                return await self._request_once(method, keyed, timeout=timeout, on_result=on_result)
            except UnavailableError as error:
                if time.monotonic() - started > CHANGE_RETRY_SECONDS or self.closed:
                    raise
                retry_after = (error.data or {}).get("retryAfter") if isinstance(error.data, dict) else None
                await asyncio.sleep(float(retry_after) if isinstance(retry_after, (int, float)) else 0.1 * 2**attempt)
            except TimeoutError:
                if time.monotonic() - started > CHANGE_RETRY_SECONDS or self.closed:
                    raise
            attempt += 1

    async def _request_once(
        self,
        method: str,
        params: Any = _MISSING,
        *,
        timeout: float | None = _MISSING,
        on_result: Callable[[Any], Any] | None = None,
    ) -> Any:
        if self.closed:
            raise TipsdConnectionError(f"{method}: tipsd connection is closed")
        params = self._scoped(method, params)
        msg_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not _MISSING and params is not None:
            message["params"] = params
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = _Pending(fut, method, on_result)
        try:
            await self._send(message)
            if timeout is _MISSING:
                timeout = self.request_timeout
            if timeout is None:
                return await fut
            try:
                return await asyncio.wait_for(fut, timeout)
            except TimeoutError:
                raise TimeoutError(f"tipsd did not answer {method} within {timeout}s") from None
        finally:
            self._pending.pop(msg_id, None)

    async def notify(self, method: str, params: Any = _MISSING) -> None:
        """Send a notification (no reply)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not _MISSING and params is not None:
            message["params"] = params
        await self._send(message)

    async def batch(self, calls: Sequence[tuple[str, Any] | str]) -> list[Any]:
        """Send several requests as one JSON-RPC batch.

        Returns the results in call order; a failed call's slot holds its
        :class:`TipsdError` instead of raising.
        """
        if self.closed:
            raise TipsdConnectionError("batch: tipsd connection is closed")
        loop = asyncio.get_running_loop()
        messages, futures, ids = [], [], []
        for call in calls:
            method, params = (call, None) if isinstance(call, str) else call
            params = self._scoped(method, params)
            msg_id = self._next_id
            self._next_id += 1
            msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
            if params is not None:
                msg["params"] = params
            fut = loop.create_future()
            self._pending[msg_id] = _Pending(fut, method, None)
            messages.append(msg)
            futures.append(fut)
            ids.append(msg_id)
        try:
            await self._send(messages)
            gathered = asyncio.gather(*futures, return_exceptions=True)
            if self.request_timeout is not None:
                return list(await asyncio.wait_for(gathered, self.request_timeout))
            return list(await gathered)
        finally:
            for msg_id in ids:
                self._pending.pop(msg_id, None)

    async def barrier(self, *, timeout: float | None = _MISSING) -> None:
        """A round trip that proves delivery: when it returns, every notification
        caused by a request the daemon answered before the barrier was sent
        (on any connection) has been received and delivered to its subscription
        and callbacks.

        The daemon answers a connection's messages and writes its notifications
        in order, so they arrive before the barrier's reply. The barrier is a
        ``clock/now`` request; an error reply (-32002 before ``initialize``,
        -32006 after ``shutdown``, -32601 from a server without the method) is
        as good as a result. On a closed connection it returns at once: nothing
        can arrive any more. Use it to check that *nothing* happened
        (``sub.expect_none()``) without waiting for a while.
        """
        if self.closed:
            return
        try:
            await self.request("clock/now", timeout=timeout)
        except TipsdError:
            pass
        except TipsdConnectionError:
            pass  # closed meanwhile: everything that will ever arrive has arrived

    def on_notification(self, listener: Callable[[Notification], Any]) -> Callable[[], None]:
        """Call ``listener`` for every notification on this connection.
        Returns a function that removes it."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def close(self, *, timeout: float = 5.0) -> None:
        """Close the connection. For a stdio child: ``shutdown`` + ``exit``,
        close stdin, wait for it (terminate it if it lingers). Idempotent.

        ``timeout`` bounds each step (the ``shutdown`` reply, sending ``exit``,
        the child exiting); a responsive daemon never makes close() wait for it."""
        if self._closing:
            await self._closed_event.wait()
            return
        self._closing = True
        alive = not self._closed_event.is_set()
        if alive and isinstance(self._transport, StdioTransport) and not self._shutdown_sent:
            try:
                fut = self._pending_request_raw("shutdown")
                await asyncio.wait_for(fut, timeout)
                self._shutdown_sent = True
            except Exception:
                pass
        if alive:
            try:
                await asyncio.wait_for(self.notify("exit"), timeout)
            except Exception:
                pass
        if isinstance(self._transport, StdioTransport):
            await self._transport.close(timeout=timeout)
        else:
            await self._transport.close()
        if self._reader_task is not None and not self._reader_task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._reader_task), 0.5)
            except (TimeoutError, Exception):
                self._reader_task.cancel()
                try:
                    await self._reader_task
                except BaseException:
                    pass
        self._connection_lost(TipsdConnectionError("tipsd connection closed by the client"))
        for task in list(self._callback_tasks):
            task.cancel()

    def _pending_request_raw(self, method: str) -> asyncio.Future[Any]:
        """Send a request even while closing (used by close())."""
        msg_id = self._next_id
        self._next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = _Pending(fut, method, None)

        async def go() -> Any:
            await self._send({"jsonrpc": "2.0", "id": msg_id, "method": method})
            return await fut

        return asyncio.ensure_future(go())
