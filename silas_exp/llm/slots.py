"""The bound on requests in flight (``llm.max_connections``), handed out by
priority: of the requests waiting for a connection, the one of the highest
priority goes first, then the one that waited longest. A job gives each case
in flight the priority of its size (run/inflight.py), so that the calls of its
longest cases, which end the job, do not queue behind shorter ones. Only the
order in which waiting requests get a connection changes, never a request."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class PrioritySlots:
    """An asyncio semaphore of ``n`` slots that wakes waiters by priority.
    Made and used on one event loop (the client's)."""

    def __init__(self, n: int) -> None:
        self.free = n
        self._waiting: list[tuple[float, int, asyncio.Future]] = []
        self._order = itertools.count()

    @asynccontextmanager
    async def slot(self, priority: float = 0.0) -> AsyncIterator[None]:
        await self._acquire(priority)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, priority: float) -> None:
        if self.free > 0 and not self._waiting:
            self.free -= 1
            return
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (-priority, next(self._order), future))
        try:
            await future  # the slot is handed over by _release
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # handed over just as it was cancelled: pass it on
            else:
                self._waiting = [w for w in self._waiting if w[2] is not future]
                heapq.heapify(self._waiting)
            raise

    def _release(self) -> None:
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)  # the slot goes straight to the waiter
                return
        self.free += 1
