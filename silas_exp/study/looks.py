"""The stopping rule of a study in rounds: after each look, settle the variants
whose verdict is decided and stop running them.

A variant closes when, at the look's confidence of the study's alpha-spending
plan (silas_exp.stats.sequential: group-sequential boundaries over blocks of
new cases, Bonferroni over repeats), its verdict is ship or do not ship; when
even ``repeats_max`` repeats could not decide (futility: inconclusive, with
the cases that would); or at ``repeats_max``. The state is ``adaptive.json``
in the sweep folder (``silas_exp.study.state``), so the end-of-sweep report
uses the same confidence and names the round each variant stopped.
"""

from __future__ import annotations

from pathlib import Path

from silas_exp.analysis.ablation import AblationResult, ablation, pick_control, suite_kind
from silas_exp.analysis.data import load_sweep_dir
from silas_exp.analysis.margins import (
    baseline_means,
    control_means,
    margins_from_means,
    relative_metrics,
)
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.baselines import read_baseline
from silas_exp.errors import AnalysisError
from silas_exp.metrics.registry import gated_for, spec
from silas_exp.stats import MetricCall, Oriented, Outcome
from silas_exp.stats.sequential import chances_at_max, decide_chances, futile, look_z
from silas_exp.study.state import AdaptiveState, with_fixed_margins


def _undecided(r: AblationResult, variant: str):
    """The variant's undecided gated comparisons, each with its difference
    oriented so that positive is better."""
    for c in r.comparisons:
        if c.variant == variant and c.metric in r.gated and c.call is MetricCall.UNDECIDED:
            yield c, Oriented.of(c.delta, c.ci_low, c.ci_high, spec(c.metric).direction)


def _needed(c) -> str:
    from silas_exp.analysis.decision import needed_text

    return f"{c.metric} ({needed_text(c.n_needed, c.pool_cases) if c.n_needed else 'no count'})"


def _futile(r: AblationResult, data, variant: str, repeats_max: int) -> str | None:
    """Why more repeats of the same cases cannot decide ``variant``, or None."""
    chances, names = [], []
    for c, d in _undecided(r, variant):
        if c.n_cases < r.min_cases:
            return f"only {c.n_cases} cases; repeats cannot add cases"
        _, m = data.matrix(variant, r.control, c.metric)
        chances.append(chances_at_max(m, d.estimate, d.low, d.high, c.margin, repeats_max,
                                      r.confidence, c.n_cases))
        names.append(_needed(c))
    if futile(chances):
        return (f"under 10% chance that {repeats_max} repeats decide; more cases would: "
                + ", ".join(names))
    return None


def _futile_cases(r: AblationResult, variant: str, pool_cases: int,
                  final_confidence: float) -> str | None:
    """Why the rest of the pool cannot decide ``variant``, or None: the
    predictive power of the whole pool (Spiegelhalter's: conditional power
    averaged over where the truth may lie given the cases so far, so an
    unlucky first blocks do not end a study that the pool could still
    decide), with the interval shrinking as 1/sqrt(cases)."""
    chances, names = [], []
    for c, d in _undecided(r, variant):
        if c.n_cases >= pool_cases:
            return f"the pool's {pool_cases} cases are used up"
        z_now, z_end = look_z(r.confidence, c.n_cases), look_z(final_confidence, pool_cases)
        h_max = (d.high - d.low) / 2 * (max(c.n_cases, 1) / pool_cases) ** 0.5 * z_end / z_now
        # the final estimate's predictive variance is the conditional one x N/n
        chances.append(decide_chances(d.estimate, d.low, d.high, c.margin, h_max, z_end,
                                      spread=(pool_cases / max(c.n_cases, 1)) ** 0.5,
                                      z_now=z_now))
        names.append(_needed(c))
    if futile(chances):
        return (f"under 10% chance that the pool's {pool_cases} cases decide; it would take: "
                + ", ".join(names))
    return None


def review(sweep_dir: Path, settings: AnalysisSettings, state: AdaptiveState, round_: int,
           suite_dir: Path | None = None) -> AdaptiveState:
    """Close the variants decided after ``round_`` rounds (1-based), reading
    only the jobs of those rounds; record the look in the state and write it."""
    try:
        data = load_sweep_dir(sweep_dir, suite_dir, keep=state.rounds_seen(round_))
    except AnalysisError:
        data = None  # nothing finished yet: look again after the next round
    if data is not None:
        look_and_close(data, settings, state, round_,
                       read_baseline(suite_dir) if suite_dir and data.control_arm else None)
    state.looked.append(round_)
    state.write(sweep_dir)
    return state


def fix_margins(data, settings: AnalysisSettings, state: AdaptiveState, baseline=None) -> None:
    """Fix the study's relative margins at its first look (silas_exp.analysis.margins):
    from ``baseline`` (the suite's ``BaselineRecord``) when the control is its
    arm, else from the control's mean at this look."""
    try:
        control, _ = pick_control(data, settings)
    except AnalysisError:
        return
    metrics = relative_metrics()
    arm = data.control_arm
    if baseline is not None and arm is not None and control == arm.name == baseline.name:
        means = baseline_means(baseline.jobs, metrics)
        source = (f"the baseline's logged results ({len(baseline.cases())} cases, run "
                  f"{baseline.source_run_id})")
    else:
        means = control_means(data, control, metrics)
        n = max((len(j.cases) for j in data.jobs if j.variant == control), default=0)
        source = f"the control's mean at the first look ({control}, {n} cases)"
    state.margins = margins_from_means(means, settings)
    state.margins_from = source


def look_and_close(data, settings: AnalysisSettings, state: AdaptiveState, round_: int,
                   baseline=None) -> AblationResult | None:
    """One look at ``data`` after ``round_`` rounds: the ablation at this look's
    confidence and the stopping rule (:func:`close_decided`); None when nothing
    can be compared yet."""
    if not state.margins_from:
        fix_margins(data, settings, state, baseline)
    looked = with_fixed_margins(state, settings).model_copy(
        update={"confidence": state.confidence_at(round_)})
    try:  # a look needs the gated metrics' verdicts only: futility reads nothing else
        result = ablation(data, looked, metrics=list(settings.gate) if settings.gate
                          else gated_for(suite_kind(data)), pool_cases=state.pool_cases,
                          descriptive=False)
    except AnalysisError:
        return None  # e.g. nothing finished yet: look again after the next round
    close_decided(result, data, state, round_)
    return result


def close_decided(result: AblationResult, data, state: AdaptiveState, round_: int) -> None:
    """The stopping rule at one look: close every open variant whose verdict is
    decided, or that the study's remaining rounds cannot decide."""
    state.control = result.control
    for variant, vv in result.verdicts.items():
        if variant in state.closed:
            continue
        why = None
        if vv.outcome is not Outcome.INCONCLUSIVE:
            why = "; ".join(vv.reasons)
        elif round_ >= state.repeats_max:
            why = (f"repeats_max={state.repeats_max} reached: " if state.unit == "repeat" else
                   f"the pool's {state.pool_cases} cases are used up: ") + "; ".join(vv.reasons)
        elif state.unit == "block":
            why = _futile_cases(result, variant, state.pool_cases or 0, state.confidence)
        else:
            why = _futile(result, data, variant, state.repeats_max)
        if why:
            state.closed[variant] = {"round": round_, "outcome": vv.outcome.value, "why": why}
