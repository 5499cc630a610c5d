"""A case's reference flushes as their replay makes them, so that the
variant's replay of the case need not wait for the whole reference replay:
at each turn it takes the reference's flushes of that turn, waiting only
until the reference replay has passed it.

The reference replay (the producer, run/references.py ``replay_ahead``)
calls ``passed(turn, log)`` before each of its turns: every flush of an
earlier turn is then in ``log`` and final (a ``Flush`` is made whole, at its
turn). A variant's replay (the consumer, run/case_replay.py) asks ``at(turn)``
before its own step of that turn and ``all()`` at its end. The flushes it
gets are those the finished replay would have given it, in the same order,
whatever the timing; only when it gets them changes."""

from __future__ import annotations

import threading
from collections.abc import Callable

from silas_exp.context.stats import Flush


class ReferenceStream:
    """One case's reference replay in progress (the producer's side)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._log: list[Flush] = []
        self._passed = 0  # every flush of a turn before this one is final
        self._done: list[Flush] | None = None
        self._failed = False

    def passed(self, turn: int, log: list[Flush]) -> None:
        with self._cond:
            self._log, self._passed = log, turn
            self._cond.notify_all()

    def finish(self, flushes: list[Flush]) -> None:
        with self._cond:
            self._done = flushes
            self._cond.notify_all()

    def fail(self) -> None:
        """The replay raised: its followers replay the reference themselves."""
        with self._cond:
            if self._done is None:
                self._failed = True
            self._cond.notify_all()

    def _wait(self, ready: Callable[[], bool]) -> bool:
        """False when the replay failed."""
        with self._cond:
            self._cond.wait_for(lambda: self._done is not None or self._failed or ready())
            return not (self._failed and self._done is None)

    def at(self, turn: int) -> list[Flush] | None:
        """The flushes of ``turn``, once final; None when the replay failed."""
        if not self._wait(lambda: self._passed > turn):
            return None
        with self._cond:
            log = self._done if self._done is not None else self._log
            return [f for f in log if f.turn == turn]

    def all(self) -> list[Flush] | None:
        if not self._wait(lambda: False):
            return None
        return self._done


class Following:
    """A case's view of a reference replayed ahead: its flushes turn by turn,
    or, if that replay fails, the reference replayed by the case itself
    (``replay``), as when nothing was replayed ahead."""

    def __init__(self, stream: ReferenceStream, replay: Callable[[], list[Flush]]) -> None:
        self.stream, self.replay = stream, replay
        self._own: list[Flush] | None = None

    def _fallback(self) -> list[Flush]:
        if self._own is None:
            self._own = self.replay()
        return self._own

    def at(self, turn: int) -> list[Flush]:
        got = self.stream.at(turn) if self._own is None else None
        if got is None:
            return [f for f in self._fallback() if f.turn == turn]
        return got

    def all(self) -> list[Flush]:
        got = self.stream.all() if self._own is None else None
        return self._fallback() if got is None else got
