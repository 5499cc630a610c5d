"""Pure data for analysis: jobs of a sweep with their per-case metrics, loaded
from a sweep folder (result.json files) or from MLflow (result.json artifacts)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from silas_exp.errors import AnalysisError


@dataclass
class JobData:
    variant: str
    repeat: int
    metrics: dict[str, float]
    cases: dict[str, dict[str, float]]  # case_id -> per-case metrics (+ pass, latency_ms, judge)
    outputs: dict[str, str] = field(default_factory=dict)  # case_id -> actual_output
    run_id: str | None = None
    status: dict[str, str] = field(default_factory=dict)  # case_id -> pass/fail/error


@dataclass
class SweepData:
    sweep_id: str
    command: str
    jobs: list[JobData]

    def variants(self) -> list[str]:
        return sorted({j.variant for j in self.jobs})

    def jobs_of(self, variant: str) -> dict[int, JobData]:
        return {j.repeat: j for j in self.jobs if j.variant == variant}

    def matrix(self, variant: str, control: str, metric: str) -> tuple[list[str], np.ndarray]:
        """Paired differences variant − control: shared cases × shared repeats (NaN = missing)."""
        a, b = self.jobs_of(variant), self.jobs_of(control)
        repeats = sorted(set(a) & set(b))
        cases = sorted(set.intersection(*[set(a[r].cases) & set(b[r].cases) for r in repeats])) \
            if repeats else []
        m = np.full((len(cases), len(repeats)), np.nan)
        for j, r in enumerate(repeats):
            for i, c in enumerate(cases):
                va, vb = a[r].cases[c].get(metric, math.nan), b[r].cases[c].get(metric, math.nan)
                m[i, j] = va - vb
        return cases, m

    def run_values(self, variant: str, metric: str) -> list[float]:
        return [j.metrics.get(metric, math.nan) for j in sorted(self.jobs_of(variant).values(),
                                                                   key=lambda j: j.repeat)]


def job_from_result(data: dict[str, Any], run_id: str | None = None) -> JobData:
    cases, outputs, status = {}, {}, {}
    for r in (data.get("run") or {}).get("results", []):
        row = dict(r.get("metrics", {}))
        row["summary.pass"] = 1.0 if r["status"] == "pass" else 0.0
        row["latency_ms"] = float(r["latency_ms"])
        if r.get("llm_judge_score") is not None:
            row["llm_judge_score"] = float(r["llm_judge_score"])
        cases[r["case_id"]] = row
        outputs[r["case_id"]] = r.get("actual_output") or ""
        status[r["case_id"]] = r["status"]
    return JobData(data["variant"], int(data["repeat"]), dict(data.get("metrics", {})), cases,
                   outputs, run_id, status)


def load_sweep_dir(sweep_dir: Path) -> SweepData:
    from silas_exp.tracking.jobs import SweepInfo

    info = SweepInfo.read(sweep_dir)
    jobs = []
    for path in sorted(sweep_dir.glob("*/result.json")):
        data = json.loads(path.read_text())
        if data.get("status") == "finished" and data.get("run"):
            jobs.append(job_from_result(data))
    if not jobs:
        raise AnalysisError(f"{sweep_dir}: no finished job with results")
    return SweepData(info.sweep_id if info else sweep_dir.name, info.command if info else "", jobs)


def latest_per_job(runs: Iterable[Any]) -> list[Any]:
    """Keep the newest FINISHED run per (variant, repeat) — resumed sweeps may hold several."""
    best: dict[tuple[str, str], Any] = {}
    for r in runs:
        key = (r.data.tags.get("silas.variant", ""), r.data.tags.get("silas.repeat", ""))
        if key not in best or r.info.start_time > best[key].info.start_time:
            best[key] = r
    return list(best.values())
