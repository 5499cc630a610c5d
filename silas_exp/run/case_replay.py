"""One replay of a case with a job's parts: the case's session through its
strategy, and, given the control's flush proposals on the case (the
reference), the case's scorer scoring those same candidates at their turns:
exclusion prediction on a shared set. The job's cases, its calibration
replays and the control's reference replays all replay here."""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable
from typing import Any

from silas_exp.context.replay import NeedOracle
from silas_exp.context.stats import Flush, ReplayStats
from silas_exp.data.suites.loader import session_case
from silas_exp.eviction.base import replay_strategy
from silas_exp.feedback.calibration import Calibration
from silas_exp.metrics.classification import roc_auc
from silas_exp.run.assemble import JobParts
from silas_exp.run.reference_stream import Following
from silas_exp.schema.benchmark import BenchmarkCase
from silas_exp.scorers import ScorerUnavailable
from silas_exp.scorers.base import SCORERS
from silas_exp.scorers.grid import on_grid


def replay_case(parts: JobParts, case: BenchmarkCase, scorer_settings: Any,
                calibration: Calibration | None, reference: list[Flush] | Following | None = None,
                record: bool = False, progress: Callable[[int, list[Flush]], None] | None = None
                ) -> tuple[ReplayStats, NeedOracle, dict[str, float]]:
    """Replay one case; (stats, need oracle, the shared-set metrics). With
    ``reference`` (the flushes, or a reference replay followed turn by turn:
    run/reference_stream.py), the case's scorer also scores those candidates
    at their turns, before its own step (beside the replay, in a thread, when
    the scorer's kind is ``stateless``: the same scores). ``record``: keep
    every flush in ``stats.flush_log``; ``progress(turn, stats.flush_log)``
    before each turn."""
    sc = session_case(parts.loaded, case, parts.cfg.budget)
    oracle, stats = NeedOracle(sc.truth), ReplayStats(flush_log=[] if record else None)
    built = parts.case_parts(sc, f"{parts.job.namespace}/{case.case_id}", scorer_settings,
                             calibration, oracle, stats)
    scorer = built.scorer
    by_turn: dict[int, list[Flush]] = {}
    for f in reference if isinstance(reference, list) else ():
        by_turn.setdefault(f.turn, []).append(f)
    at = reference.at if isinstance(reference, Following) else lambda t: by_turn.get(t, ())
    follow = bool(by_turn) or isinstance(reference, Following)
    scores: list[float] = []
    labels: list[bool] = []

    def score_reference(turn: int) -> None:
        for f in at(turn):
            try:
                got = on_grid(scorer.score(list(f.items), turn))
            except ScorerUnavailable:
                continue  # a failed call scores nothing; the AUC uses the calls that answered
            scores.extend(got[i.ctx_id] for i in f.items)
            labels.extend(f.kept)

    # a scorer whose scores depend only on what it scores: the reference's candidates
    # are scored beside the case's own steps (two chains of calls at once, not one;
    # with one connection, one after the other as the one-at-a-time replay does)
    beside = (follow and parts.llm.concurrent and parts.llm.settings.max_connections > 1
              and SCORERS.kind_of(scorer_settings).trait("stateless"))
    scoring = _Beside(score_reference, sc.session.turns) if beside else None

    def before_step(turn: int) -> None:
        if progress is not None:
            progress(turn, stats.flush_log)
        if follow and not beside:
            score_reference(turn)

    try:
        replay_strategy(built.strategy, sc.session, sc.truth, sc.budget, stats, sc.flush_turn,
                        before_step if (follow and not beside) or progress is not None else None)
    finally:
        if scoring is not None:
            scoring.join()  # raises what the scoring raised
    shared: dict[str, float] = {}
    if reference is not None:
        flushes = reference.all() if isinstance(reference, Following) else reference
        shared = {"feedback.exclusion_auc": roc_auc(scores, labels) if scores else math.nan,
                  "feedback.reference_flushes": float(len(flushes))}
    return stats, oracle, shared


class _Beside:
    """``score(turn)`` for every turn in order, in a thread of its own."""

    def __init__(self, score: Callable[[int], None], turns: int) -> None:
        self.error: BaseException | None = None
        self.stopped = False
        self.thread = threading.Thread(target=self._run, args=(score, turns), daemon=True,
                                       name="silas-reference-scores")
        self.thread.start()

    def _run(self, score: Callable[[int], None], turns: int) -> None:
        try:
            for turn in range(turns):
                if self.stopped:
                    return
                score(turn)
        except BaseException as exc:  # noqa: BLE001 - raised in the case's thread by join
            self.error = exc

    def join(self) -> None:
        """Wait for the scores; raise what scoring raised. Called when the
        replay ended, also when it raised (then the scoring stops early)."""
        if sys.exc_info()[1] is not None:
            self.stopped = True
        self.thread.join()
        if self.error is not None and sys.exc_info()[1] is None:
            raise self.error
