"""A durable queue of changes in a file (issue #37), the Python side of the TypeScript client's offline outbox: for
tests and tooling that make changes while the node is out of reach and send them later, each exactly once.

    queue = OfflineQueue("outbox.json")
    queue.add("events/donate", {"id": "search.opened"})   # stored (fsync) with a fresh idempotencyKey
    ...
    async with TipsClient.connect(url=..., token=...) as client:
        await queue.flush(client)                           # in order; each leaves the file once answered

A change is written to the file with its ``idempotencyKey`` before anything is sent, and leaves it only once the
node answered it. A flush cut short — the connection dropped, the node restarted, the process was killed — leaves
the change whose answer did not arrive first in the file; the next flush sends it again with the same key, and the
node applies it once (within its ``--idempotency-hours``). The file is rewritten whole (a temporary file, fsync,
rename) on every change, so a crash leaves the old queue or the new one; one process at a time should use it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .connection import IDEMPOTENT_METHODS
from .errors import ErrorCode, TipsdError

if TYPE_CHECKING:  # pragma: no cover
    from .connection import Connection
    from .sync import SyncTipsClient

log = logging.getLogger("tipsd_client")

#: Errors saying a change can never be applied: it leaves the queue. Any other error keeps it (and is raised).
REFUSED_FOR_GOOD = frozenset(
    {
        ErrorCode.PARSE_ERROR,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.METHOD_NOT_FOUND,
        ErrorCode.INVALID_PARAMS,
        ErrorCode.UNKNOWN_TIP,
        ErrorCode.UNKNOWN_GROUP,
        ErrorCode.UNKNOWN_ACTION,
        ErrorCode.INVALID_RULE,
        ErrorCode.FORBIDDEN,
        ErrorCode.TESTING_DISABLED,
        ErrorCode.VIRTUAL_CLOCK_DISABLED,
    }
)

__all__ = ["OfflineQueue", "REFUSED_FOR_GOOD"]


class OfflineQueue:
    """Changes (:data:`~tipsd_client.connection.IDEMPOTENT_METHODS`) kept in ``path`` until the node answers them."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = pathlib.Path(path)
        self._changes: list[dict[str, Any]] = []
        if self.path.exists():
            stored = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            if stored.get("version") != 1 or not isinstance(stored.get("changes"), list):
                raise ValueError(f"{self.path} is not a tipsd offline queue")
            self._changes = [c for c in stored["changes"] if isinstance(c, dict) and isinstance(c.get("method"), str)]

    def __len__(self) -> int:
        return len(self._changes)

    @property
    def changes(self) -> list[dict[str, Any]]:
        """The waiting changes, oldest first: ``{"method", "params" (with "idempotencyKey"), "queuedAt"}``."""
        return [{**c, "params": dict(c["params"])} for c in self._changes]

    def add(self, method: str, params: Mapping[str, Any] | None = None) -> str:
        """Stores a change (durably: the call returns once it is on disk) and returns its idempotency key."""
        if method not in IDEMPOTENT_METHODS:
            raise ValueError(f"{method} is not a change the queue can replay (one of {sorted(IDEMPOTENT_METHODS)})")
        keyed = dict(params or {})
        key = keyed.setdefault("idempotencyKey", uuid.uuid4().hex)
        self._changes.append({"method": method, "params": keyed, "queuedAt": time.time()})
        self._save()
        return key

    def donate(self, id: str, info: Mapping[str, Any] | None = None) -> str:
        """``events/donate``, queued."""
        return self.add("events/donate", {"id": id} if info is None else {"id": id, "info": dict(info)})

    async def flush(self, client: Connection, limit: int | None = None) -> list[Any]:
        """Sends the waiting changes in order, one at a time (at most ``limit``), each leaving the file once the node
        answered it; returns their results. A change the node refuses for good (:data:`REFUSED_FOR_GOOD`: an unknown
        tip, invalid params…) is dropped with a warning, its error in the results. Any other error — the connection
        lost, no answer in time, ``-32016`` past the client's retries, a quota — is raised: that change and the later
        ones stay queued for the next flush."""
        results: list[Any] = []
        while self._changes and (limit is None or len(results) < limit):
            change = self._changes[0]
            try:
                result = await client.request(change["method"], dict(change["params"]))
            except TipsdError as error:
                if error.code not in REFUSED_FOR_GOOD:
                    raise
                log.warning("tipsd: a queued %s was refused and is dropped: %s", change["method"], error)
                result = error
            self._changes.pop(0)
            self._save()
            results.append(result)
        return results

    def flush_sync(self, client: SyncTipsClient, limit: int | None = None) -> list[Any]:
        """:meth:`flush` for the blocking client (``SyncTipsClient``, the ``tipsd`` fixture): runs on its loop."""
        return asyncio.run_coroutine_threadsafe(self.flush(client.async_client, limit), client.loop).result()

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        text = json.dumps({"version": 1, "changes": self._changes}, separators=(",", ":"), ensure_ascii=False)
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)
