"""Ablation statistics (§19.5, §20.6): each variant against the control, per
metric, on paired per-case differences that respect clustering of repeats,
and a non-inferiority verdict per variant (silas_exp.stats.noninferiority).

The verdict rule: a variant **ships** only when, for every gated metric, the
worse-side bound of the (expanded) cluster-bootstrap CI of its paired
difference lies within the metric's margin, and it has no more errored cases
than the control and passes at least one case. It is **not shipped** when any
gated metric is worse beyond its margin with confidence, or it errors more.
Everything else is **inconclusive**, with the cases needed to decide.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from contextlib import contextmanager

import numpy as np

from silas_exp.analysis.data import BASELINE, SweepData
from silas_exp.analysis.decision import annotate, margin_text
from silas_exp.analysis.interval import metric_interval
from silas_exp.analysis.let_through import study_warnings
from silas_exp.analysis.result import (
    ERROR_METRIC,
    PASS_METRIC,
    REFERENCE,
    AblationResult,
    Comparison,
    Sensitivity,
    VariantVerdict,
)
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.errors import AnalysisError
from silas_exp.metrics.names import display_name
from silas_exp.metrics.numbers import interval, signed
from silas_exp.metrics.registry import SuiteKind, gate_of, gated_for, reported_for, spec
from silas_exp.stats import (
    MetricCall,
    Oriented,
    Outcome,
    Verdict,
    benjamini_hochberg,
    cases_needed,
    cohens_dz,
    combine,
    holm,
    metric_call,
    paired_permutation,
    paired_wilcoxon,
    sprt_with_pilot,
    verdict,
)
from silas_exp.stats.control_variate import Corrected, corrected_interval, select
from silas_exp.variants import find_variant


def _matches_control(variant: str, controls: dict[str, str]) -> bool:
    parts = dict(p.partition("=")[::2] for p in variant.split(","))
    named = [k for k in parts if k in controls]
    return bool(named) and all(parts[k] == controls[k] for k in named)


def pick_control(data: SweepData, settings: AnalysisSettings) -> tuple[str, str]:
    """Explicit choice, else the promoted baseline's configuration (the arm the
    sweep ran from it: never its logged results), else the §19.5 control."""
    variants = data.variants()
    arm = data.control_arm if data.control_arm and data.control_arm.name in variants else None
    if settings.control:
        if settings.control == BASELINE:
            if arm is None:
                raise AnalysisError(
                    f"analysis.control=baseline but sweep {data.sweep_id} did not run the "
                    "promoted baseline's configuration (it compares only arms run on the same "
                    "cases and seeds); re-run the sweep with the baseline promoted, or name a "
                    "variant of the sweep with analysis.control=<variant>")
            return arm.name, arm.reason
        named = find_variant(settings.control, variants)
        if named is None:
            raise AnalysisError(f"control {settings.control!r} is not a variant of sweep "
                                f"{data.sweep_id}; variants: {variants}")
        return named, "named with analysis.control / --control"
    if settings.use_baseline and arm is not None:
        return arm.name, arm.reason
    found = [v for v in variants if _matches_control(v, settings.controls)]
    if len(found) == 1:
        what = ", ".join(f"{k}={v}" for k, v in settings.controls.items() if f"{k}={v}" in found[0])
        why = ("the §19.5 control: heuristic-only eviction" if "scorer=" in what
               else "the default eviction strategy")
        if data.added_control:
            why += "; not listed in the sweep, so the sweep ran it itself"
        return found[0], f"{why} ({what})"
    raise AnalysisError(
        f"sweep {data.sweep_id}: no control among the variants {variants}. Name one with "
        "analysis.control=<variant> (or --control), or sweep a group with a §19.5 control "
        f"({', '.join(f'{k}={v}' for k, v in settings.controls.items())})")


def suite_kind(data: SweepData) -> SuiteKind:
    rows = [row for j in data.jobs for row in j.cases.values()]
    probe = any("probe.overall" in row for row in rows)
    replay = any("context.retrieval_relevance" in row for row in rows)
    return "mixed" if probe and replay else "probe" if probe else "replay"


def _per_repeat(values: np.ndarray) -> tuple[float, float]:
    """Mean ± sd over repeats of the per-repeat mean over cases."""
    with _quiet():
        runs = np.nanmean(values, axis=0) if values.size else np.array([])
    runs = runs[~np.isnan(runs)]
    if len(runs) == 0:
        return math.nan, math.nan
    return float(runs.mean()), float(runs.std(ddof=1)) if len(runs) > 1 else math.nan


@contextmanager
def _quiet():
    """All-NaN rows (a case no pair completed) are expected: no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _compare(data: SweepData, variant: str, control: str, metric: str, s: AnalysisSettings,
             margin: float, mde: float | None, use_sprt: bool,
             descriptive: bool = True) -> Comparison | None:
    """One variant's paired comparison on one metric, at ``s.confidence``:
    the variant's and the control's means on the same (case, repeat) pairs
    (``descriptive=False``: no p-values)."""
    cases, a, b = data.paired(variant, control, metric)
    m = a - b
    keep = ~np.all(np.isnan(m), axis=1) if len(cases) else np.zeros(0, bool)
    m, a, b = m[keep], a[keep], b[keep]
    cases = [c for c, k in zip(cases, keep, strict=True) if k]
    if m.size == 0 or np.all(np.isnan(m)):
        return None
    with _quiet():
        per_case = np.nanmean(m, axis=1)
    ci = metric_interval(metric, m, a, b, s.confidence)
    cv = _corrected(data, variant, control, metric, cases, per_case)
    if cv is not None:
        corrected = corrected_interval(cv, ci, s.confidence)
        cv = None if corrected is ci else cv  # the kind's own interval: no correction used
        ci = corrected
    estimate, low, high = ci.estimate, ci.low, ci.high
    (mean, sd), (cmean, csd) = _paired_mean(a), _paired_mean(b)
    sprt = None
    if use_sprt:
        if mde and len(per_case) > 6:
            sprt = sprt_with_pilot(per_case, delta=mde, pilot=5).decision
        else:
            sprt = "needs --mde and more than 6 cases"
    p_perm = paired_permutation(per_case, seed=s.seed).pvalue if descriptive else math.nan
    p_wilcoxon = paired_wilcoxon(per_case).pvalue if descriptive else math.nan
    return Comparison(variant, metric, mean, sd, estimate, low, high, p_perm,
                      p_wilcoxon, math.nan, cohens_dz(per_case), len(m),
                      m.shape[1], int(np.sum(~np.isnan(m))), margin, Verdict.NO_DIFFERENCE,
                      sprt=sprt, control_mean=cmean, control_sd=csd, confidence=s.confidence,
                      multiplier=cv.multiplier if cv else math.nan,
                      covariates=cv.covariates if cv else ())


def _corrected(data: SweepData, variant: str, control: str, metric: str, cases: list[str],
               per_case: np.ndarray) -> Corrected | None:
    """The paid per-case differences corrected by the study's simulated twin
    (and the baseline's history where it helps): None without a twin of both
    arms on every paid case, or on a pool the paid cases cover. Its interval
    (``corrected_interval``) is the kind's own below the minimum information."""
    twin = data.twin
    if twin is None or metric == ERROR_METRIC or not {variant, control} <= set(twin.variants()):
        return None
    xv, xc = twin.case_means(variant, metric), twin.case_means(control, metric)
    x = {c: xv[c] - xc[c] for c in xv.keys() & xc.keys()}
    rest = sorted(set(x) - set(cases))
    if not rest or any(c not in x for c in cases) or np.any(np.isnan(per_case)):
        return None
    covariates = {"simulated": (np.array([x[c] for c in cases]), np.array([x[c] for c in rest]))}
    history = {c: row[metric] for c, row in (data.history or {}).items()
               if metric in row and not math.isnan(row[metric])}
    if all(c in history for c in (*cases, *rest)):
        covariates["baseline"] = (np.array([history[c] for c in cases]),
                                  np.array([history[c] for c in rest]))
    return select(per_case, covariates, "simulated")


def _paired_mean(values: np.ndarray) -> tuple[float, float]:
    """One side of a paired comparison (cases × repeats, NaN where the pair is
    missing): the mean over cases of each case's mean over its repeats (the
    statistic the difference's CI is of), and the sd over repeats of each
    repeat's mean over cases (NaN with one repeat)."""
    with _quiet():
        mean = float(np.mean(np.nanmean(values, axis=1)))
    return mean, _per_repeat(values)[1]


def _error_rule(data: SweepData, variant: str, control: str) -> tuple[MetricCall, str | None]:
    """Errors are counted, not estimated: more errored (case, repeat) pairs than
    the control stops the variant."""
    _, m = data.matrix(variant, control, ERROR_METRIC)
    d = np.where(np.isnan(m), 0, m)
    v_err, c_err = int(np.sum(d > 0)), int(np.sum(d < 0))
    if v_err > c_err:
        return MetricCall.INFERIOR, (f"errors: {v_err} case runs errored where the control's did "
                                     f"not, {c_err} the other way (of {m.size} paired case runs)")
    return MetricCall.NONINFERIOR, None


def sensitivity_of(data: SweepData, settings: AnalysisSettings | None = None
                   ) -> dict[str, Sensitivity]:
    """Oracle-vs-random separation of the suite's gated metrics (needs both)."""
    s = settings or AnalysisSettings()
    kind = suite_kind(data)
    gated = list(s.gate) if s.gate else gated_for(kind)
    margins = {m: s.margins.get(m, spec(m).margin_for(_per_repeat(
        data.case_values(REFERENCE[1], m))[0])) for m in gated}
    return _sensitivity(data, gated, margins, s.sensitivity_floor)


def _sensitivity(data: SweepData, metrics: list[str], margins: dict[str, float],
                 floor: float) -> dict[str, Sensitivity]:
    oracle, rnd = REFERENCE
    if not {oracle, rnd} <= set(data.variants()):
        return {m: Sensitivity(m, **v) for m, v in (data.sensitivity or {}).items()
                if m in metrics}
    out = {}
    for metric in metrics:
        if metric == ERROR_METRIC:
            continue
        _, m = data.matrix(oracle, rnd, metric)
        with _quiet():
            per_case = np.nanmean(m, axis=1) if m.size else np.array([])
        per_case = per_case[~np.isnan(per_case)]
        if len(per_case) < 2:
            continue
        sign = -1.0 if spec(metric).direction == "lower" else 1.0
        gap = sign * float(per_case.mean())
        sd = float(per_case.std(ddof=1))
        sep = gap / sd if sd > 0 else (math.inf if gap > 0 else 0.0)
        ok = sep >= floor and gap > margins.get(metric, 0.0)
        out[metric] = Sensitivity(metric, gap, sep, ok)
    return out


def ablation(data: SweepData, settings: AnalysisSettings | None = None, *,
             metrics: list[str] | None = None, use_sprt: bool = False,
             mde: float | None = None,
             confidence_of: Mapping[str, float] | None = None,
             pool_cases: int | None = None, descriptive: bool = True) -> AblationResult:
    """The verdicts of every variant against the control. ``confidence_of``
    reads a variant's intervals at a confidence of its own (the look of a
    sequential study it stopped at) instead of ``settings.confidence``.
    ``pool_cases``: the cases the study could draw (a sequential study's
    pool; default: the cases the control ran), beyond which a number of cases
    needed is out of reach. ``descriptive=False`` leaves out what the verdicts
    do not read (p-values, the ranking of shipping variants): a look's
    stopping rule needs the verdicts only."""
    s = settings or AnalysisSettings()
    own = {v: s.model_copy(update={"confidence": c}) for v, c in (confidence_of or {}).items()}
    control, reason = pick_control(data, s)
    variants = [v for v in data.variants() if v != control]
    if not variants:
        raise AnalysisError(f"sweep {data.sweep_id} has only the control variant {control!r}")
    kind = suite_kind(data)
    gated = gate_of(kind, s.gate)  # pass and errors always gate
    shown = list(dict.fromkeys(gated + list(metrics or reported_for(kind))))
    result = AblationResult(data.sweep_id, data.command, control, reason, kind, shown, [],
                            s.correction, s.confidence, {}, min_cases=s.min_cases,
                            pool_cases=pool_cases or _cases_run(data, control))
    margins: dict[str, float] = {}
    for metric in shown:
        mspec = spec(metric)
        cmean, csd = _per_repeat(data.case_values(control, metric))
        result.control_summary[metric] = (cmean, csd)
        margins[metric] = s.margins.get(metric, mspec.margin_for(cmean))
        rows = [c for v in variants
                if (c := _compare(data, v, control, metric, own.get(v, s), margins[metric], mde,
                                  use_sprt, descriptive))]
        if metric in gated and not rows:
            result.notes.append(f"{metric} has no value on any shared case of this suite; it "
                                "cannot gate here")
            continue
        adjust = holm if s.correction == "holm" else benjamini_hochberg
        adjusted = adjust([r.p_perm for r in rows]) if rows and descriptive else \
            [math.nan] * len(rows)
        for r, p in zip(rows, adjusted, strict=True):
            r.p_adjusted = float(p)
            if mspec.direction != "none":
                r.verdict = verdict(r.ci_low, r.ci_high, r.p_adjusted, mspec.higher_is_better,
                                    1 - own.get(r.variant, s).confidence)
            if metric in gated and metric != ERROR_METRIC:
                d = Oriented.of(r.delta, r.ci_low, r.ci_high, mspec.direction)
                r.call = metric_call(d, r.margin) if r.n_cases >= s.min_cases \
                    else MetricCall.UNDECIDED
                if r.call is MetricCall.UNDECIDED:
                    need = cases_needed(d, r.margin, r.n_cases)
                    r.n_needed = max(need, s.min_cases) if need else None
                    r.pool_cases = result.pool_cases
        if metric in gated:
            result.gated.append(metric)
        result.comparisons += rows
    result.notes += _multiplier_notes(result)
    result.sensitivity = _sensitivity(data, result.gated, margins, s.sensitivity_floor)
    for variant in variants:
        result.verdicts[variant] = _decide(data, result, variant, control)
    if descriptive:
        annotate(data, result, s.seed, s.n_resamples)
    result.warnings = study_warnings(data, result)
    return result


def _multiplier_notes(r: AblationResult) -> list[str]:
    """The report's line per variant on what the simulated twin bought: each
    metric's effective sample multiplier (the variance of the paid cases' plain
    mean over the corrected one's)."""
    notes = []
    for variant in dict.fromkeys(c.variant for c in r.comparisons if c.covariates):
        parts = [f"{display_name(c.metric)} ×{c.multiplier:.2f}"
                 + (" (with the baseline's history)" if "baseline" in c.covariates else "")
                 for c in r.comparisons if c.variant == variant and c.covariates]
        notes.append(f"{variant}: the simulated replay of every pool case as a control variate "
                     "(prediction-powered, PPI++ weight); effective sample multiplier "
                     + ", ".join(parts))
    return notes


def _cases_run(data: SweepData, control: str) -> int:
    """The distinct cases the control ran: a fixed design's whole suite."""
    return len({c for j in data.jobs if j.variant == control for c in j.cases})


def _decide(data: SweepData, r: AblationResult, variant: str, control: str) -> VariantVerdict:
    rows = {c.metric: c for c in r.comparisons if c.variant == variant}
    calls: dict[str, MetricCall] = {}
    reasons: list[str] = []
    for metric in r.gated:
        if metric == ERROR_METRIC:
            calls[metric], why = _error_rule(data, variant, control)
            reasons += [why] if why else []
            continue
        c, name = rows.get(metric), display_name(metric)
        calls[metric] = c.call if c and c.call else MetricCall.UNDECIDED
        if c is None:
            reasons.append(f"{name}: no paired value")
        elif c.call is MetricCall.INFERIOR:
            reasons.append(f"{name} worse beyond its margin ({margin_text(c.margin)}): Δ "
                           f"{interval(c.delta, c.ci_low, c.ci_high)}")
        elif c.call is MetricCall.UNDECIDED and c.n_cases < r.min_cases:
            reasons.append(f"{name}: only {c.n_cases} paired cases (a verdict needs "
                           f"{r.min_cases}; analysis.min_cases)")
        elif c.call is MetricCall.UNDECIDED:
            reasons.append(f"{name}: CI [{signed(c.ci_low)}, {signed(c.ci_high)}] crosses the "
                           f"margin ({margin_text(c.margin)})")
    passes = data.case_values(variant, PASS_METRIC)
    if np.nansum(passes) == 0 and np.any(~np.isnan(passes)):
        calls["zero_pass"] = MetricCall.INFERIOR
        reasons.insert(0, "passes no case")
    outcome = combine(calls)
    if outcome is Outcome.SHIP:
        reasons = [f"non-inferior on every gated metric "
                   f"({', '.join(display_name(m) for m in r.gated)})"]
    needed = [c.n_needed for c in rows.values() if c.n_needed]
    n_rep = max((c.n_repeats for c in rows.values()), default=0)
    return VariantVerdict(variant, outcome, reasons,
                          max(needed) if needed and outcome is Outcome.INCONCLUSIVE else None, n_rep)
