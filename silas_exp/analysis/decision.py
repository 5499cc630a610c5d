"""An ablation's decision in one sentence: which variants ship, and what blocks
the others (the metric, its CI against the margin, the cases needed). When
several variants ship, they are ranked on the primary gated metric with a CI
(superiority, not only non-inferiority). The sentence opens the parent run's
description and the report; the verdict counts open the parent run's name."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from silas_exp.analysis.data import SweepData
from silas_exp.analysis.interval import metric_interval
from silas_exp.analysis.result import (
    ERROR_METRIC,
    PASS_METRIC,
    AblationResult,
    Ranked,
    Ranking,
)
from silas_exp.metrics.names import display_name
from silas_exp.metrics.numbers import declared, signed
from silas_exp.metrics.registry import spec
from silas_exp.stats import MetricCall, Oriented, Outcome

ZERO_PASS = "passes no case"


def about(n: int) -> str:
    """A number of cases as a plan reads it: two significant figures from 100
    on ("about 2,600" for 2,587), exact below."""
    if n < 100:
        return f"{n:,}"
    step = 10 ** (len(str(n)) - 2)
    return f"{round(n / step) * step:,}"


def needed_text(n_needed: int, pool: int | None, repeats: int = 1) -> str:
    """The cases that would decide a variant, the one way they are printed:
    "needs about 440 cases", and when the pool cannot reach them "needs about
    2,600 cases; the pool has 320" (never a bare count beyond the pool)."""
    at = f" × {repeats} repeats" if repeats > 1 else ""
    text = f"needs about {about(n_needed)} cases{at} to decide"
    if pool is not None and n_needed > pool:
        text += f"; the pool has {pool:,}"
    return text


def needed_cell(n_needed: int | None, pool: int | None, repeats: int = 1) -> str:
    """The same in a table's "to decide" cell: "about 2,600 cases (the pool has 320)"."""
    if not n_needed:
        return ""
    at = f" × {repeats} repeats" if repeats > 1 else ""
    beyond = f" (the pool has {pool:,})" if pool is not None and n_needed > pool else ""
    return f"about {about(n_needed)} cases{at}{beyond}"


def margin_text(margin: float) -> str:
    """A non-inferiority margin, the one way it is printed: "worse by at most 0.03"."""
    return f"worse by at most {declared(margin)}"


@dataclass(frozen=True)
class Blocker:
    """What keeps a variant from shipping: a gated metric (or the error and
    zero-pass rules) and a short text that reads the same for every variant
    when the margin is the same."""

    key: str
    text: str


def blockers(r: AblationResult, variant: str) -> list[Blocker]:
    vv = r.verdicts[variant]
    if vv.outcome is Outcome.SHIP:
        return []
    rows = {c.metric: c for c in r.comparisons if c.variant == variant}
    found = [Blocker("zero_pass", ZERO_PASS)] if ZERO_PASS in vv.reasons else []
    if any(reason.startswith("errors:") for reason in vv.reasons):
        found.append(Blocker(ERROR_METRIC, "errors (more case runs errored than the control's)"))
    for metric in r.gated:
        if metric == ERROR_METRIC:
            continue
        c, name = rows.get(metric), display_name(metric)
        if c is None:
            found.append(Blocker(metric, f"{name} (no paired value)"))
        elif c.call is MetricCall.INFERIOR:
            found.append(Blocker(metric, f"{name} {signed(c.delta)} (margin: "
                                         f"{margin_text(c.margin)})"))
        elif c.call is MetricCall.UNDECIDED and c.n_cases < r.min_cases:
            found.append(Blocker(metric, f"{name} (only {c.n_cases} paired cases)"))
        elif c.call is MetricCall.UNDECIDED:
            found.append(Blocker(metric, f"{name} (CI crosses the margin: "
                                         f"{margin_text(c.margin)})"))
    return found


def _texts(found: list[Blocker]) -> str:
    return ", ".join(b.text for b in found) or "no gated metric decided"


def _needed(r: AblationResult, variants: list[str]) -> str:
    need = [r.verdicts[v].n_needed for v in variants if r.verdicts[v].n_needed]
    return f"; {needed_text(max(need), r.pool_cases)}" if need else ""


def _nothing_ships(r: AblationResult, held: list[str]) -> str:
    found = {v: blockers(r, v) for v in held}
    if len(held) == 1:
        return f"No variant may ship: {held[0]} is blocked by {_texts(found[held[0]])}" \
            + _needed(r, held)
    common = [b for b in found[held[0]] if all(b in found[v] for v in held)]  # the same words
    if not common:
        return "No variant may ship: " + "; ".join(
            f"{v} is blocked by {_texts(found[v])}{_needed(r, [v])}" for v in held)
    also = []
    for v in held:
        extra, need = [b for b in found[v] if b not in common], _needed(r, [v])
        if extra:
            also.append(f"{v} also by {_texts(extra)}{need}")
        elif need:
            also.append(f"{v} {need.removeprefix('; ')}")
    return (f"No variant may ship: every one is blocked by {_texts(common)}"
            + "".join(f"; {a}" for a in also))


def decision_sentence(r: AblationResult, ranking: Ranking | None = None) -> str:
    """"scorer=weights ships; scorer=online does not (nDCG@10 −0.06 beyond 0.03)"."""
    by = {o: sorted(v for v, vv in r.verdicts.items() if vv.outcome is o) for o in Outcome}
    ship, no, undecided = by[Outcome.SHIP], by[Outcome.DO_NOT_SHIP], by[Outcome.INCONCLUSIVE]
    if not ship:
        return _nothing_ships(r, no + undecided) + "."
    parts = [f"{' and '.join(ship)} {'ships' if len(ship) == 1 else 'ship'}"
             + (f" ({ranking.sentence()})" if ranking is not None else "")]
    parts += [f"{v} does not ({_texts(blockers(r, v))})" for v in no]
    parts += [f"{v} is undecided ({_texts(blockers(r, v))}{_needed(r, [v])})" for v in undecided]
    return "; ".join(parts) + "."


SYMBOL = {Outcome.SHIP: "✓", Outcome.DO_NOT_SHIP: "✗", Outcome.INCONCLUSIVE: "?"}


def verdict_counts(r: AblationResult) -> str:
    """"1✓ 1✗ 1?": how many variants ship, do not ship, are inconclusive. The
    parent run's name starts with it; eight characters, so the runs table's
    default column width does not cut any of the three counts."""
    outcomes = [vv.outcome for vv in r.verdicts.values()]
    return " ".join(f"{outcomes.count(o)}{SYMBOL[o]}" for o in Outcome)


def control_passes_nothing(data: SweepData, r: AblationResult) -> bool:
    """The control passes no case: the zero-pass rule would reject the control itself."""
    passes = data.case_values(r.control, PASS_METRIC)
    return bool(np.any(~np.isnan(passes))) and float(np.nansum(passes)) == 0.0


def control_note(r: AblationResult) -> str:
    return (f"The control {r.control} passes no case: the rule \"a variant must pass at least one "
            "case\" would reject the control itself, so the pass gate says little here; check "
            "the suite's expectations or pick another control (analysis.control).")


def primary_metric(r: AblationResult) -> str | None:
    """The first gated metric with a direction, beyond the pass and error rules."""
    return next((m for m in r.gated if m not in (PASS_METRIC, ERROR_METRIC)
                 and spec(m).direction != "none"), None)


def rank_shipping(data: SweepData, r: AblationResult, seed: int = 0,
                  n_resamples: int = 1000) -> Ranking | None:
    """The shipping variants ranked on the primary gated metric, when two or more ship."""
    ship = [v for v, vv in r.verdicts.items() if vv.outcome is Outcome.SHIP]
    metric = primary_metric(r)
    if len(ship) < 2 or metric is None:
        return None
    direction = spec(metric).direction
    rows = []
    for c in r.table(metric):
        if c.variant in ship:
            o = Oriented.of(c.delta, c.ci_low, c.ci_high, direction)
            rows.append(Ranked(c.variant, o, o.low > 0))
    if len(rows) < 2:
        return None
    rows.sort(key=lambda x: -x.better.estimate)
    _, a, b = data.paired(rows[0].variant, rows[1].variant, metric)
    try:
        ci = metric_interval(metric, a - b, a, b, r.confidence)
    except ValueError:  # no paired case between the two
        return None
    return Ranking(metric, rows, Oriented.of(ci.estimate, ci.low, ci.high, direction),
                   r.confidence)


def annotate(data: SweepData, r: AblationResult, seed: int = 0, n_resamples: int = 1000) -> None:
    """What the verdicts alone do not say: a control that passes no case (a
    note), and the ranking of two or more shipping variants."""
    if control_passes_nothing(data, r):
        r.notes.insert(0, control_note(r))
    r.ranking = rank_shipping(data, r, seed, n_resamples)
