"""Adaptive repeats: looking at the verdict after every round of repeats.

Looking repeatedly at a confidence bound and stopping when it clears the
margin inflates the error rate unless the looks are paid for. The design here
is a group-sequential one with **Bonferroni alpha spending**: with at most K
planned looks, each look tests at level alpha/K (two-sided confidence
1 − 2·alpha/K). Whatever the dependence between looks, the chance that *any*
look ships a variant worse than its margin is at most alpha (a union bound).
Chosen over Pocock / O'Brien–Fleming boundaries because those assume
normally distributed, independent increments of information, which a
cluster bootstrap over cases × repeats does not give, and over confidence
sequences because none of the maintained libraries builds one from a cluster
bootstrap; Bonferroni needs neither, at some cost in power (measured in
bench/bench_adaptive.py).

Stopping *for futility* never ships anything, so it costs no error: a
variant stops as inconclusive when even ``repeats_max`` repeats could not
decide, because the interval is dominated by differences between cases, which
more repeats of the same cases do not shrink. "Could not" is conditional
power (stochastic curtailment): assuming the current estimates, the chance
that the intervals at ``repeats_max`` allow shipping, and the chance that one
of them stops the variant, are both under 10 %.
"""

from __future__ import annotations

import math
import warnings

import numpy as np


def look_rounds(repeats_min: int, repeats_max: int) -> list[int]:
    """The rounds after which the verdict is looked at: ``repeats_min``, then
    doubling, and ``repeats_max`` (2, 4, 8, 10). Few looks keep the Bonferroni
    price low; doubling looks where the interval has shrunk enough to matter."""
    rounds, r = [], repeats_min
    while r < repeats_max:
        rounds.append(r)
        r *= 2
    return [*rounds, repeats_max]


def look_confidence(confidence: float, looks: int) -> float:
    """Two-sided confidence of each look so that K looks spend alpha in total."""
    alpha = (1 - confidence) / 2
    return 1 - 2 * alpha / max(looks, 1)


def projected_half_width(diffs_by_case, half_width: float, repeats_to: int) -> float:
    """The CI half-width ``repeats_to`` repeats of the same cases would give,
    from a one-way variance split of the cases × repeats differences: the
    between-case part stays, the within-case part shrinks as 1/repeats."""
    m = np.asarray(diffs_by_case, dtype=float)
    m = m[~np.all(np.isnan(m), axis=1)]
    if m.ndim != 2 or len(m) < 2 or not half_width > 0:
        return half_width
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = float(np.mean(np.sum(~np.isnan(m), axis=1)))
        within = float(np.nanmean(np.nanvar(m, axis=1, ddof=1))) if m.shape[1] > 1 else 0.0
        now = float(np.var(np.nanmean(m, axis=1), ddof=1))
    within = 0.0 if math.isnan(within) else within
    if not now > 0:
        return half_width
    between = max(now - within / r, 0.0)
    later = between + within / max(repeats_to, r)
    return half_width * math.sqrt(later / now)


def look_z(confidence: float, n_cases: int) -> float:
    """The normal quantile an expanded interval of this confidence spans."""
    from scipy.stats import norm

    from silas_exp.stats.bootstrap import expanded_tail

    return float(norm.isf(expanded_tail((1 - confidence) / 2, n_cases)))


def decide_chances(estimate: float, low: float, high: float, margin: float,
                   half_width_max: float, z: float, spread: float = 1.0) -> tuple[float, float]:
    """Conditional power: if the current estimate is the truth, the chances that
    the interval at ``repeats_max`` (half-width ``half_width_max``) ends within
    the margin (ship) or beyond it (stop). The estimate still moves by the part
    of its spread that more repeats remove. ``spread`` > 1 widens that move:
    predictive power, which also averages over where the truth may lie."""
    from scipy.stats import norm

    half = (high - low) / 2
    tau = spread * math.sqrt(max(half**2 - half_width_max**2, 0.0)) / z
    if tau == 0:
        return float(low > -margin), float(high < -margin)
    return (float(norm.sf((-margin + half_width_max - estimate) / tau)),
            float(norm.cdf((-margin - half_width_max - estimate) / tau)))


def chances_at_max(diffs_by_case, estimate: float, low: float, high: float, margin: float,
                   repeats_max: int, confidence: float, n_cases: int) -> tuple[float, float]:
    """``decide_chances`` for an oriented difference now, with the half-width
    ``repeats_max`` repeats of the same cases would give at a look of this
    confidence: the one rule the adaptive sweeper and its simulation share."""
    h_max = projected_half_width(diffs_by_case, (high - low) / 2, repeats_max)
    return decide_chances(estimate, low, high, margin, h_max, look_z(confidence, n_cases))


def futile(chances: list[tuple[float, float]], floor: float = 0.10) -> bool:
    """A variant is futile when, over its undecided gated metrics, shipping
    needs every one to end within its margin and that is unlikely for one of
    them, and stopping needs one to end beyond and that is unlikely for all."""
    if not chances:
        return False
    return min(p for p, _ in chances) < floor and max(q for _, q in chances) < floor
