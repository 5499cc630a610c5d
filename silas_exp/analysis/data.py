"""Pure data for analysis: jobs of a sweep with their per-case metrics, loaded
from a sweep folder (job records and their per-case results, ``silas_exp.records``)
or from MLflow (the same files as artifacts)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from silas_exp.analysis.baseline import CONTROL_FILE, ControlArm
from silas_exp.errors import AnalysisError
from silas_exp.records import JobResult, read_manifest, sweep_job_results
from silas_exp.schema.benchmark import BenchmarkResult
from silas_exp.schema.runs import LoggedRun

NOT_COMPLETED = ("error", "timeout")
# per-case outcomes compared over every case, errored ones included; every
# other metric is compared on the cases both jobs completed
OUTCOME_METRICS = ("summary.pass", "summary.error")
BASELINE = "baseline"  # analysis.control=baseline: the promoted baseline's arm of the sweep


@dataclass
class JobData:
    variant: str
    repeat: int
    metrics: dict[str, float]
    cases: dict[str, dict[str, float]]  # case_id -> per-case metrics (+ pass, latency_ms, judge)
    outputs: dict[str, str] = field(default_factory=dict)  # case_id -> actual_output
    run_id: str | None = None
    status: dict[str, str] = field(default_factory=dict)  # case_id -> pass/fail/error/...
    evictions: dict[str, list[str]] = field(default_factory=dict)  # case_id -> eviction order

    def completed(self, case_id: str) -> bool:
        return self.status.get(case_id, "error") not in NOT_COMPLETED


@dataclass
class SweepData:
    sweep_id: str
    command: str
    jobs: list[JobData]
    swept_keys: list[str] = field(default_factory=list)
    added_control: str | None = None  # a control variant the sweep added itself
    control_arm: ControlArm | None = None  # the promoted baseline's configuration, run as a variant
    # metric -> {gap, separation, sensitive}: the suite's stored oracle-vs-random figures
    sensitivity: dict[str, dict] | None = None
    # the study's simulated twin: every arm replayed with the simulated model on every
    # case of the pool (free); its per-case differences correct the paid ones
    twin: SweepData | None = None
    # the promoted baseline's logged per-case values (case -> metric -> mean over its
    # repeats) on the pool: a second covariate where it helps
    history: dict[str, dict[str, float]] | None = None

    def variants(self) -> list[str]:
        return sorted({j.variant for j in self.jobs})

    def jobs_of(self, variant: str) -> dict[int, JobData]:
        return {j.repeat: j for j in self.jobs if j.variant == variant}

    def _pairs(self, variant: str, control: str) -> list[tuple[int, JobData, JobData]]:
        a = self.jobs_of(variant)
        b = self.jobs_of(control)
        return [(r, a[r], b[r]) for r in sorted(set(a) & set(b))]

    def matrix(self, variant: str, control: str, metric: str) -> tuple[list[str], np.ndarray]:
        """Paired differences variant − control: shared cases × shared repeats
        (NaN = missing). Outside ``OUTCOME_METRICS`` a pair counts only where
        both jobs completed the case: an errored case cannot drop out of one
        side's mean and flatter it (the error gate counts errors instead)."""
        cases, a, b = self.paired(variant, control, metric)
        return cases, a - b

    def paired(self, variant: str, control: str, metric: str
               ) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The variant's and the control's values on the same (case, repeat)
        pairs: the cases both ran in some shared repeat × the shared repeats,
        NaN in both where either is missing (so their means differ exactly by
        the paired difference). A case may have fewer repeats than another
        (``repeats=auto`` gives the noisy cases more): its row holds the
        repeats it has."""
        pairs = self._pairs(variant, control)
        cases = sorted(set().union(*[set(a.cases) & set(b.cases) for _, a, b in pairs]))
        va, vb = np.full((len(cases), len(pairs)), np.nan), np.full((len(cases), len(pairs)), np.nan)
        outcome = metric in OUTCOME_METRICS
        for j, (_, a, b) in enumerate(pairs):
            for i, c in enumerate(cases):
                if c not in a.cases or c not in b.cases:
                    continue  # not run in this repeat: a missing pair, never a failure
                if not outcome and not (a.completed(c) and b.completed(c)):
                    continue
                va[i, j], vb[i, j] = a.cases[c].get(metric, math.nan), b.cases[c].get(metric, math.nan)
        missing = np.isnan(va) | np.isnan(vb)
        va[missing], vb[missing] = np.nan, np.nan
        return cases, va, vb

    def case_values(self, variant: str, metric: str) -> np.ndarray:
        """cases × repeats of one variant (NaN = missing or not completed)."""
        jobs = [j for _, j in sorted(self.jobs_of(variant).items())]
        cases = sorted(set().union(*[j.cases for j in jobs])) if jobs else []
        out = np.full((len(cases), len(jobs)), np.nan)
        for j, job in enumerate(jobs):
            for i, c in enumerate(cases):
                if c in job.cases and (metric in OUTCOME_METRICS or job.completed(c)):
                    out[i, j] = job.cases[c].get(metric, math.nan)
        return out

    def case_means(self, variant: str, metric: str) -> dict[str, float]:
        """Each case's mean over the variant's repeats (NaN-free), by case id."""
        jobs = list(self.jobs_of(variant).values())
        out: dict[str, float] = {}
        for c in set().union(*[j.cases for j in jobs]) if jobs else ():
            vals = [j.cases[c].get(metric, math.nan) for j in jobs if c in j.cases
                    and (metric in OUTCOME_METRICS or j.completed(c))]
            vals = [v for v in vals if not math.isnan(v)]
            if vals:
                out[c] = sum(vals) / len(vals)
        return out

    def run_values(self, variant: str, metric: str) -> list[float]:
        return [j.metrics.get(metric, math.nan) for j in sorted(self.jobs_of(variant).values(),
                                                                   key=lambda j: j.repeat)]


def case_outcomes(status: str) -> dict[str, float]:
    """Per-case §20.2 outcome metrics: an errored case has not passed (it counts,
    never vanishes); a skipped case was not judged (NaN)."""
    return {"summary.pass": math.nan if status == "skipped" else float(status == "pass"),
            "summary.error": float(status in NOT_COMPLETED)}


def job_data(variant: str, repeat: int, metrics: dict[str, float],
             results: Iterable[BenchmarkResult], run_id: str | None = None) -> JobData:
    """A job's data from its per-case results (read one at a time)."""
    cases, outputs, status, evictions = {}, {}, {}, {}
    for r in results:
        row = dict(r.metrics)
        row.update(case_outcomes(r.status))
        row["latency_ms"] = float(r.latency_ms)
        row["token_cost"] = float(r.token_cost)
        if r.llm_judge_score is not None:
            row["llm_judge_score"] = float(r.llm_judge_score)
        cases[r.case_id] = row
        outputs[r.case_id] = r.actual_output or ""
        status[r.case_id] = r.status
        if r.evicted is not None:
            evictions[r.case_id] = list(r.evicted)
    return JobData(variant, repeat, dict(metrics), cases, outputs, run_id, status, evictions)


def job_from_result(result: JobResult, run_id: str | None = None,
                    folder: Path | None = None) -> JobData:
    """A job's data from its record; ``folder``: the job folder holding its
    per-case results file."""
    return job_data(result.variant, result.repeat, result.metrics, result.cases(folder), run_id)


def merge_blocks(jobs: list[JobData]) -> list[JobData]:
    """One ``JobData`` per (variant, repeat): the jobs of a sequential study
    that ran the same variant and repeat on different blocks of cases become
    one, holding every case. Its run-level metrics are recomputed: a metric
    the cases carry is their mean (as a job computes it), a sum (``llm.*``
    spend and counts) is summed, anything else is the case-weighted mean."""
    groups: dict[tuple[str, int], list[JobData]] = {}
    for j in jobs:
        groups.setdefault((j.variant, j.repeat), []).append(j)
    out = []
    for (variant, repeat), parts in groups.items():
        if len(parts) == 1:
            out.append(parts[0])
            continue
        merged = JobData(variant, repeat, {}, {}, run_id=parts[0].run_id)
        for p in parts:
            merged.cases.update(p.cases)
            merged.outputs.update(p.outputs)
            merged.status.update(p.status)
            merged.evictions.update(p.evictions)
        weights = [len(p.cases) for p in parts]
        for key in set().union(*[p.metrics for p in parts]):
            values = [p.metrics.get(key, math.nan) for p in parts]
            per_case = [row[key] for row in merged.cases.values() if key in row]
            if per_case:
                merged.metrics[key] = float(np.nanmean(per_case)) if not all(
                    math.isnan(v) for v in per_case) else math.nan
            elif key.startswith("llm."):
                merged.metrics[key] = float(np.nansum(values))
            else:
                merged.metrics[key] = float(np.average(values, weights=weights))
        out.append(merged)
    return out


TWIN_FILE = "twin.json"  # a paid study's simulated twin (silas_exp.run.twin.write_study_twin)


def write_twin_file(sweep_dir: Path, jobs: list[JobData]) -> None:
    """The twin's per-case results (one record per arm and repeat), whole or not at all."""
    from silas_exp.records import write_json_atomic

    write_json_atomic(sweep_dir / TWIN_FILE, {"version": 1, "jobs": [
        {"variant": j.variant, "repeat": j.repeat, "cases": j.cases, "status": j.status}
        for j in jobs]})


def read_twin_file(sweep_dir: Path) -> SweepData | None:
    path = sweep_dir / TWIN_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return SweepData("twin", "", [JobData(j["variant"], j["repeat"], {}, j["cases"],
                                          status=j["status"]) for j in data["jobs"]])


def load_sweep_dir(sweep_dir: Path, suite_dir: Path | None = None,
                   keep: Callable[[JobResult], bool] | None = None) -> SweepData:
    """Finished jobs of a sweep folder (``keep``: only the jobs it keeps), the
    control the sweeper added or ran from the promoted baseline
    (``control.json``); with ``suite_dir``, the suite's stored sensitivity figures."""
    info = read_manifest(sweep_dir)
    jobs = merge_blocks([job_from_result(r, folder=folder) for folder, r in sweep_job_results(sweep_dir)
                         if r.finished and r.run is not None and (keep is None or keep(r))])
    if not jobs:
        raise AnalysisError(f"{sweep_dir}: no finished job with results")
    added, arm = None, None
    if (sweep_dir / CONTROL_FILE).is_file():
        control = json.loads((sweep_dir / CONTROL_FILE).read_text())
        added = ",".join(f"{k}={v}" for k, v in control["added"].items()) or None
        arm = ControlArm.from_json(control["baseline"]) if control.get("baseline") else None
    twin = read_twin_file(sweep_dir)
    return SweepData(info.sweep_id if info else sweep_dir.name, info.command if info else "", jobs,
                     list(info.swept_keys) if info else [], added_control=added, control_arm=arm,
                     sensitivity=load_sensitivity(suite_dir) if suite_dir else None,
                     twin=twin, history=baseline_history(suite_dir) if twin and suite_dir else None)


def baseline_history(suite_dir: Path) -> dict[str, dict[str, float]] | None:
    """The suite's promoted baseline's logged per-case values, each case's mean over
    its repeats (case -> metric -> value): a paid study's second covariate."""
    from silas_exp.baselines import read_baseline

    try:
        record = read_baseline(suite_dir)
    except Exception:  # a broken record is reported where the baseline is used, not here
        return None
    if record is None:
        return None
    sums: dict[str, dict[str, list[float]]] = {}
    for job in record.jobs:
        for case_id, row in job_data(record.name, job.repeat, job.metrics, job.results).cases.items():
            for metric, value in row.items():
                if isinstance(value, float | int) and not math.isnan(value):
                    sums.setdefault(case_id, {}).setdefault(metric, []).append(float(value))
    return {c: {m: sum(v) / len(v) for m, v in row.items()} for c, row in sums.items()}


SENSITIVITY_FILE = "sensitivity.json"  # in the suite folder: silas-exp sensitivity writes it


def load_sensitivity(suite_dir: Path) -> dict[str, dict] | None:
    path = Path(suite_dir) / SENSITIVITY_FILE
    if not path.is_file():
        return None
    try:
        return dict(json.loads(path.read_text())["metrics"])
    except (ValueError, KeyError, TypeError) as exc:
        raise AnalysisError(f"{path}: not readable ({exc}); write it again with `silas-exp "
                            "sensitivity SANITY_SWEEP --suite-dir ...`") from None


def latest_per_job(runs: Iterable[LoggedRun]) -> list[LoggedRun]:
    """Keep the newest FINISHED run per (variant, repeat, block) — resumed sweeps may hold several."""
    best: dict[tuple[str, str, str], LoggedRun] = {}
    for r in runs:
        key = (r.tags.get("silas.variant", ""), r.tags.get("silas.repeat", ""),
               r.tags.get("silas.block", "0"))
        if key not in best or r.start_time > best[key].start_time:
            best[key] = r
    return list(best.values())
