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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from silas_exp.config import ExperimentConfig
from silas_exp.context.replay import NeedOracle
from silas_exp.context.stats import ReplayStats
from silas_exp.data.suites.blocks import block_of
from silas_exp.data.suites.expected import judge_case
from silas_exp.data.suites.loader import (
    CaseList,
    LoadedSuite,
    load_suite,
    probe_plan,
    replay_size,
    session_case,
)
from silas_exp.errors import BudgetExceeded, RunError, SilasExpError, SuiteError
from silas_exp.eviction.base import STRATEGIES
from silas_exp.feedback.calibration import Calibration, stored_exclusion_rates
from silas_exp.metrics.classification import roc_auc
from silas_exp.metrics.context import case_metrics
from silas_exp.metrics.names import labelled_cost
from silas_exp.metrics.plugins import METRICS, case_metric_functions
from silas_exp.metrics.registry import undeclared
from silas_exp.probes.judge import JUDGES, build_judge
from silas_exp.probes.pipeline import run_probe_case
from silas_exp.probes.report import PROBE_TABLE, run_probe_metrics
from silas_exp.records import CASES_FILE, CaseLog, case_results
from silas_exp.run.assemble import JobParts, JobSpec, make_job, open_job
from silas_exp.run.calibration import calibrate_job
from silas_exp.run.case_replay import replay_case
from silas_exp.run.failures import FailureLog
from silas_exp.run.failures import write as write_failures
from silas_exp.run.inflight import in_case_order
from silas_exp.run.references import References, is_control, replay_ahead, scores_candidates
from silas_exp.run.tally import CaseTally
from silas_exp.schema.benchmark import BenchmarkCase, BenchmarkResult, BenchmarkRun
from silas_exp.scorers.base import SCORERS
from silas_exp.tune.split import suite_cases

__all__ = ["JobOutcome", "JobSpec", "make_job", "run_job"]

MAX_EVICTED_LOGGED = 2000  # eviction order kept per case (for shadow diffs)


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


class _CaseRunner:
    """Runs a job's cases one by one with the job's parts; keeps what the job
    reports besides its results (errors, probe rows, failures per cause)."""

    def __init__(self, parts: JobParts) -> None:
        cfg = parts.cfg
        self.parts, self.cfg, self.loaded, self.llm = parts, cfg, parts.loaded, parts.llm
        self.store = parts.store  # cases in flight write theirs here, in case order (run/inflight.py)
        self.references = References(parts)
        self.errors: list[str] = []
        self.probe_rows: list[dict] = []
        self.plugin_metrics = case_metric_functions(cfg.metrics.plugins)
        self.failures = FailureLog([
            ("scorer", SCORERS.kind_of(cfg.scorer)), ("eviction strategy", STRATEGIES.kind_of(cfg.eviction)),
            ("judge", JUDGES.kind_of(cfg.judge)),
            *(("metric", METRICS.get(name)) for name in cfg.metrics.plugins)])

    def probe_case(self, case: BenchmarkCase, calibration: Calibration | None) -> dict[str, float]:
        """A compression-probe case (``expected.mode == "llm_judge"``)."""
        cfg = self.cfg
        sc = session_case(self.loaded, case, cfg.budget)
        plan = probe_plan(self.loaded, case)
        namespace = f"{self.parts.job.namespace}/{case.case_id}"
        strategy = self.parts.case_parts(sc, namespace, cfg.scorer, calibration, NeedOracle(sc.truth),
                                         ReplayStats()).strategy
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
        if scores_candidates(self.cfg) and is_control(self.cfg):
            # the control's own proposals are the shared set: record them, score them as made
            stats, oracle, _ = replay_case(self.parts, case, self.cfg.scorer, calibration, record=True)
            self.references.share(case, stats.flush_log or [])
            # candidate_scores holds the scores of these same proposals, in order
            kept = [k for f in stats.flush_log or () for k in f.kept]
            shared = {"feedback.exclusion_auc": roc_auc(stats.candidate_scores, kept)
                      if kept else math.nan,
                      "feedback.reference_flushes": float(len(stats.flush_log or ()))}
        else:
            reference = self.references.of(case) if scores_candidates(self.cfg) else None
            stats, oracle, shared = replay_case(self.parts, case, self.cfg.scorer, calibration, reference)
        metrics = case_metrics(stats, oracle, self.cfg.metrics.horizon)
        metrics.update(shared)
        for key, compute in self.plugin_metrics.items():
            metrics[key] = float(compute(stats, oracle, self.cfg.metrics.horizon))
        evicted = [cid for _, cid in stats.evictions][:MAX_EVICTED_LOGGED]
        return metrics, "\n".join(stats.retained), evicted, None

    def run_case(self, case: BenchmarkCase, calibration: Calibration | None) -> BenchmarkResult:
        if case.case_id in self.loaded.unreplayable:  # valid §20.2, nothing to replay (loader)
            return BenchmarkResult(case_id=case.case_id, status="skipped", latency_ms=0.0,
                                   token_cost=0, error=self.loaded.unreplayable[case.case_id])
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
            metrics = {**metrics, **labelled_cost(
                {"llm.calls": float(spent.calls), "llm.errors": float(spent.errors),
                 "llm.cache_hits": float(spent.cache_hits), "llm.cost_usd": spent.cost_usd},
                self.llm.backend_name == "simulated")}
        keep_output = case.expected.mode in ("exact", "contains", "human", "llm_judge")
        return BenchmarkResult(
            case_id=case.case_id, status=status, latency_ms=latency, token_cost=tokens,
            error=error, retries=int(spent.retries), metrics=metrics,
            llm_judge_score=judge_score, actual_output=output if keep_output else None,
            human_label=self.loaded.human_labels.get(case.case_id), evicted=evicted,
        )


def run_job(cfg: ExperimentConfig, job: JobSpec, out_dir: Path,
            progress: Callable[[int, int, str], None] | None = None,
            loaded: LoadedSuite | None = None, spend_ledger: Path | None = None,
            alone: bool = True, runs: Callable[[str], bool] | None = None) -> JobOutcome:
    """``spend_ledger``: the sweep's spend file, so ``llm.max_usd`` caps the
    whole sweep (default: one ledger in ``out_dir``, i.e. per job).
    ``alone``: no other job (a sweep's control, perhaps in another worker at
    the same time) replays this job's references. Then its longest cases start
    first and a variant's references are replayed during its calibration
    (run/references.py ``replay_ahead``). Not in a sweep: there a variant that
    reached a case's references before its control job would answer some of
    the control's own calls from the response cache, and the control's
    ``llm.calls`` would depend on the timing. ``runs``: which of its block's
    cases the job runs (a ``repeats=auto`` study's allocation,
    ``AdaptiveState.runs``); default every one."""
    out_dir.mkdir(parents=True, exist_ok=True)
    loaded = loaded or load_suite(cfg.suite.path)
    started = datetime.now(UTC)
    pool = suite_cases(loaded.eval_cases, cfg.suite)  # a tuning study's split, if any
    cases = CaseList(loaded, [pool.ids[i] for i in
                              block_of(len(pool), cfg.block, cfg.cases_per_block, cfg.seed)
                              if runs is None or runs(pool.ids[i])])
    with open_job(cfg, job, out_dir, loaded, spend_ledger) as parts:
        store, llm = parts.store, parts.llm
        runner = _CaseRunner(parts)
        size = lambda case: replay_size(loaded, case, cfg.budget)  # noqa: E731 - longest first
        # the control's reference replays do not wait for the calibration, nor the
        # cases for them: a case follows its reference's replay turn by turn
        ahead = replay_ahead(parts, cases, size) if alone else None
        tally = CaseTally()
        try:
            with llm.charged_to(parts.overhead):
                calibration = calibrate_job(parts, out_dir)
            with CaseLog(out_dir / CASES_FILE) as log:  # per-case results go to disk as they come
                for i, (case, result) in enumerate(in_case_order(  # several in flight: run/inflight.py
                        runner, cases, lambda part, case: part.run_case(case, calibration),
                        size=size if alone else None)):
                    store.flush()  # the case's feedback is on disk before its result
                    log.append(result)
                    tally.add(result, case.expected.mode)
                    if progress:
                        progress(i + 1, len(cases), case.case_id)
        finally:
            if ahead is not None:
                ahead.join()
        llm_metrics = llm.accounting.as_metrics()
        overhead = parts.overhead.snapshot()
        llm_metrics.update({"llm.overhead.calls": float(overhead.calls),
                            "llm.overhead.retries": float(overhead.retries),
                            "llm.overhead.errors": float(overhead.errors),
                            "llm.overhead.cost_usd": overhead.cost_usd,
                            "llm.overhead.tokens": float(overhead.input_tokens + overhead.output_tokens)})
    summary = tally.summary()
    metrics = tally.run_metrics(summary)
    metrics.update(labelled_cost(llm_metrics, llm.backend_name == "simulated"))
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
