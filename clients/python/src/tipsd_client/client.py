"""The asyncio tipsd client."""
from __future__ import annotations

import asyncio
import datetime as _dt
import inspect
import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import __version__
from .errors import TipsdConnectionError, TipsdError, TipsdProtocolError
from .models import (
    ActionPerformed,
    Explanation,
    Notification,
    TipDefinition,
    TipState,
    parse_notification,
)
from .subscription import AwaitableContext, Subscription, Unsubscribe
from .transport import SocketTransport, StdioTransport, Transport, normalize_framing

log = logging.getLogger("tipsd_client")

PROTOCOL_VERSION = "1.2"
_MISSING: Any = object()


@dataclass
class _Pending:
    future: "asyncio.Future[Any]"
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


def _timestamp(value: float | int | _dt.datetime) -> float | int:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        ts = value.timestamp()
        return int(ts) if ts == int(ts) else ts
    return value


class TipsClient:
    """A JSON-RPC 2.0 client for tipsd (protocol 1.0).

    Connect with :meth:`connect` (a Unix socket, or a child ``tipsd serve
    --stdio``)::

        client = await TipsClient.connect(socket_path="/tmp/tipsd.sock")
        count = await client.donate("search.opened")
        async with client.observe(["filter.tip"]) as sub:
            async for change in sub:
                print(change.id, change.should_display)

    Every method raises :class:`~tipsd_client.TipsdError` for a JSON-RPC error
    reply and :class:`~tipsd_client.TipsdConnectionError` when the daemon is
    gone.
    """

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
        self.initialize_result: dict[str, Any] | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.protocol_version: str | None = None

    # ------------------------------------------------------------------ connect

    @classmethod
    def connect(
        cls,
        socket_path: str | os.PathLike[str] | None = None,
        *,
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
    ) -> "AwaitableContext[TipsClient]":
        """Open a connection and (by default) ``initialize`` it.

        Give exactly one of ``socket_path`` (``tipsd serve --socket PATH``) or
        ``stdio_command`` (e.g. ``["tipsd", "serve", "--stdio", "--datastore",
        ":memory:"]``; the child is stopped by :meth:`close`). ``framing`` is
        ``"newline"`` or ``"content-length"``.

        Use as ``client = await TipsClient.connect(...)`` or
        ``async with TipsClient.connect(...) as client:``.
        """
        if (socket_path is None) == (stdio_command is None):
            raise ValueError("give exactly one of socket_path= or stdio_command=")
        framing = normalize_framing(framing)

        async def open_() -> "TipsClient":
            if socket_path is not None:
                opener = SocketTransport.open(socket_path, framing)
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

    def _start(self) -> None:
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop(), name="tipsd-reader")

    async def __aenter__(self) -> "TipsClient":
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

    # ---------------------------------------------------------------- reading

    async def _read_loop(self) -> None:
        reason: BaseException | None = None
        try:
            while True:
                payload = await self._transport.receive()
                if payload is None:
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
                self._spawn(self._send({
                    "jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32601, "message": f"client does not handle {method}"},
                }))
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
        """Send one request and return its ``result`` (raw JSON-RPC access)."""
        if self.closed:
            raise TipsdConnectionError(f"{method}: tipsd connection is closed")
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
            except asyncio.TimeoutError:
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

    # -------------------------------------------------------------- lifecycle

    async def initialize(
        self,
        *,
        client_name: str = "tipsd-python",
        client_version: str | None = __version__,
        locale: str | None = None,
        protocol_version: str = PROTOCOL_VERSION,
    ) -> dict[str, Any]:
        """``initialize`` (done for you by :meth:`connect`)."""
        info: dict[str, Any] = {"name": client_name}
        if client_version is not None:
            info["version"] = client_version
        params: dict[str, Any] = {"protocolVersion": protocol_version, "clientInfo": info}
        if locale is not None:
            params["locale"] = locale
        result = await self.request("initialize", params)
        self.initialize_result = result if isinstance(result, dict) else {}
        self.server_info = self.initialize_result.get("serverInfo") or {}
        self.capabilities = self.initialize_result.get("capabilities") or {}
        self.protocol_version = self.initialize_result.get("protocolVersion")
        return self.initialize_result

    def supports(self, method: str) -> bool:
        """Whether the daemon lists ``method`` in ``capabilities.methods``."""
        return method in (self.capabilities.get("methods") or [])

    async def shutdown(self) -> None:
        """``shutdown``: afterwards only ``exit`` is accepted."""
        await self.request("shutdown")
        self._shutdown_sent = True

    async def exit(self) -> None:
        """The ``exit`` notification (a socket connection closes; a stdio
        daemon exits)."""
        await self.notify("exit")

    async def discover(self) -> dict[str, Any]:
        """``rpc.discover``: the OpenRPC document."""
        return await self.request("rpc.discover")

    async def cancel_request(self, request_id: Any) -> None:
        await self.notify("$/cancelRequest", {"id": request_id})

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
            except (asyncio.TimeoutError, Exception):
                self._reader_task.cancel()
                try:
                    await self._reader_task
                except BaseException:
                    pass
        self._connection_lost(TipsdConnectionError("tipsd connection closed by the client"))
        for task in list(self._callback_tasks):
            task.cancel()

    def _pending_request_raw(self, method: str) -> "asyncio.Future[Any]":
        """Send a request even while closing (used by close())."""
        msg_id = self._next_id
        self._next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = _Pending(fut, method, None)

        async def go() -> Any:
            await self._send({"jsonrpc": "2.0", "id": msg_id, "method": method})
            return await fut

        return asyncio.ensure_future(go())

    # ------------------------------------------------------------------- tips

    async def configure(self, display_frequency: str = "immediate", **extra: Any) -> dict[str, Any]:
        """``tips/configure`` (like ``Tips.configure([.displayFrequency(...)])``)."""
        return await self.request("tips/configure", {"displayFrequency": str(display_frequency), **extra})

    async def register(self, tips: TipDefinition | Sequence[TipDefinition]) -> list[TipState]:
        """``tips/register``: returns each tip's state."""
        if isinstance(tips, Mapping):
            tips = [tips]
        result = await self.request("tips/register", {"tips": list(tips)})
        return result.get("tips", []) if isinstance(result, dict) else result

    async def unregister(self, ids: str | Iterable[str]) -> list[str]:
        """``tips/unregister``: returns the ids that were registered."""
        result = await self.request("tips/unregister", {"ids": _ids(ids)})
        return result.get("ids", []) if isinstance(result, dict) else result

    async def register_group(
        self, id: str, tips: Iterable[str], priority: str = "ordered"
    ) -> dict[str, Any]:
        """``groups/register``: returns ``{id, currentTip}``."""
        return await self.request("groups/register", {"id": id, "priority": str(priority), "tips": list(tips)})

    async def unregister_group(self, id: str) -> None:
        await self.request("groups/unregister", {"id": id})

    async def define_parameters(
        self, parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> list[str]:
        """``parameters/define``. Either ``[{"id", "default", "transient"?}]`` or
        a ``{id: default}`` mapping."""
        if isinstance(parameters, Mapping):
            if "id" in parameters and "default" in parameters:
                params_list = [dict(parameters)]
            else:
                params_list = [{"id": k, "default": v} for k, v in parameters.items()]
        else:
            params_list = [dict(p) for p in parameters]
        result = await self.request("parameters/define", {"parameters": params_list})
        return result.get("ids", []) if isinstance(result, dict) else result

    async def define_parameter(self, id: str, default: Any, *, transient: bool | None = None) -> list[str]:
        p: dict[str, Any] = {"id": id, "default": default}
        if transient is not None:
            p["transient"] = transient
        return await self.define_parameters([p])

    async def set_parameter(self, id: str, value: Any) -> dict[str, Any]:
        """``parameters/set``: returns ``{id, value}``."""
        return await self.request("parameters/set", {"id": id, "value": value})

    async def donate(self, id: str, info: Mapping[str, Any] | None = None) -> int:
        """``events/donate``: returns the stored donation count of that event."""
        params: dict[str, Any] = {"id": id}
        if info is not None:
            params["info"] = dict(info)
        result = await self.request("events/donate", params)
        return result.get("count") if isinstance(result, dict) else result

    async def configure_event(self, id: str, max_donations: int) -> dict[str, Any]:
        """``events/configure``: cap the stored donations of an event."""
        return await self.request("events/configure", {"id": id, "maxDonations": max_donations})

    async def invalidate(self, id: str, reason: str = "tipClosed") -> TipState:
        """``tips/invalidate`` (seed 000's close handler)."""
        return await self.request("tips/invalidate", {"id": id, "reason": str(reason)})

    async def reset_eligibility(self, id: str) -> TipState:
        return await self.request("tips/resetEligibility", {"id": id})

    async def displayed(self, id: str, duration: float | None = None) -> TipState:
        """``tips/displayed``: record that the tip was shown (for ``duration`` s)."""
        params: dict[str, Any] = {"id": id}
        if duration is not None:
            params["duration"] = duration
        return await self.request("tips/displayed", params)

    async def status(self, ids: str | Iterable[str] | None = None) -> list[TipState]:
        """``tips/status``: the state of the given tips (all when ``ids`` is None)."""
        params = {} if ids is None else {"ids": _ids(ids)}
        result = await self.request("tips/status", params)
        return result.get("tips", []) if isinstance(result, dict) else result

    async def state(self, id: str) -> TipState:
        """The state of one tip (``tips/status`` with one id)."""
        tips = await self.status([id])
        for t in tips:
            if t.get("id") == id:
                return t
        raise TipsdError(-32001, f"unknown tip {id!r}", method="tips/status")

    async def should_display(self, id: str) -> bool:
        return bool((await self.state(id)).get("shouldDisplay"))

    async def explain(self, id: str) -> Explanation:
        """``tips/explain``: why a tip is (not) showing."""
        return await self.request("tips/explain", {"id": id})

    def observe(
        self,
        ids: str | Iterable[str] | None = None,
        groups: str | Iterable[str] | None = None,
    ) -> "AwaitableContext[Subscription]":
        """``tips/observe``: an async-iterable :class:`Subscription`.

        ``sub = await client.observe(["filter.tip"])`` or
        ``async with client.observe() as sub:`` (unobserves on exit). With
        neither ``ids`` nor ``groups`` every tip is observed, including tips
        registered later. ``sub.initial`` holds the observe result.
        """
        params: dict[str, Any] = {}
        if ids is not None:
            params["ids"] = _ids(ids)
        if groups is not None:
            params["groups"] = _ids(groups)

        async def go() -> Subscription:
            return await self._subscribe("tips/observe", params, "tips", buffer=True)

        return AwaitableContext(go)

    async def unobserve(self, subscription: Any) -> bool:
        sub = self._subscriptions.get(_key(getattr(subscription, "id", subscription)))
        if sub is not None:
            return await sub.close()
        result = await self.request("tips/unobserve", {"subscription": getattr(subscription, "id", subscription)})
        return bool(result.get("removed")) if isinstance(result, dict) else False

    async def _subscribe(self, method: str, params: dict[str, Any], kind: str, *, buffer: bool,
                         callback: Callable[[Any], Any] | None = None) -> Subscription:
        def register(result: Any) -> Subscription:
            if not isinstance(result, dict) or "subscription" not in result:
                raise TipsdProtocolError(f"{method}: result without a subscription: {result!r}")
            sub = Subscription(self, kind, result, buffer=buffer)
            if callback is not None:
                sub._callbacks.append(callback)
            self._subscriptions[_key(sub.id)] = sub
            return sub

        return await self.request(method, params, on_result=register)

    async def perform_action(self, id: str, action_id: str, invalidate: bool | None = None) -> TipState:
        """``tips/performAction``: as if the user tapped the action button;
        action subscribers get ``tips/actionPerformed``. ``invalidate`` defaults to the action's definition
        (true unless it says ``"invalidate": false``)."""
        params: dict[str, Any] = {"id": id, "actionId": action_id}
        if invalidate is not None:
            params["invalidate"] = invalidate
        return await self.request("tips/performAction", params)

    async def instantiate(self, template: str, values: dict[str, Any]) -> TipState:
        """``tips/instantiate``: make and register a content tip from a catalog template (same values, same id)."""
        return await self.request("tips/instantiate", {"template": template, "values": values})

    async def reload_catalog(self) -> dict[str, Any]:
        """``catalog/reload``: reload the daemon's catalog file and apply what changed."""
        return await self.request("catalog/reload", None)

    async def set_variant(self, id: str, variant: str | None) -> TipState:
        """``tips/setVariant``: force the A/B variant a tip shows (``None``: back to the install id's pick)."""
        return await self.request("tips/setVariant", {"id": id, "variant": variant})

    async def on_action(
        self,
        callback: Callable[[ActionPerformed], Any],
        tip_ids: str | Iterable[str] | None = None,
    ) -> Unsubscribe:
        """Call ``callback(ActionPerformed)`` whenever an action is performed
        (on any connection). Returns an unsubscribe function: ``unsubscribe()``
        stops callbacks at once; ``await unsubscribe()`` also waits for the
        daemon. ``callback`` may be a plain function or a coroutine function."""
        params = {} if tip_ids is None else {"tipIds": _ids(tip_ids)}
        sub = await self._subscribe("actions/subscribe", params, "actions", buffer=False, callback=callback)
        return Unsubscribe(sub)

    def on_action_stream(self, tip_ids: str | Iterable[str] | None = None) -> "AwaitableContext[Subscription]":
        """``actions/subscribe`` as an async iterator of :class:`ActionPerformed`:
        ``async with client.on_action_stream() as actions: async for a in actions``."""
        params = {} if tip_ids is None else {"tipIds": _ids(tip_ids)}

        async def go() -> Subscription:
            return await self._subscribe("actions/subscribe", params, "actions", buffer=True)

        return AwaitableContext(go)

    # ---------------------------------------------------------------- testing

    async def show_all_tips(self) -> None:
        """``testing/showAllTips`` (``Tips.showAllTipsForTesting()``)."""
        await self.request("testing/showAllTips")

    async def hide_all_tips(self) -> None:
        await self.request("testing/hideAllTips")

    async def show_tips(self, ids: str | Iterable[str]) -> None:
        await self.request("testing/showTips", {"ids": _ids(ids)})

    async def hide_tips(self, ids: str | Iterable[str]) -> None:
        await self.request("testing/hideTips", {"ids": _ids(ids)})

    async def clear_testing(self) -> None:
        """``testing/clear``: undo show/hide overrides."""
        await self.request("testing/clear")

    async def reset_datastore(self) -> None:
        """``datastore/reset`` (``Tips.resetDatastore()``)."""
        await self.request("datastore/reset")

    # ------------------------------------------------------------------ sync

    async def sync_status(self) -> dict[str, Any]:
        """``sync/status``: sync across devices — ``{enabled, state, outbox, lagSeconds, lastPushAt, …}``."""
        return await self.request("sync/status")

    # ------------------------------------------------------------------ clock

    async def clock(self) -> dict[str, Any]:
        """``clock/now``: ``{now, virtual}``."""
        return await self.request("clock/now")

    async def now(self) -> float:
        """The daemon's current time, in seconds since the Unix epoch."""
        result = await self.clock()
        return result.get("now") if isinstance(result, dict) else result

    async def advance_clock(self, seconds: float | _dt.timedelta) -> float:
        """``clock/advance`` (virtual clock only): returns the new now."""
        if isinstance(seconds, _dt.timedelta):
            seconds = seconds.total_seconds()
        result = await self.request("clock/advance", {"seconds": seconds})
        return result.get("now") if isinstance(result, dict) else result

    async def set_clock(self, now: float | int | _dt.datetime) -> float:
        """``clock/set`` (virtual clock only): seconds since the epoch or a datetime."""
        result = await self.request("clock/set", {"now": _timestamp(now)})
        return result.get("now") if isinstance(result, dict) else result


connect = TipsClient.connect
