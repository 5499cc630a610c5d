"""Non-inferiority decisions: the ship rule of §19.5 ("showing non-negative
impact") as a confidence-bound test against a declared margin.

For one metric, with the paired difference variant − control oriented so that
positive is better, and a two-sided (1 − 2α) confidence interval [lo, hi]:

* ``noninferior`` when lo > −margin: the worst case the data allow is still
  within the margin (one-sided test at level α);
* ``inferior`` when hi < −margin: worse beyond the margin with confidence;
* ``undecided`` otherwise — the data cannot tell.

A variant ships only when every gated metric is noninferior (an
intersection–union test: the chance of shipping a variant that is worse than
its margin on some gated metric is at most α, with no multiplicity penalty);
it is stopped when any gated metric is inferior; else it is inconclusive.
Hand-written: the rule is three comparisons; statsmodels' TOST covers
equivalence, not a cluster-bootstrap bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    SHIP = "ship"
    DO_NOT_SHIP = "do_not_ship"
    INCONCLUSIVE = "inconclusive"

    @property
    def words(self) -> str:
        """What people read ("do not ship"); the value is the token tags and records keep."""
        return self.value.replace("_", " ")


class MetricCall(StrEnum):
    NONINFERIOR = "non-inferior"
    INFERIOR = "worse beyond margin"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Oriented:
    """A difference and its CI turned so that positive means better."""

    estimate: float
    low: float
    high: float

    @classmethod
    def of(cls, estimate: float, low: float, high: float, direction: str) -> Oriented:
        if direction == "lower":
            return cls(-estimate, -high, -low)
        if direction == "higher":
            return cls(estimate, low, high)
        raise ValueError(f"a metric with direction {direction!r} cannot decide a verdict")


def metric_call(d: Oriented, margin: float) -> MetricCall:
    if math.isnan(d.low) or math.isnan(d.high) or math.isnan(margin):
        return MetricCall.UNDECIDED
    if d.low > -margin:
        return MetricCall.NONINFERIOR
    if d.high < -margin:
        return MetricCall.INFERIOR
    return MetricCall.UNDECIDED


def cases_needed(d: Oriented, margin: float, n_cases: int) -> int | None:
    """Cases (at the same repeats) for the CI to clear the margin, if the
    estimate held: the half-width shrinks as 1/sqrt(n). None when the estimate
    sits on the margin (no n decides) or nothing is known."""
    half = (d.high - d.low) / 2
    gap = abs(d.estimate + margin)
    if n_cases < 1 or not half > 0 or not gap > 0 or math.isnan(gap):
        return None
    return max(n_cases + 1, math.ceil(n_cases * (half / gap) ** 2))


def combine(calls: dict[str, MetricCall]) -> Outcome:
    if any(c is MetricCall.INFERIOR for c in calls.values()):
        return Outcome.DO_NOT_SHIP
    if calls and all(c is MetricCall.NONINFERIOR for c in calls.values()):
        return Outcome.SHIP
    return Outcome.INCONCLUSIVE
