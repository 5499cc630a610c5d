"""Ablation statistics (§19.5, §20.6): each variant against the control, per
metric, on paired per-case differences that respect clustering of repeats."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from silas_exp.analysis.data import SweepData
from silas_exp.errors import AnalysisError
from silas_exp.metrics.names import higher_is_better
from silas_exp.stats import (
    Verdict,
    benjamini_hochberg,
    cluster_bootstrap_ci,
    cohens_dz,
    holm,
    may_ship,
    paired_permutation,
    paired_wilcoxon,
    required_n_paired,
    sprt_run,
    verdict,
)

DEFAULT_METRICS = (
    "context.retrieval_relevance", "ir.ndcg_at_10", "context.tokens_per_served_need",
    "feedback.exclusion_auc", "feedback.exclusion_rate", "summary.pass", "context.re_retrievals",
)
DEFAULT_GATED = ("context.retrieval_relevance", "ir.ndcg_at_10", "context.tokens_per_served_need",
                 "summary.pass")


@dataclass
class Comparison:
    variant: str
    metric: str
    mean: float
    sd: float
    delta: float
    ci_low: float
    ci_high: float
    p_perm: float
    p_wilcoxon: float
    p_adjusted: float
    dz: float
    n_cases: int
    n_repeats: int
    n_needed: int | None
    verdict: Verdict
    sprt: str | None = None


@dataclass
class AblationResult:
    sweep_id: str
    command: str
    control: str
    control_reason: str
    metrics: list[str]
    gated: list[str]
    correction: str
    control_summary: dict[str, tuple[float, float]]
    comparisons: list[Comparison] = field(default_factory=list)
    ship: dict[str, tuple[bool, str]] = field(default_factory=dict)

    def table(self, metric: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.metric == metric]


def pick_control(data: SweepData, control: str | None) -> tuple[str, str]:
    variants = data.variants()
    if control:
        if control not in variants:
            raise AnalysisError(f"control {control!r} is not a variant of sweep {data.sweep_id}; "
                                f"variants: {variants}")
        return control, "given with --control"
    for v in variants:
        if v.endswith("scorer=heuristic") or v == "scorer=heuristic":
            return v, "the heuristic-only control of §19.5"
    return variants[0], "no heuristic variant in the sweep: first variant alphabetically"


RUN_METRIC = {"summary.pass": "summary.pass_rate"}  # per-case name -> run-level name


def _mean_sd(values: list[float]) -> tuple[float, float]:
    v = np.array([x for x in values if not math.isnan(x)])
    if len(v) == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else math.nan


def ablation(data: SweepData, control: str | None = None, metrics=DEFAULT_METRICS,
             gated=DEFAULT_GATED, correction: str = "holm", alpha: float = 0.05,
             n_resamples: int = 1000, seed: int = 0, use_sprt: bool = False,
             mde: float | None = None) -> AblationResult:
    control, reason = pick_control(data, control)
    variants = [v for v in data.variants() if v != control]
    if not variants:
        raise AnalysisError(f"sweep {data.sweep_id} has only the control variant {control!r}")
    result = AblationResult(data.sweep_id, data.command, control, reason, list(metrics), list(gated),
                            correction, {})
    for metric in metrics:
        run_metric = RUN_METRIC.get(metric, metric)
        result.control_summary[metric] = _mean_sd(data.run_values(control, run_metric))
        rows = []
        for variant in variants:
            cases, m = data.matrix(variant, control, metric)
            if len(cases) == 0 or np.all(np.isnan(m)):
                continue
            m = m[~np.all(np.isnan(m), axis=1)]  # cases where the metric never applied
            if len(m) == 0:
                continue
            per_case = np.nanmean(m, axis=1)
            ci = cluster_bootstrap_ci(m, n_resamples=n_resamples, seed=seed)
            perm = paired_permutation(per_case, seed=seed)
            sd = float(np.std(per_case, ddof=1)) if len(per_case) > 1 else math.nan
            target = mde if mde is not None else ci.estimate
            mean, spread = _mean_sd(data.run_values(variant, run_metric))
            sprt = None
            if use_sprt and sd > 0 and target:
                sprt = sprt_run(per_case, delta=target, sigma=sd).decision
            rows.append(Comparison(
                variant, metric, mean, spread, ci.estimate, ci.low, ci.high, perm.pvalue,
                paired_wilcoxon(per_case).pvalue, math.nan, cohens_dz(per_case), len(cases),
                m.shape[1], required_n_paired(sd, target) if sd > 0 else None,
                Verdict.NO_DIFFERENCE, sprt))
        adjust = holm if correction == "holm" else benjamini_hochberg
        adjusted = adjust([r.p_perm for r in rows]) if rows else []
        for r, p in zip(rows, adjusted, strict=True):
            r.p_adjusted = float(p)
            r.verdict = verdict(r.ci_low, r.ci_high, r.p_adjusted, higher_is_better(metric), alpha)
        result.comparisons += rows
    for variant in variants:
        gated_verdicts = {c.metric: c.verdict for c in result.comparisons
                          if c.variant == variant and c.metric in gated}
        result.ship[variant] = may_ship(gated_verdicts)
    return result
