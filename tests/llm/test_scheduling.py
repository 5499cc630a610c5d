"""What shortens a job's critical path without changing a result: requests
wait for a connection by priority (llm/slots.py)."""

from __future__ import annotations

import asyncio

from silas_exp.llm.slots import PrioritySlots


def test_waiting_requests_get_a_connection_highest_priority_first_then_in_arrival_order():
    order: list[str] = []

    async def main() -> None:
        slots = PrioritySlots(1)

        async def call(name: str, priority: float) -> None:
            async with slots.slot(priority):
                order.append(name)
                await asyncio.sleep(0.01)

        first = asyncio.create_task(call("first", 0))
        await asyncio.sleep(0)  # it holds the one connection; the others wait
        waiting = [asyncio.create_task(call(n, p)) for n, p in
                   (("small", 1), ("large", 5), ("calibration", 100), ("large too", 5))]
        cancelled = asyncio.create_task(call("cancelled", 50))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.gather(first, *waiting)
        assert slots.free == 1

    asyncio.run(main())
    assert order == ["first", "calibration", "large", "large too", "small"]

