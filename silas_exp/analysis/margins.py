"""Relative margins fixed once: a metric whose margin is a share of the
control's mean (tokens per served need: 5 %) gets one margin per study, in
its units, used by every look, the final report and every re-read of it.

Read from the control at each look, the margin would move with the cases each
look has (471.1 at a look, 469.5 in the report for the same arm), so a verdict
could change between the look that stopped an arm and the report that names
it. It is fixed from the baseline's logged results when the study's control is
the suite's baseline (the same configuration, every case it logged), else from
the control's mean at the study's first look, and recorded with the study's
state (``adaptive.json``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import numpy as np

from silas_exp.analysis.data import NOT_COMPLETED, SweepData
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.metrics.registry import all_specs, spec


def relative_metrics() -> list[str]:
    """Every per-case metric whose declared margin is relative to the control's mean."""
    return [s.key for s in all_specs() if s.margin_kind == "relative" and s.margin is not None
            and s.per_case and not s.key.endswith(".*")]


def margins_from_means(means: dict[str, float], settings: AnalysisSettings | None = None
                       ) -> dict[str, float]:
    """Each relative metric's margin in its units from the control's means,
    except those ``settings.margins`` gives."""
    given = settings.margins if settings else {}
    return {m: spec(m).margin_for(v) for m, v in means.items()
            if m not in given and not math.isnan(v)}


def control_means(data: SweepData, control: str, metrics: Iterable[str]) -> dict[str, float]:
    """The control's mean of each metric: over the cases it completed, each
    case's mean over its repeats."""
    out = {}
    for metric in metrics:
        values = data.case_values(control, metric)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a case no repeat completed
            per_case = np.nanmean(values, axis=1) if values.size else np.array([])
        per_case = per_case[~np.isnan(per_case)]
        if len(per_case):
            out[metric] = float(per_case.mean())
    return out


def baseline_means(jobs: Iterable, metrics: Iterable[str]) -> dict[str, float]:
    """A baseline's logged mean of each metric: over the cases it completed,
    each case's mean over the repeats that completed it. ``jobs``: the
    baseline record's jobs (``BaselineJob``: ``results`` of ``BenchmarkResult``)."""
    per_case: dict[str, dict[str, list[float]]] = {}
    for job in jobs:
        for r in job.results:
            if r.status in NOT_COMPLETED:
                continue
            for metric in metrics:
                value = r.metrics.get(metric)
                if value is not None and not math.isnan(value):
                    per_case.setdefault(metric, {}).setdefault(r.case_id, []).append(value)
    return {m: float(np.mean([np.mean(v) for v in cases.values()]))
            for m, cases in per_case.items()}


def margins_from_baseline(record, settings: AnalysisSettings | None = None) -> dict[str, float]:
    """The relative margins a check against ``record`` (a ``BaselineRecord``)
    decides with, fixed from its logged results: pass them as
    ``AnalysisSettings.margins`` so every reading of the check uses the same."""
    return margins_from_means(baseline_means(record.jobs, relative_metrics()), settings)
