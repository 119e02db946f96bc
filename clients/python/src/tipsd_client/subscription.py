"""Subscriptions on the client side: ``tips/observe``, ``actions/subscribe``
and ``analytics/subscribe`` (:class:`Subscribing`, part of every
:class:`~tipsd_client.TipsClient`), and the :class:`Subscription` each
returns: an async iterator of its notifications with the latest state it
saw, closed by unsubscribing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Generic, TypeVar

from .connection import Connection, _ids, _key
from .errors import SubscriptionClosed, TipsdConnectionError, TipsdError, TipsdProtocolError
from .models import ActionPerformed, CurrentTipChanged, Notification, ShouldDisplayChanged

log = logging.getLogger("tipsd_client")

_END = object()
T = TypeVar("T")

#: Each kind of subscription: the method that makes it and the one that ends it.
KINDS = {
    "tips": ("tips/observe", "tips/unobserve"),
    "actions": ("actions/subscribe", "actions/unsubscribe"),
    "analytics": ("analytics/subscribe", "analytics/unsubscribe"),
}


class Subscription:
    """One server-side subscription, iterable with ``async for``.

    * ``initial`` — the ``tips/observe`` result (``{subscription, tips, groups}``),
      the ``actions/subscribe`` result (``{subscription}``) or the
      ``analytics/subscribe`` result (``{subscription, head, oldest}``);
    * ``should_display`` / ``current_tip`` — the latest known value per tip /
      per group, kept up to date as notifications arrive (a tiny store, like
      ``useTipVisibility``);
    * ``missed`` — how many notifications a ``seq`` gap says were lost.

    ``await sub.close()`` unsubscribes (idempotent) and ends iteration.
    """

    def __init__(
        self,
        client: Connection,
        kind: str,
        initial: dict[str, Any],
        *,
        buffer: bool = True,
        account: str | None = None,
    ) -> None:
        self._client = client
        self.kind = kind
        #: Hosted mode, admin: the account it was made on (its unsubscribe names it too).
        self.account = account  # a key of KINDS: "tips" (tips/observe), "actions", "analytics"
        self.initial: dict[str, Any] = initial
        self.id: Any = initial.get("subscription")
        self._buffer = buffer
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._closed = False
        self._ended = False
        self._close_task: asyncio.Future[bool] | None = None
        self._callbacks: list[Callable[[Any], Any]] = []
        self.last_seq = 0
        self.missed = 0
        self.received = 0
        self.should_display: dict[str, bool] = {}
        self.tip_states: dict[str, dict[str, Any]] = {}
        self.current_tip: dict[str, str | None] = {}
        for state in initial.get("tips") or []:
            if isinstance(state, dict) and "id" in state:
                self.tip_states[state["id"]] = state
                self.should_display[state["id"]] = bool(state.get("shouldDisplay"))
        for g in initial.get("groups") or []:
            if isinstance(g, dict) and "group" in g:
                self.current_tip[g["group"]] = g.get("tipId")

    # -- delivery (called by the client's reader, on the event loop) ---------

    def _deliver(self, note: Notification) -> None:
        if self._closed:
            return  # unsubscribed locally: drop anything still in flight
        seq = getattr(note, "seq", None)
        if isinstance(seq, int):
            if self.last_seq and seq > self.last_seq + 1:
                gap = seq - self.last_seq - 1
                self.missed += gap
                log.warning("tipsd subscription %r: seq jumped %d -> %d (%d missed)", self.id, self.last_seq, seq, gap)
            self.last_seq = max(self.last_seq, seq)
        self.received += 1
        if isinstance(note, ShouldDisplayChanged):
            self.should_display[note.id] = note.should_display
            prev = self.tip_states.get(note.id, {})
            state = dict(prev)
            state.update({"id": note.id, "shouldDisplay": note.should_display, "status": note.status})
            if note.reason is not None:
                state["reason"] = note.reason
            else:
                state.pop("reason", None)
            if note.tip is not None:
                state["tip"] = note.tip
            self.tip_states[note.id] = state
        elif isinstance(note, CurrentTipChanged):
            self.current_tip[note.group] = note.tip_id
        for cb in list(self._callbacks):
            self._client._invoke_callback(cb, note)
        if self._buffer:
            self._queue.put_nowait(note)

    def _end(self) -> None:
        """The subscription is over (closed, or the connection dropped)."""
        self._closed = True
        if not self._ended:
            self._ended = True
            self._queue.put_nowait(_END)

    # -- consuming -----------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def is_displayable(self, tip_id: str) -> bool:
        """The latest ``shouldDisplay`` this subscription saw for ``tip_id``."""
        return self.should_display.get(tip_id, False)

    def __aiter__(self) -> AsyncIterator[Notification]:
        return self

    async def __anext__(self) -> Notification:
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)  # keep later readers ending too
            raise StopAsyncIteration
        return item

    async def next(self, timeout: float | None = None) -> Notification:
        """The next notification; ``TimeoutError`` after ``timeout`` seconds,
        ``SubscriptionClosed`` if the subscription has ended."""
        try:
            if timeout is None:
                return await self.__anext__()
            return await asyncio.wait_for(self.__anext__(), timeout)
        except StopAsyncIteration:
            raise SubscriptionClosed(f"subscription {self.id!r} has ended") from None
        except TimeoutError:
            raise TimeoutError(f"no notification on subscription {self.id!r} within {timeout}s") from None

    def pending(self) -> list[Notification]:
        """Every notification already received and not yet consumed."""
        out: list[Notification] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return out
            if item is _END:
                self._queue.put_nowait(_END)
                return out
            out.append(item)

    async def expect_none(self, timeout: float | None = None) -> None:
        """Assert that no notification is pending for this subscription,
        without waiting for a while: a :meth:`TipsClient.barrier` round trip
        first, so every notification caused by requests the daemon answered
        before it has arrived. ``timeout`` only bounds the round trip.
        Raises ``AssertionError`` listing what arrived (and takes it)."""
        await self._client.barrier(timeout=self._client.request_timeout if timeout is None else timeout)
        arrived = self.pending()
        if arrived:
            raise AssertionError(f"expected no notification on subscription {self.id!r}, got {arrived!r}")

    # -- closing -------------------------------------------------------------

    def _detach(self) -> None:
        """Stop delivering right now (before the server confirms)."""
        self._callbacks.clear()
        self._client._forget_subscription(self)
        self._end()

    def close(self) -> asyncio.Future[bool]:
        """Unsubscribe. Local delivery stops at once; the returned future (await
        it, or don't) resolves to the server's ``removed`` flag. Idempotent."""
        if self._close_task is None:
            self._detach()
            self._close_task = asyncio.ensure_future(self._unsubscribe())
        return self._close_task

    async def _unsubscribe(self) -> bool:
        method = KINDS[self.kind][1]
        if self._client.closed:
            return False
        try:
            params: dict[str, Any] = {"subscription": self.id}
            if self.account is not None:
                params["account"] = self.account
            result = await self._client.request(method, params)
        except (TipsdConnectionError, TipsdError) as e:
            log.debug("tipsd: %s %r failed: %s", method, self.id, e)
            return False
        return bool(result.get("removed")) if isinstance(result, dict) else False

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Subscription {self.kind} id={self.id!r} {state} seq={self.last_seq}>"


class Unsubscribe:
    """Returned by :meth:`TipsClient.on_action`.

    Call it like seed 000's unsubscribe function: ``unsubscribe()`` stops the
    callback immediately and returns a future you may ``await`` for the
    server-side ``actions/unsubscribe``. Idempotent.
    """

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription

    def __call__(self) -> asyncio.Future[bool]:
        return self.subscription.close()

    def __repr__(self) -> str:
        return f"<Unsubscribe {self.subscription!r}>"


class AwaitableContext(Generic[T]):
    """Lets ``x = await f()`` and ``async with f() as x:`` both work."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._value: Any = None

    def __await__(self):
        return self._factory().__await__()

    async def __aenter__(self) -> T:
        self._value = await self._factory()
        enter = getattr(self._value, "__aenter__", None)
        if enter is not None:
            return await enter()
        return self._value

    async def __aexit__(self, *exc: Any) -> Any:
        exit_ = getattr(self._value, "__aexit__", None)
        if exit_ is not None:
            return await exit_(*exc)
        return None


class Subscribing(Connection):
    """The subscribing requests of :class:`~tipsd_client.TipsClient`: each returns a
    :class:`Subscription` (or, for ``on_action``, an :class:`Unsubscribe`)."""

    def observe(
        self,
        ids: str | Iterable[str] | None = None,
        groups: str | Iterable[str] | None = None,
    ) -> AwaitableContext[Subscription]:
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
            return await self._subscribe("tips", params, buffer=True)

        return AwaitableContext(go)

    async def unobserve(self, subscription: Any) -> bool:
        sub = self._subscriptions.get(_key(getattr(subscription, "id", subscription)))
        if sub is not None:
            return await sub.close()
        result = await self.request("tips/unobserve", {"subscription": getattr(subscription, "id", subscription)})
        return bool(result.get("removed")) if isinstance(result, dict) else False

    async def _subscribe(
        self, kind: str, params: dict[str, Any], *, buffer: bool, callback: Callable[[Any], Any] | None = None
    ) -> Subscription:
        method = KINDS[kind][0]
        params = self._scoped(method, params)

        def register(result: Any) -> Subscription:
            if not isinstance(result, dict) or "subscription" not in result:
                raise TipsdProtocolError(f"{method}: result without a subscription: {result!r}")
            sub = Subscription(self, kind, result, buffer=buffer, account=params.get("account"))
            if callback is not None:
                sub._callbacks.append(callback)
            self._subscriptions[_key(sub.id)] = sub
            return sub

        return await self.request(method, params, on_result=register)

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
        sub = await self._subscribe("actions", params, buffer=False, callback=callback)
        return Unsubscribe(sub)

    def on_action_stream(self, tip_ids: str | Iterable[str] | None = None) -> AwaitableContext[Subscription]:
        """``actions/subscribe`` as an async iterator of :class:`ActionPerformed`:
        ``async with client.on_action_stream() as actions: async for a in actions``."""
        params = {} if tip_ids is None else {"tipIds": _ids(tip_ids)}

        async def go() -> Subscription:
            return await self._subscribe("actions", params, buffer=True)

        return AwaitableContext(go)

    def analytics(self, after: int | None = None) -> AwaitableContext[Subscription]:
        """``analytics/subscribe``: the lifecycle stream as an async iterator of
        :class:`~tipsd_client.models.AnalyticsEvent` (impressions, eligibility
        changes, invalidations, actions, variant assignments), in cursor order.

        With ``after``, the events after that cursor that are still kept are
        replayed first, then new ones follow; without it, new ones only. Store
        each event's ``cursor`` once it is handled and pass the last one as
        ``after`` next time: every event arrives at least once, across dropped
        connections and daemon restarts. ``sub.initial`` is ``{subscription,
        head, oldest}`` (``after < oldest - 1``: entries were pruned first)::

            async with client.analytics(after=load_cursor()) as events:
                async for e in events:
                    send(f"tip_{e.type}", {"tip_id": e.tip_id, "variant": e.variant})
                    save_cursor(e.cursor)
        """
        params = {} if after is None else {"after": after}

        async def go() -> Subscription:
            return await self._subscribe("analytics", params, buffer=True)

        return AwaitableContext(go)
