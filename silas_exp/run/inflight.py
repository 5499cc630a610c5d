"""Cases in flight together: a job whose model calls wait on a network keeps up
to ``llm.max_connections`` cases replaying at once, so that calls from
different cases overlap, and hands their results back in case order.

Each case in flight runs on a copy of the job's case runner with parts of its
own: the client's ``view`` counting the case's calls in its own accounting,
a ``CaseFeedback`` holding its feedback-store rows, its probe rows, errors and
failure causes. When the case's turn comes (case order), they are added to the
job's: the rows go to the store in the order a one-at-a-time replay writes
them, the accounting adds up case by case. Within a case, turns stay in
order; cache keys are per case already. So the results are those of the
one-at-a-time replay, whatever the number in flight (``max_connections=1``
runs the same code in the calling thread).

The inline simulated backend answers at once: its jobs keep the plain loop
(no copies, no threads), and so does the compiled replay it allows.
"""

from __future__ import annotations

import copy
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any, TypeVar

from silas_exp.feedback.store import FeedbackStore, check_states
from silas_exp.llm.accounting import Accounting
from silas_exp.run.failures import FailureLog

C = TypeVar("C")
R = TypeVar("R")
PROGRESS_EVERY_S = 10.0  # at most one progress line this often (and one at the end)
AHEAD = 4  # cases not yet yielded, per case in flight, among which the largest starts first


class CaseFeedback:
    """A case's feedback-store writes, held until its turn (``write_to``)."""

    def __init__(self) -> None:
        self._writes: list[tuple[bool, tuple]] = []

    def record(self, proposal, feedback, observed) -> None:
        check_states(proposal, observed)  # the store's own check, at the case that broke it
        self._writes.append((False, (proposal, feedback, observed)))

    def record_rows(self, proposals: list[tuple], candidates: list[tuple]) -> None:
        self._writes.append((True, (proposals, candidates)))

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None

    def write_to(self, store: FeedbackStore) -> None:
        for rows, args in self._writes:
            (store.record_rows if rows else store.record)(*args)
        self._writes.clear()


class _Part:
    """One case's copy of the job's runner and the parts it counts in."""

    def __init__(self, runner: Any, priority: float = 0.0) -> None:
        self.accounting = Accounting(dict(runner.llm.accounting.prices))
        self.feedback = CaseFeedback()
        part = copy.copy(runner)
        part.llm = runner.llm.view(self.accounting, priority)
        part.store = self.feedback
        part.probe_rows, part.errors = [], []
        part.failures = FailureLog(runner.failures.kinds)
        if getattr(runner, "parts", None) is not None:  # replays take their parts from here
            part.parts = replace(runner.parts, llm=part.llm, store=self.feedback)
        if getattr(runner, "references", None) is not None:  # its replays with this case's parts
            part.references = copy.copy(runner.references)
            part.references.parts = part.parts
        self.runner = part

    def join(self, runner: Any) -> None:
        """Add the case's writes, calls, rows and causes to the job's runner."""
        self.feedback.write_to(runner.store)
        runner.llm.accounting.absorb(self.accounting)
        runner.probe_rows.extend(self.runner.probe_rows)
        runner.errors.extend(self.runner.errors)
        causes = runner.failures.causes
        for cause, entry in self.runner.failures.causes.items():
            if cause in causes:
                causes[cause]["count"] += entry["count"]
            else:
                causes[cause] = entry


def width(runner: Any) -> int:
    """Cases in flight: ``llm.max_connections`` when calls wait on a backend, else 1."""
    return runner.llm.settings.max_connections if runner.llm.concurrent else 1


def in_case_order(runner: Any, cases: Iterable[C], work: Callable[[Any, C], R],
                  label: str = "cases", size: Callable[[C], float] | None = None,
                  first: float = 0.0) -> Iterator[tuple[C, R]]:
    """``(case, work(runner, case))`` for each case, in case order. With an
    inline backend ``work`` runs on ``runner`` itself, one case after the
    other; otherwise each case on a copy of its own, up to ``width(runner)``
    at once, joined to ``runner`` just before it is yielded. An exception of
    ``work`` is raised at its case's turn, after the cases before it.

    ``size``: how long a case takes (its turns, say). Of the cases not yet
    yielded, up to ``AHEAD`` times the width, the largest starts first, so
    that the longest cases do not end the job alone; the results still come
    in case order. A case's requests wait for a connection with its size
    plus ``first`` as their priority (llm/slots.py): the longest go first, and
    a phase the others wait for (the calibration) before them."""
    if not runner.llm.concurrent:
        for case in cases:
            yield case, work(runner, case)
        return
    meter = _Meter(runner, label)
    n = width(runner)
    if n == 1:
        for case in cases:
            part = _Part(runner)
            result = work(part.runner, case)
            part.join(runner)
            meter.done(0)
            yield case, result
        meter.end()
        return
    if getattr(runner, "references", None) is not None:
        runner.references.warm()  # what the copies share and would each compute again
    todo = iter(cases)
    window: deque[list] = deque()  # [case, part, future or None, size], in case order
    waiting: list[list] = []  # window entries not started yet
    running: set[Future] = set()
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="silas-case")
    try:
        while True:
            while len(window) < AHEAD * n:  # a slow case does not leave the others idle
                case = next(todo, _END)
                if case is _END:
                    break
                entry = [case, None, None, size(case) if size is not None else 0.0]
                window.append(entry)
                waiting.append(entry)
            if size is not None:
                waiting.sort(key=lambda e: -e[3])  # stable: case order among equals
            while waiting and len(running) < n:
                entry = waiting.pop(0)
                entry[1] = part = _Part(runner, first + entry[3])
                entry[2] = future = pool.submit(work, part.runner, entry[0])
                running.add(future)
            if not window:
                break
            case, part, future, _ = window[0]
            if future is None or not future.done():
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                running -= done
                continue
            window.popleft()
            running.discard(future)
            result = future.result()
            part.join(runner)
            ahead = [e for e in window if e[2] is not None]
            meter.done(sum(not e[2].done() for e in ahead), [e[1] for e in ahead])
            yield case, result
        meter.end()
    finally:  # also on an error and when the caller stops early: no case left running
        for entry in window:
            if entry[2] is not None:
                entry[2].cancel()
        pool.shutdown(wait=True)


_END: Any = object()


class _Meter:
    """The progress line of cases in flight: cases done, calls per second, and
    whether the backend's rate limiter is holding calls back."""

    def __init__(self, runner: Any, label: str) -> None:
        self.runner, self.label = runner, label
        self.t0 = self.last = time.perf_counter()
        self.cases = 0
        # a runner whose cases count their calls elsewhere (the reference replays
        # ahead: in the job's overhead) names that accounting ``counted_in``
        self.counted = getattr(runner, "counted_in", None)
        self.calls0 = self._own().snapshot().calls

    def _own(self) -> Accounting:
        return self.counted if self.counted is not None else self.runner.llm.accounting

    def _calls(self, parts: list[_Part]) -> int:
        return (self._own().snapshot().calls - self.calls0
                + sum(p.accounting.snapshot().calls for p in parts))

    def _line(self, head: str, parts: list[_Part]) -> str:
        elapsed = max(time.perf_counter() - self.t0, 1e-9)
        limiter = getattr(self.runner.llm.backend, "limiter", None)
        held = f"; {limiter.status()}" if limiter is not None else ""
        return f"llm: {head}, {self._calls(parts) / elapsed:.1f} calls/s{held}"

    def done(self, running: int, parts: list[_Part] | None = None) -> None:
        self.cases += 1
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            print(self._line(f"{self.cases} {self.label} done, {running} in flight", parts or []),
                  file=sys.stdout, flush=True)

    def end(self) -> None:
        if self.cases:
            elapsed = time.perf_counter() - self.t0
            print(self._line(f"{self.cases} {self.label} in {elapsed:.1f} s, up to "
                             f"{width(self.runner)} in flight", []), flush=True)
