"""End-of-sweep summary from the jobs' records (``result.json``; works with or
without tracking): one row per variant, mean ± sd over its repeats."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from silas_exp.metrics.names import labelled
from silas_exp.metrics.numbers import num
from silas_exp.records import sweep_job_results

HEADLINE = (
    "context.retrieval_relevance",
    "ir.ndcg_at_10",
    "feedback.exclusion_auc",
    "context.tokens_per_served_need",
    "probe.overall",
    "summary.pass_rate",
    "llm.cost_usd",  # real spend, or
    "llm.cost_usd_simulated",  # what a simulated run's calls would have cost
)


@dataclass(frozen=True)
class JobRecord:
    variant: str
    repeat: int
    status: str  # finished | failed
    metrics: dict[str, float]
    error: str | None
    folder: Path
    block: int = 0


def read_job_records(sweep_dir: Path) -> list[JobRecord]:
    return [JobRecord(r.variant, r.repeat, r.status, r.metrics, r.error, folder, r.block)
            for folder, r in sweep_job_results(sweep_dir)]


def _fmt(values: Sequence[float]) -> str:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return "—"
    mean = float(np.mean(vals))
    if len(vals) < 2:
        return num(mean)
    return f"{num(mean)} ± {num(float(np.std(vals, ddof=1)))}"


def variant_table(records: Sequence[JobRecord], metrics: Sequence[str] = HEADLINE) -> str:
    """Markdown table: variant | n | metric (mean ± sd over repeats) ...; in a
    sequential study over blocks of cases, over its jobs (blocks × repeats).
    Each variant over its own cases: a sweep with an ablation prints the
    paired table instead (``analysis.pipeline.paired_table``)."""
    by_variant: dict[str, list[JobRecord]] = defaultdict(list)
    for r in records:
        by_variant[r.variant].append(r)
    # headline metrics no job reports (probe scores in an eviction sweep) get no column
    metrics = [m for m in metrics if any(m in r.metrics for r in records)] or list(metrics)
    unit = "jobs (blocks × repeats)" if any(r.block for r in records) else "repeats"
    header = ["variant", unit] + [labelled(m) for m in metrics]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for variant in sorted(by_variant):
        jobs = by_variant[variant]
        ok = [j for j in jobs if j.status == "finished"]
        n = f"{len(ok)}/{len(jobs)}"
        cells = [_fmt([j.metrics.get(m, math.nan) for j in ok]) for m in metrics]
        lines.append("| " + " | ".join([variant, n, *cells]) + " |")
    return "\n".join(lines)


def failures(records: Sequence[JobRecord]) -> list[str]:
    return [f"{r.variant}#r{r.repeat}{f' b{r.block}' if r.block else ''} ({r.folder}): {r.error}"
            for r in records if r.status != "finished"]
