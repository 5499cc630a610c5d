"""The control's flush proposals on a case and the main model's keep-backs
on them: the reference set every variant's scorer also scores (exclusion
prediction on the same candidates). Recorded once and shared by every
variant: in this process (most recently used kept), and through the disk
cache by the other workers of the sweep and later runs (the control job
writes its own; a variant that asks first replays them)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from silas_exp.config import ExperimentConfig
from silas_exp.context.stats import Flush
from silas_exp.eviction.base import STRATEGIES
from silas_exp.feedback.store import DiscardingStore
from silas_exp.llm.accounting import Accounting
from silas_exp.run import disk_cache
from silas_exp.run.assemble import JobParts
from silas_exp.run.case_replay import replay_case
from silas_exp.run.failures import FailureLog
from silas_exp.run.inflight import in_case_order
from silas_exp.run.reference_stream import Following, ReferenceStream
from silas_exp.schema.benchmark import BenchmarkCase
from silas_exp.scorers import ScorerSettings, validate_scorer_settings
from silas_exp.scorers.base import SCORERS

# the control's flush logs, most recently used last: the variants of a sweep that
# runs in one process reuse them; beyond REFERENCE_CASES (a large suite) the
# oldest go and are replayed again when asked (deterministic, as in another process)
REFERENCE_CASES = 256
# the priority of a reference replay's requests over the job's cases (run/inflight.py,
# ``first``): a case that follows its reference waits for it; the calibration goes first
REFERENCES_FIRST = 1e12
_REFERENCES: OrderedDict[str, list[Flush]] = OrderedDict()
# references being replayed ahead (``replay_ahead``), which a case follows turn by turn
_PENDING: dict[str, ReferenceStream] = {}
_LOCK = threading.Lock()  # both, read and written by the threads of cases in flight


def _remember(key: str, flushes: list[Flush]) -> list[Flush]:
    with _LOCK:
        _REFERENCES[key] = flushes
        _REFERENCES.move_to_end(key)
        while len(_REFERENCES) > REFERENCE_CASES:
            _REFERENCES.popitem(last=False)
    return flushes


def control_scorer(cfg: ExperimentConfig) -> ScorerSettings:
    return validate_scorer_settings({"name": cfg.analysis.controls.get("scorer", "heuristic")})


def scores_candidates(cfg: ExperimentConfig) -> bool:
    """The strategy lets the scorer score flush candidates: exclusion AUC on
    the control's candidates applies."""
    return "scorer" in STRATEGIES.kind_of(cfg.eviction).needs


def is_control(cfg: ExperimentConfig) -> bool:
    return cfg.scorer == control_scorer(cfg)


class References:
    """The reference flushes of a job's cases."""

    def __init__(self, parts: JobParts) -> None:
        self.parts = parts

    def key(self, case: BenchmarkCase) -> str:
        cfg, job = self.parts.cfg, self.parts.job
        return json.dumps([str(self.parts.loaded.root), case.case_id, job.seed, job.namespace,
                           control_scorer(cfg).model_dump(), cfg.model.model_dump(),
                           cfg.eviction.model_dump(), cfg.budget.model_dump()],
                          sort_keys=True, default=str)

    def of(self, case: BenchmarkCase) -> list[Flush] | Following:
        """The reference flushes of ``case``: kept, being replayed ahead (then
        followed turn by turn), on disk, or replayed now."""
        key = self.key(case)
        with _LOCK:
            if key in _REFERENCES:
                _REFERENCES.move_to_end(key)
                return _REFERENCES[key]
            stream = _PENDING.get(key)
        if stream is not None:
            return Following(stream, lambda: self._now(case, key))
        return self._now(case, key)

    def _now(self, case: BenchmarkCase, key: str, stream: ReferenceStream | None = None
             ) -> list[Flush]:
        """Kept, on disk, or replayed now (telling ``stream`` how far it got)."""
        with _LOCK:
            if key in _REFERENCES:
                return _REFERENCES[key]
        entry = self._entry(key)
        if entry is None:
            return _remember(key, self._replay(case, stream))
        # a worker replaying them now: wait and read
        return _remember(key, disk_cache.computed_once(
            entry, disk_cache.read_pickle, lambda: self._replay(case, stream), disk_cache.write_pickle))

    def ahead(self, case: BenchmarkCase) -> None:
        """Replay the reference of ``case`` for the cases that follow it
        (registered by ``replay_ahead``), then let them have it whole."""
        key = self.key(case)
        with _LOCK:
            stream = _PENDING.get(key)
        try:
            flushes = self._now(case, key, stream)
        except BaseException:
            if stream is not None:
                stream.fail()
            raise
        finally:
            with _LOCK:
                _PENDING.pop(key, None)
        if stream is not None:
            stream.finish(flushes)

    def share(self, case: BenchmarkCase, flushes: list[Flush]) -> None:
        """The control job's own flushes are the reference: keep them, and on
        disk for the variants that other workers run (written whole: a variant
        that replayed them meanwhile writes the same)."""
        key = self.key(case)
        _remember(key, flushes)
        entry = self._entry(key)
        if entry is not None and not entry.is_file():
            disk_cache.write_pickle(entry, flushes)

    def warm(self) -> None:
        """Read, once per job, what every case's disk entry depends on (before
        the copies of a job's runner for cases in flight share this object)."""
        _ = self._disk_key

    def _replay(self, case: BenchmarkCase, stream: ReferenceStream | None = None) -> list[Flush]:
        # a view of its own: the case's may be scoring beside this replay (run/case_replay.py)
        llm = self.parts.llm.view(self.parts.llm.accounting)
        parts = replace(self.parts, llm=llm, store=DiscardingStore())
        with llm.charged_to(parts.overhead):  # a measurement, not this variant's own calls
            stats, _, _ = replay_case(parts, case, control_scorer(parts.cfg), None, record=True,
                                      progress=stream.passed if stream is not None else None)
        return stats.flush_log or []

    @cached_property
    def _disk_key(self) -> str | None:
        """What every reference this job keeps on disk depends on besides its
        case: the code and the suite's files, read once per job (a stat of every
        file of the suite: once per case would grow with the suite squared).
        None for a plug-in strategy or control scorer (code outside the cache
        key's digest), a dry run (no real answers) or ``llm.cache_mode=off``."""
        cfg = self.parts.cfg
        llm = cfg.llm
        kinds = STRATEGIES.kind_of(cfg.eviction), SCORERS.kind_of(control_scorer(cfg))
        if llm.dry_run or llm.cache_mode == "off" or not disk_cache.shareable(*kinds):
            return None
        return disk_cache.cache_key({"reference": "", "llm": [llm.backend, llm.base_url]},
                                    self.parts.loaded.root)

    def _entry(self, key: str) -> Path | None:
        """Where the reference of ``key`` is kept on disk; None: in the process only."""
        if self._disk_key is None:
            return None
        return disk_cache.entry_path(self.parts.cfg.paths.cache, "reference",
                                     f"{self._disk_key}\n{key}", ".pkl")


class _Ahead:
    """What the case scheduler (run/inflight.py) copies for each reference
    replayed ahead: a view of the job's client counting apart (the replays
    themselves count in ``overhead``), and stores that keep nothing."""

    def __init__(self, parts: JobParts) -> None:
        self.llm = parts.llm.view(Accounting(dict(parts.llm.accounting.prices)))
        self.store = DiscardingStore()
        self.parts = replace(parts, llm=self.llm, store=self.store)
        self.references = References(self.parts)
        self.probe_rows: list[dict] = []
        self.errors: list[str] = []
        self.failures = FailureLog([])
        self.counted_in = parts.overhead  # the progress line's calls (with the calibration's)


def _quietly(part, case: BenchmarkCase) -> None:
    try:
        part.references.ahead(case)
    except Exception:  # noqa: BLE001 - the case replays it again at its turn and reports the error
        pass


def replay_ahead(parts: JobParts, cases: Sequence[BenchmarkCase],
                 size: Callable[[BenchmarkCase], float] | None = None) -> threading.Thread | None:
    """Replay the reference flushes of ``cases`` (those a variant's cases will
    ask for) in a thread of their own, several at once, longest first, from
    while the job calibrates until they are done: a case that starts before
    its reference is done follows it turn by turn (``References.of``). Join
    the thread when the cases are done. None when there is nothing to replay
    ahead or one call at a time is all the client does."""
    cfg = parts.cfg
    if not scores_candidates(cfg) or is_control(cfg) or not parts.llm.concurrent \
            or parts.llm.settings.max_connections <= 1 \
            or not STRATEGIES.get(cfg.eviction.name).trait("evicts_per_turn"):
        return None
    wanted = [c for c in cases if c.case_id not in parts.loaded.unreplayable
              and c.expected.mode != "llm_judge"][:REFERENCE_CASES // 2]
    if not wanted:
        return None
    ahead = _Ahead(parts)
    keys = [ahead.references.key(case) for case in wanted]
    with _LOCK:  # before any case asks: each follows the replay ahead, none replays its own
        for key in keys:
            if key not in _REFERENCES:
                _PENDING.setdefault(key, ReferenceStream())

    def run() -> None:
        try:
            for _ in in_case_order(ahead, wanted, _quietly, "reference replays", size,
                                   first=REFERENCES_FIRST):
                pass
        finally:  # a replay never reached: its followers replay it themselves
            with _LOCK:
                left = [_PENDING.pop(key) for key in keys if key in _PENDING]
            for stream in left:
                stream.fail()

    thread = threading.Thread(target=run, name="silas-references", daemon=True)
    thread.start()
    return thread
