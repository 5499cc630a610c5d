"""Run-level summary and metrics from per-case results seen one at a time.

The runner streams every ``BenchmarkResult`` to disk (``silas_exp.records``)
and keeps here only what the §20.2 summary and the run metrics need: a few
numbers per case (status, latency, token cost, judge score, and one float
per per-case metric). The figures are computed exactly as from the whole
list of results.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from silas_exp.schema.benchmark import BenchmarkResult, BenchmarkSummary


class CaseTally:
    def __init__(self) -> None:
        self.statuses: list[str] = []
        self.latency = array("d")
        self.token_cost: list[int] = []
        self.judged: list[float] = []
        self.failures: dict[str, int] = {}
        self.columns: dict[str, array] = {}  # metric -> one value per case (NaN: not reported)

    def __len__(self) -> int:
        return len(self.statuses)

    def add(self, r: BenchmarkResult, mode: str) -> None:
        """Count one case; ``mode`` is its ``expected.mode``."""
        if r.status == "error":
            self._count(f"error:{(r.error or 'error').split(':')[0]}")
        if r.metrics.get("llm.errors"):
            self._count("llm_error", int(r.metrics["llm.errors"]))
        if r.status == "fail":
            self._count(f"fail:{mode}")
        if r.status == "skipped":
            self._count("skipped")
        if r.llm_judge_score is not None:
            self.judged.append(r.llm_judge_score)
        n = len(self)
        for key in r.metrics.keys() - self.columns.keys():
            self.columns[key] = array("d", [math.nan] * n)
        for key, col in self.columns.items():
            col.append(r.metrics.get(key, math.nan))
        self.statuses.append(r.status)
        self.latency.append(r.latency_ms)
        self.token_cost.append(r.token_cost)

    def _count(self, kind: str, by: int = 1) -> None:
        self.failures[kind] = self.failures.get(kind, 0) + by

    def summary(self) -> BenchmarkSummary:
        lat = np.array(self.latency) if len(self) else np.zeros(1)
        decided = [s for s in self.statuses if s != "skipped"]  # errors count as not passed
        return BenchmarkSummary(
            pass_rate=float(np.mean([s == "pass" for s in decided])) if decided else 0.0,
            mean_latency_ms=float(lat.mean()), p95_latency_ms=float(np.percentile(lat, 95)),
            total_token_cost=int(sum(self.token_cost)),
            mean_quality_score=float(np.mean(self.judged)) if self.judged else None,
            failure_categories=dict(self.failures),
        )

    def run_metrics(self, summary: BenchmarkSummary) -> dict[str, float]:
        """Run-level metrics: mean over the completed cases of every per-case metric
        (errored cases count in ``summary.error_rate`` and as not passed; the counts
        say how many cases the means rest on), plus the §20.2 summary figures."""
        out: dict[str, float] = {}
        for key in sorted(self.columns):
            vals = np.array(self.columns[key], dtype=float)
            if np.any(~np.isnan(vals)):
                out[key] = float(np.nanmean(vals))
        s = self.statuses
        out.update({
            "summary.pass_rate": summary.pass_rate,
            "summary.error_rate": float(np.mean([x == "error" for x in s])) if s else 0.0,
            "summary.mean_latency_ms": summary.mean_latency_ms,
            "summary.p95_latency_ms": summary.p95_latency_ms,
            "summary.total_token_cost": float(summary.total_token_cost),
            "summary.cases": float(len(s)),
            "summary.cases_completed": float(sum(x not in ("error", "timeout") for x in s)),
            "summary.skipped": float(sum(x == "skipped" for x in s)),
        })
        return out
