"""What shortens a job's critical path without changing a result: requests
wait for a connection by priority (llm/slots.py), and a case follows its
reference replay turn by turn (run/reference_stream.py)."""

from __future__ import annotations

import asyncio
import threading
import time

from silas_exp.context.stats import Flush
from silas_exp.llm.slots import PrioritySlots
from silas_exp.run.reference_stream import Following, ReferenceStream


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


def _flush(turn: int) -> Flush:
    return Flush(turn, (), ())


def test_a_case_gets_each_turns_flushes_once_the_reference_replay_has_passed_it():
    stream, log = ReferenceStream(), []
    follow = Following(stream, replay=lambda: [])
    got: dict[int, list[Flush]] = {}

    def consumer() -> None:
        for turn in range(4):
            got[turn] = follow.at(turn)

    thread = threading.Thread(target=consumer)
    thread.start()
    stream.passed(0, log)
    log.append(_flush(0))
    log.append(_flush(0))
    time.sleep(0.05)
    assert got == {}  # turn 0 is not final until the replay passes it
    stream.passed(1, log)
    log.append(_flush(2))  # turn 1 had none
    stream.passed(3, log)
    log.append(_flush(3))
    time.sleep(0.05)
    assert set(got) == {0, 1, 2}
    stream.finish(list(log))
    thread.join(5)
    assert got == {0: [_flush(0)] * 2, 1: [], 2: [_flush(2)], 3: [_flush(3)]}
    assert follow.all() == log


def test_a_failed_reference_replay_is_replayed_by_the_case_itself():
    stream = ReferenceStream()
    replays: list[int] = []
    own = [_flush(1), _flush(2)]
    follow = Following(stream, replay=lambda: replays.append(1) or own)
    stream.passed(1, [])
    assert follow.at(0) == []
    stream.fail()
    assert follow.at(1) == [_flush(1)] and follow.at(2) == [_flush(2)]
    assert follow.all() == own and replays == [1]  # replayed once


def test_a_case_whose_items_give_no_token_count_is_sized_from_its_text():
    # the probe suite's items carry text only (tokens: None, counted as chars / 3.5)
    from silas_exp.context.budget import TokenBudget
    from silas_exp.data.suites.loader import load_suite, replay_size

    from ..conftest import REPO

    loaded = load_suite(REPO / "probes" / "default")
    case = loaded.eval_cases[0]
    assert any(item.tokens is None for item in loaded.parsed(case)[0].items)
    assert replay_size(loaded, case, TokenBudget()) > 0
