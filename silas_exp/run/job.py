"""The core: run one job (suite × variant × repeat) and return pure data.

No Hydra, no MLflow here: ``run_job(cfg, job)`` takes a validated config and
returns a ``JobOutcome`` (a §20.2 ``BenchmarkRun`` plus run-level metrics).
The Hydra entry point and the tracking layer wrap it.
"""

from __future__ import annotations

import json
import math
import time
import traceback
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

from silas_exp.config import ExperimentConfig, job_seed
from silas_exp.context.replay import NeedOracle, replay
from silas_exp.context.stats import Flush, ReplayStats
from silas_exp.data.suites.blocks import block_of
from silas_exp.data.suites.expected import judge_case
from silas_exp.data.suites.loader import (
    CaseList,
    LoadedSuite,
    load_suite,
    probe_plan,
    session_case,
)
from silas_exp.errors import BudgetExceeded, RunError, SilasExpError, SuiteError
from silas_exp.eviction.base import STRATEGIES, StrategyDeps, build_strategy
from silas_exp.eviction.compiled import replay_two_tier
from silas_exp.feedback.calibration import Calibration, stored_exclusion_rates
from silas_exp.feedback.flush import KeepBackBroker, MainModelSettings
from silas_exp.feedback.store import DiscardingStore, FeedbackStore
from silas_exp.llm import LLMClient, build_client
from silas_exp.llm.accounting import Accounting
from silas_exp.metrics.classification import roc_auc
from silas_exp.metrics.context import case_metrics
from silas_exp.metrics.plugins import METRICS, case_metric_functions
from silas_exp.metrics.registry import undeclared
from silas_exp.probes.judge import JUDGES, build_judge
from silas_exp.probes.pipeline import run_probe_case
from silas_exp.probes.report import PROBE_TABLE, run_probe_metrics
from silas_exp.records import CASES_FILE, CaseLog, case_results
from silas_exp.run import disk_cache
from silas_exp.run.calibration import _calibrate
from silas_exp.run.failures import FailureLog
from silas_exp.run.failures import write as write_failures
from silas_exp.run.inflight import in_case_order
from silas_exp.run.tally import CaseTally
from silas_exp.schema.benchmark import BenchmarkCase, BenchmarkResult, BenchmarkRun
from silas_exp.scorers import (
    ScorerContext,
    ScorerUnavailable,
    build_scorer,
    validate_scorer_settings,
)
from silas_exp.scorers.base import SCORERS
from silas_exp.scorers.grid import on_grid
from silas_exp.tune.split import suite_cases

MAX_EVICTED_LOGGED = 2000  # eviction order kept per case (for shadow diffs)


@dataclass(frozen=True)
class JobSpec:
    variant: str
    repeat: int
    seed: int
    block: int = 0  # which block of the suite's cases (sequential studies)

    @property
    def namespace(self) -> str:
        # shared by every variant of one repeat: common random numbers (paired design)
        return f"r{self.repeat}-s{self.seed}"


@dataclass
class JobOutcome:
    run: BenchmarkRun  # without its per-case results: they stream to ``results_path``
    metrics: dict[str, float]
    suite_version: str
    results_path: Path
    cases: int
    feedback_db: Path | None = None
    calibration: Calibration | None = None
    notes: list[str] = field(default_factory=list)
    failures: list[dict] = field(default_factory=list)  # case errors per cause (run/failures.py)

    def results(self) -> Iterator[BenchmarkResult]:
        """The job's per-case results, read back one at a time."""
        yield from case_results(self.results_path)


def make_job(cfg: ExperimentConfig, variant: str) -> JobSpec:
    return JobSpec(variant=variant, repeat=cfg.repeat, seed=job_seed(cfg.seed, cfg.repeat),
                   block=cfg.block)


def _main_settings(cfg: ExperimentConfig) -> MainModelSettings:
    kb = cfg.model.keepback
    return MainModelSettings(
        model_id=cfg.model.main_id, backend=cfg.model.backend, recall=kb.recall,
        false_keep=kb.false_keep, horizon=kb.horizon, latency_median_ms=kb.latency_median_ms,
        latency_sigma=kb.latency_sigma, timeout_ms=kb.eviction_feedback_timeout_ms,
    )


class _CaseRunner:
    def __init__(self, cfg: ExperimentConfig, job: JobSpec, loaded: LoadedSuite, llm: LLMClient,
                 store: FeedbackStore | DiscardingStore) -> None:
        self.cfg, self.job, self.loaded, self.llm, self.store = cfg, job, loaded, llm, store
        # model calls made only to measure (calibration replays, the control's reference
        # replays): made or not depending on what the process already holds, so they are
        # kept out of the job's own llm.* metrics and reported as llm.overhead.*
        self.overhead = Accounting(dict(cfg.llm.prices))
        self.errors: list[str] = []
        self.probe_rows: list[dict] = []
        self.plugin_metrics = case_metric_functions(cfg.metrics.plugins)
        self.failures = FailureLog([
            ("scorer", SCORERS.kind_of(cfg.scorer)), ("eviction strategy", STRATEGIES.kind_of(cfg.eviction)),
            ("judge", JUDGES.kind_of(cfg.judge)),
            *(("metric", METRICS.get(name)) for name in cfg.metrics.plugins)])

    def _strategy(self, sc, namespace: str, scorer_settings, calibration, oracle: NeedOracle,
                  stats: ReplayStats):
        """The eviction strategy of the config, wired to this case's scorer and keep-back broker."""
        cfg, horizon = self.cfg, self.cfg.metrics.horizon
        scorer = build_scorer(scorer_settings, ScorerContext(
            seed=self.job.seed, namespace=namespace, scorer_model=cfg.model.scorer_id, llm=self.llm,
            calibration=calibration, prompt=cfg.prompt,
            oracle=lambda cid, t: oracle.need_score(cid, t, horizon),
        ))
        broker = KeepBackBroker(_main_settings(cfg), self.llm, self.store, namespace, self.job.seed,
                                oracle.max_grade_within)
        self.scorer = scorer
        return build_strategy(cfg.eviction, StrategyDeps(
            budget=sc.budget, shares=sc.shares, stats=stats, scope_id=sc.session.scope_id,
            scorer=scorer, broker=broker, llm=self.llm, namespace=namespace,
            model_id=cfg.model.main_id,
        ))

    def replay_case(self, case: BenchmarkCase, scorer_settings, calibration,
                    reference: list[Flush] | None = None, record: bool = False,
                    ) -> tuple[ReplayStats, NeedOracle, dict[str, float]]:
        """Replay one case. With ``reference`` (the control's flush proposals on
        this case), the case's scorer also scores those same candidates at their
        turns, before its own step: exclusion prediction on a shared set."""
        sc = session_case(self.loaded, case, self.cfg.budget)
        oracle, stats = NeedOracle(sc.truth), ReplayStats(flush_log=[] if record else None)
        strategy = self._strategy(sc, f"{self.job.namespace}/{case.case_id}", scorer_settings,
                                  calibration, oracle, stats)
        scorer = self.scorer
        by_turn: dict[int, list[Flush]] = {}
        for f in reference or ():
            by_turn.setdefault(f.turn, []).append(f)
        scores: list[float] = []
        labels: list[bool] = []
        flush_turn = sc.flush_turn

        def score_reference(turn: int) -> None:
            for f in by_turn.get(turn, ()):
                try:
                    got = on_grid(scorer.score(list(f.items), turn))
                except ScorerUnavailable:
                    continue  # a failed call scores nothing; the AUC uses the calls that answered
                scores.extend(got[i.ctx_id] for i in f.items)
                labels.extend(f.kept)

        def step(window, turn: int) -> None:
            score_reference(turn)
            if turn == flush_turn:
                strategy.compress(window, turn)  # a snapshot case: one flush decision
            else:
                strategy.step(window, turn)

        if replay_two_tier(sc.session, sc.truth, strategy, sc.budget, stats, flush_turn) is None:
            replay(sc.session, sc.truth, step, sc.budget, stats)
        else:  # replayed compiled: the reference flushes scored after it (the scorer keeps no state)
            for turn in sorted(t for t in by_turn if t < sc.session.turns):
                score_reference(turn)
        shared: dict[str, float] = {}
        if reference is not None:
            shared = {"feedback.exclusion_auc": roc_auc(scores, labels) if scores else math.nan,
                      "feedback.reference_flushes": float(len(reference))}
        return stats, oracle, shared

    def reference_flushes(self, case: BenchmarkCase) -> list[Flush]:
        """The control scorer's flush proposals and the main model's keep-backs on
        this case (same seed and namespace as every variant of this repeat),
        recorded once and shared by every variant: in this process, and through
        the disk cache by the other workers of the sweep and later runs (the
        control job writes its own; a variant that asks first replays them)."""
        key = self._reference_key(case)
        if key in _REFERENCES:
            _REFERENCES.move_to_end(key)
            return _REFERENCES[key]
        entry = self._reference_entry(key)
        if entry is None:
            return _remember_reference(key, self._replay_reference(case))
        # a worker replaying them now: wait and read
        return _remember_reference(key, disk_cache.computed_once(
            entry, disk_cache.read_pickle, lambda: self._replay_reference(case),
            disk_cache.write_pickle))

    def _replay_reference(self, case: BenchmarkCase) -> list[Flush]:
        runner = _CaseRunner(self.cfg, self.job, self.loaded, self.llm, DiscardingStore())
        with self.llm.charged_to(self.overhead):  # a measurement, not this variant's own calls
            stats, _, _ = runner.replay_case(case, self._control_scorer(), None, record=True)
        return stats.flush_log or []

    @cached_property
    def _reference_disk_key(self) -> str | None:
        """What every reference this job keeps on disk depends on besides its
        case: the code and the suite's files, read once per job (a stat of every
        file of the suite: once per case would grow with the suite squared).
        None for a plug-in strategy or control scorer (code outside the cache
        key's digest), a dry run (no real answers) or ``llm.cache_mode=off``."""
        llm = self.cfg.llm
        kinds = STRATEGIES.kind_of(self.cfg.eviction), SCORERS.kind_of(self._control_scorer())
        if llm.dry_run or llm.cache_mode == "off" or not disk_cache.shareable(*kinds):
            return None
        return disk_cache.cache_key({"reference": "", "llm": [llm.backend, llm.base_url]},
                                    self.loaded.root)

    def _reference_entry(self, key: str) -> Path | None:
        """Where the reference of ``key`` is kept on disk; None: in the process only."""
        if self._reference_disk_key is None:
            return None
        return disk_cache.entry_path(self.cfg.paths.cache, "reference",
                                     f"{self._reference_disk_key}\n{key}", ".pkl")

    def _share_reference(self, key: str, flushes: list[Flush]) -> None:
        """The control job's own flushes are the reference: keep them for the
        variants that other workers run (written whole: a variant that replayed
        them meanwhile writes the same)."""
        entry = self._reference_entry(key)
        if entry is not None and not entry.is_file():
            disk_cache.write_pickle(entry, flushes)

    def probe_case(self, case: BenchmarkCase, calibration: Calibration | None) -> dict[str, float]:
        """A compression-probe case (``expected.mode == "llm_judge"``)."""
        cfg = self.cfg
        sc = session_case(self.loaded, case, cfg.budget)
        plan = probe_plan(self.loaded, case)
        namespace = f"{self.job.namespace}/{case.case_id}"
        strategy = self._strategy(sc, namespace, cfg.scorer, calibration, NeedOracle(sc.truth),
                                  ReplayStats())
        judge = build_judge(cfg.judge, self.llm, cfg.model.judge_id, namespace=f"{namespace}/judge")
        result = run_probe_case(sc.session, plan, strategy, self.llm, judge, namespace=namespace,
                                main_model=cfg.model.main_id,
                                max_subscription_tokens=sc.budget.max_subscription_tokens)
        self.probe_rows.extend({"case_id": case.case_id, **row} for row in result.rows)
        return result.metrics

    def _execute(self, case: BenchmarkCase, calibration: Calibration | None
                 ) -> tuple[dict[str, float], str | None, list[str] | None, float | None]:
        """(metrics, output, eviction order, judge score) of one case."""
        if case.expected.mode == "llm_judge":
            n_rows = len(self.probe_rows)
            metrics = self.probe_case(case, calibration)
            overall = metrics.get("probe.overall")
            if overall is None:
                raise RunError("judge: no probe of this case could be graded")
            rows = self.probe_rows[n_rows:]
            output = "\n".join(f"{r.get('probe_id')}: {r.get('answer') or ''}" for r in rows)
            return metrics, output, None, overall / 5.0
        if self._scores_candidates() and self._is_control():
            # the control's own proposals are the shared set: record them, score them as made
            stats, oracle, _ = self.replay_case(case, self.cfg.scorer, calibration, record=True)
            key = self._reference_key(case)
            self._share_reference(key, _remember_reference(key, stats.flush_log or []))
            # candidate_scores holds the scores of these same proposals, in order
            kept = [k for f in stats.flush_log or () for k in f.kept]
            shared = {"feedback.exclusion_auc": roc_auc(stats.candidate_scores, kept)
                      if kept else math.nan,
                      "feedback.reference_flushes": float(len(stats.flush_log or ()))}
        else:
            reference = self.reference_flushes(case) if self._scores_candidates() else None
            stats, oracle, shared = self.replay_case(case, self.cfg.scorer, calibration, reference)
        metrics = case_metrics(stats, oracle, self.cfg.metrics.horizon)
        metrics.update(shared)
        for key, compute in self.plugin_metrics.items():
            metrics[key] = float(compute(stats, oracle, self.cfg.metrics.horizon))
        evicted = [cid for _, cid in stats.evictions][:MAX_EVICTED_LOGGED]
        return metrics, "\n".join(stats.retained), evicted, None

    def _scores_candidates(self) -> bool:
        """The strategy lets the scorer score flush candidates: exclusion AUC on
        the control's candidates applies."""
        return "scorer" in STRATEGIES.kind_of(self.cfg.eviction).needs

    def _control_scorer(self):
        return validate_scorer_settings({"name": self.cfg.analysis.controls.get("scorer",
                                                                                "heuristic")})

    def _is_control(self) -> bool:
        return self.cfg.scorer == self._control_scorer()

    def _reference_key(self, case: BenchmarkCase) -> str:
        return json.dumps([str(self.loaded.root), case.case_id, self.job.seed, self.job.namespace,
                           self._control_scorer().model_dump(), self.cfg.model.model_dump(),
                           self.cfg.eviction.model_dump(), self.cfg.budget.model_dump()],
                          sort_keys=True, default=str)

    def run_case(self, case: BenchmarkCase, calibration: Calibration | None) -> BenchmarkResult:
        name = self.cfg.eviction.name
        if case.expected.mode != "llm_judge" and not STRATEGIES.get(name).trait("evicts_per_turn"):
            return BenchmarkResult(  # shown as skipped, never scored as a window that kept all
                case_id=case.case_id, status="skipped", latency_ms=0.0, token_cost=0,
                error=f"replay case skipped: eviction={name} acts at compression events only; "
                      "replay cases measure per-turn eviction (eviction=two_tier)")
        before = self.llm.accounting.snapshot()
        t0 = time.perf_counter()
        judge_score, output, evicted = None, None, None
        try:
            metrics, output, evicted, judge_score = self._execute(case, calibration)
            error = None
        except (BudgetExceeded, SuiteError):
            raise  # bad input (exit 2) and a reached budget stop the job; nothing is half-scored
        except (SilasExpError, Exception) as exc:  # a failed case counts, never vanishes
            metrics, status = {}, "error"
            error, blamed = self.failures.add(case.case_id, exc)  # counted per cause, by name
            if self.cfg.fail_fast:
                if blamed is exc:
                    raise
                raise blamed from exc
            self.errors.append(traceback.format_exc())
        latency = (time.perf_counter() - t0) * 1000.0
        spent = self.llm.accounting.snapshot().delta(before)
        tokens = int(spent.input_tokens + spent.output_tokens)
        if error is None:
            status, error = judge_case(case, metrics, output, latency, tokens,
                                       self.loaded.human_labels.get(case.case_id))
        if self.llm.backend_name != "simulated" or spent.errors:
            metrics = {**metrics, "llm.calls": float(spent.calls), "llm.errors": float(spent.errors),
                       "llm.cache_hits": float(spent.cache_hits), "llm.cost_usd": spent.cost_usd}
        keep_output = case.expected.mode in ("exact", "contains", "human", "llm_judge")
        return BenchmarkResult(
            case_id=case.case_id, status=status, latency_ms=latency, token_cost=tokens,
            error=error, retries=int(spent.retries), metrics=metrics,
            llm_judge_score=judge_score, actual_output=output if keep_output else None,
            human_label=self.loaded.human_labels.get(case.case_id), evicted=evicted,
        )


# the control's flush logs, most recently used last: the variants of a sweep that
# runs in one process reuse them; beyond REFERENCE_CASES (a large suite) the
# oldest go and are replayed again when asked (deterministic, as in another process)
REFERENCE_CASES = 256
_REFERENCES: OrderedDict[str, list[Flush]] = OrderedDict()


def _remember_reference(key: str, flushes: list[Flush]) -> list[Flush]:
    _REFERENCES[key] = flushes
    _REFERENCES.move_to_end(key)
    while len(_REFERENCES) > REFERENCE_CASES:
        _REFERENCES.popitem(last=False)
    return flushes


def run_job(cfg: ExperimentConfig, job: JobSpec, out_dir: Path,
            progress: Callable[[int, int, str], None] | None = None,
            loaded: LoadedSuite | None = None, spend_ledger: Path | None = None) -> JobOutcome:
    """``spend_ledger``: the sweep's spend file, so ``llm.max_usd`` caps the
    whole sweep (default: one ledger in ``out_dir``, i.e. per job)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    loaded = loaded or load_suite(cfg.suite.path)
    started = datetime.now(UTC)
    pool = suite_cases(loaded.eval_cases, cfg.suite)  # a tuning study's split, if any
    cases = CaseList(loaded, [pool.ids[i] for i in
                              block_of(len(pool), cfg.block, cfg.cases_per_block, cfg.seed)])
    store = FeedbackStore(out_dir / "feedback.sqlite", fresh=True)
    with build_client(cfg.llm, seed=job.seed, cache_dir=cfg.llm.cache_dir,
                      ledger_path=spend_ledger or out_dir / "llm_spend.sqlite",
                      job_key=f"{job.variant}#r{job.repeat}") as llm:
        if llm.backend_name != "simulated":
            llm.check_models([cfg.model.scorer_id, cfg.model.main_id, cfg.model.judge_id])
        runner = _CaseRunner(cfg, job, loaded, llm, store)
        with llm.charged_to(runner.overhead):
            calibration = _calibrate(cfg, runner, loaded, out_dir)
        tally = CaseTally()
        with CaseLog(out_dir / CASES_FILE) as log:  # per-case results go to disk as they come
            for i, (case, result) in enumerate(in_case_order(  # several in flight: run/inflight.py
                    runner, cases, lambda part, case: part.run_case(case, calibration))):
                store.flush()  # the case's feedback is on disk before its result
                log.append(result)
                tally.add(result, case.expected.mode)
                if progress:
                    progress(i + 1, len(cases), case.case_id)
        llm_metrics = llm.accounting.as_metrics()
        overhead = runner.overhead.snapshot()
        llm_metrics.update({"llm.overhead.calls": float(overhead.calls),
                            "llm.overhead.retries": float(overhead.retries),
                            "llm.overhead.errors": float(overhead.errors),
                            "llm.overhead.cost_usd": overhead.cost_usd,
                            "llm.overhead.tokens": float(overhead.input_tokens + overhead.output_tokens)})
    summary = tally.summary()
    metrics = tally.run_metrics(summary)
    metrics.update(llm_metrics)
    if runner.probe_rows:
        (out_dir / PROBE_TABLE).write_text(json.dumps(runner.probe_rows, indent=1))
        metrics.update(run_probe_metrics(runner.probe_rows, cfg.judge))
    rates = stored_exclusion_rates(store)
    if rates.overall.n:
        metrics.update(rates.as_metrics())
    if calibration is not None:
        metrics["calibration.candidates"] = float(calibration.n_candidates)
        metrics["calibration.guidance_lines"] = float(len(calibration.guidance))
    store.close()
    missing = undeclared(set(metrics) | set(tally.columns))
    if missing:
        raise RunError(f"metric(s) {missing} have no declared spec (direction, unit, meaning); "
                       "declare them with silas_exp.metrics.registry.register_metric")
    run = BenchmarkRun(
        run_id=uuid.uuid4().hex, suite_id=loaded.suite.suite_id, started_at=started,
        completed_at=datetime.now(UTC), config_snapshot=cfg.model_dump(mode="json"),
        results=[], summary=summary, variant=job.variant, repeat=job.repeat, seed=job.seed,
    )  # the per-case results are in out_dir/results.jsonl (JobOutcome.results())
    write_failures(out_dir, runner.failures.records())
    return JobOutcome(run, metrics, loaded.suite.version, out_dir / CASES_FILE, len(tally),
                      out_dir / "feedback.sqlite", calibration, notes=runner.errors,
                      failures=runner.failures.records())
