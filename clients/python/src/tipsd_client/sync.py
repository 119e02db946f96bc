"""A blocking facade over :class:`TipsClient` for plain (non-async) code and
tests: the asyncio client runs on its own event loop in a daemon thread.

Every coroutine method of :class:`TipsClient` is available here as a plain
method with the same name and arguments (``client.donate("search.opened")``),
bounded by ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from .client import TipsClient
from .errors import SubscriptionClosed
from .models import ActionPerformed, Notification
from .subscription import Subscription


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="tipsd-client-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Any, timeout: float | None) -> Any:
        if threading.current_thread() is self.thread:
            raise RuntimeError("blocking tipsd call from inside a tipsd callback; use the async client there")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise TimeoutError(f"tipsd call did not finish within {timeout}s") from None

    def stop(self) -> None:
        if self.loop.is_closed():
            return

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(drain(), self.loop).result(5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


class SyncSubscription:
    """Blocking view of a :class:`Subscription`.

    ``sub.next(timeout=5)`` waits for one notification; ``for change in sub``
    iterates until the subscription ends (each wait bounded by the client's
    timeout, raising ``TimeoutError``); ``sub.pending()`` takes what has
    already arrived; ``sub.expect_none()`` asserts that nothing is pending after
    a round trip (a barrier, not a wait).
    """

    def __init__(self, owner: SyncTipsClient, sub: Subscription) -> None:
        self._owner = owner
        self._sub = sub

    @property
    def id(self) -> Any:
        return self._sub.id

    @property
    def initial(self) -> dict[str, Any]:
        return self._sub.initial

    @property
    def should_display(self) -> dict[str, bool]:
        return dict(self._sub.should_display)

    @property
    def current_tip(self) -> dict[str, str | None]:
        return dict(self._sub.current_tip)

    @property
    def tip_states(self) -> dict[str, dict[str, Any]]:
        return dict(self._sub.tip_states)

    @property
    def missed(self) -> int:
        return self._sub.missed

    @property
    def last_seq(self) -> int:
        return self._sub.last_seq

    @property
    def closed(self) -> bool:
        return self._sub.closed

    @property
    def async_subscription(self) -> Subscription:
        return self._sub

    def is_displayable(self, tip_id: str) -> bool:
        return self._sub.is_displayable(tip_id)

    def next(self, timeout: float | None = None) -> Notification:
        t = self._owner.timeout if timeout is None else timeout
        return self._owner._run(self._sub.next(t), t + 1.0)

    def pending(self) -> list[Notification]:
        async def take() -> list[Notification]:
            return self._sub.pending()

        return self._owner._run(take())

    def expect_none(self, within: float | None = None) -> None:
        """Assert that no notification is pending for this subscription.

        Not a wait: a round trip to the daemon (:meth:`TipsClient.barrier`)
        first, so every notification caused by a request the daemon answered
        before it (on any connection) has arrived, then nothing may be pending.
        ``within`` (default: the client's timeout) only bounds that round trip;
        it no longer means "silence for this long".
        """
        t = self._owner.timeout if within is None else within
        self._owner._run(self._sub.expect_none(t), t + 1.0)

    def wait_for(self, predicate: Callable[[Notification], bool], timeout: float | None = None) -> Notification:
        """Skip notifications until one matches ``predicate``."""
        import time

        t = self._owner.timeout if timeout is None else timeout
        deadline = time.monotonic() + t
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no matching notification on subscription {self.id!r} within {t}s")
            note = self.next(left)
            if predicate(note):
                return note

    def __iter__(self) -> Iterator[Notification]:
        while True:
            try:
                yield self.next()
            except SubscriptionClosed:
                return

    def close(self) -> bool:
        async def close() -> bool:
            return await self._sub.close()

        return self._owner._run(close())

    def __enter__(self) -> SyncSubscription:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Sync{self._sub!r}>"


class SyncTipsClient:
    """Blocking tipsd client. Build it with :meth:`connect` (same arguments as
    :meth:`TipsClient.connect`, plus ``timeout``)."""

    def __init__(self, loop_thread: _LoopThread, client: TipsClient, timeout: float) -> None:
        self._lt = loop_thread
        self._client = client
        self.timeout = timeout

    @classmethod
    def connect(cls, *args: Any, timeout: float = 10.0, **kwargs: Any) -> SyncTipsClient:
        lt = _LoopThread()
        try:
            kwargs.setdefault("connect_timeout", timeout)

            async def open_() -> TipsClient:
                return await TipsClient.connect(*args, **kwargs)

            client = lt.run(open_(), timeout + 5)
        except BaseException:
            lt.stop()
            raise
        return cls(lt, client, timeout)

    def _run(self, coro: Any, timeout: float | None = None) -> Any:
        return self._lt.run(coro, self.timeout if timeout is None else timeout)

    @property
    def async_client(self) -> TipsClient:
        """The underlying :class:`TipsClient` (lives on the client's loop)."""
        return self._client

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._lt.loop

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._client, name)
        if inspect.iscoroutinefunction(attr):

            def call(*args: Any, **kwargs: Any) -> Any:
                return self._run(attr(*args, **kwargs))

            call.__name__ = name
            call.__doc__ = attr.__doc__
            return call
        return attr

    def __dir__(self) -> Iterable[str]:
        return sorted(set(super().__dir__()) | {n for n in dir(self._client) if not n.startswith("_")})

    # Methods that return subscriptions or take callbacks need wrapping.

    def observe(
        self, ids: str | Iterable[str] | None = None, groups: str | Iterable[str] | None = None
    ) -> SyncSubscription:
        async def go() -> Subscription:
            return await self._client.observe(ids, groups)

        return SyncSubscription(self, self._run(go()))

    def on_action_stream(self, tip_ids: str | Iterable[str] | None = None) -> SyncSubscription:
        async def go() -> Subscription:
            return await self._client.on_action_stream(tip_ids)

        return SyncSubscription(self, self._run(go()))

    def analytics(self, after: int | None = None) -> SyncSubscription:
        """The lifecycle stream (see :meth:`TipsClient.analytics`): ``sub.next()`` is an ``AnalyticsEvent``."""

        async def go() -> Subscription:
            return await self._client.analytics(after)

        return SyncSubscription(self, self._run(go()))

    def on_action(
        self, callback: Callable[[ActionPerformed], Any], tip_ids: str | Iterable[str] | None = None
    ) -> Callable[[], bool]:
        """``callback`` runs on the client's loop thread. Returns an
        ``unsubscribe()`` function that blocks until the daemon confirms."""
        unsubscribe = self._run(self._client.on_action(callback, tip_ids))

        def sync_unsubscribe() -> bool:
            async def go() -> bool:
                return await unsubscribe()

            return self._run(go())

        return sync_unsubscribe

    def on_notification(self, listener: Callable[[Notification], Any]) -> Callable[[], None]:
        async def go() -> Callable[[], None]:
            return self._client.on_notification(listener)

        remove = self._run(go())

        def sync_remove() -> None:
            async def r() -> None:
                remove()

            self._run(r())

        return sync_remove

    def batch(self, calls: Sequence[tuple[str, Any] | str]) -> list[Any]:
        return self._run(self._client.batch(calls))

    def supports(self, method: str) -> bool:
        return self._client.supports(method)

    def close(self) -> None:
        if self._lt.loop.is_closed():
            return
        try:
            self._run(self._client.close(), self.timeout + 5)
        finally:
            self._lt.stop()

    def __enter__(self) -> SyncTipsClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SyncTipsClient {self._client.transport.describe()}>"
