"""The confidence interval of a paired difference (variant − control), one per
kind of metric, at the confidence of a look. Every gated metric's verdict reads
it; it is a pure function of the per-case differences (cases × repeats, NaN =
missing) and what the kind needs.

Why not one bootstrap for every metric: a percentile bootstrap of paired
differences has zero width when no case's pair disagrees, and its worse-side
tail is too thin when few do. At the first look of the sequential design (40
cases, one-sided level 0.04 %) a pass rate worse than its margin shipped in
8.7 % of simulated studies that way. Each kind therefore gets the interval
that is right for its data (bench/bench_coverage.py measures all three):

* ``pass_fail`` (0/1 per case run): **Tango's score interval** for paired
  proportions (Tango 1998; Newcombe 1998, method 10 is its hybrid cousin). It
  inverts the score test whose variance is the restricted maximum-likelihood
  one under each hypothesised difference, so it keeps its width when no pair
  disagrees (40 agreeing pairs cannot rule out a difference of 0.22 at the
  first look's 99.92 %), and, unlike Wald-type intervals, holds its level in
  the far tails the first looks spend. With repeats the pairs of a case are
  not independent: the counts are divided by the design effect (Rao & Scott
  1992, "A simple method for the analysis of clustered binary data": the
  ratio of the cluster variance of the difference to the multinomial one,
  never below 1) before the score interval is solved; with fewer than
  ``MIN_DISAGREEING`` disagreeing cases that ratio is not estimable, and the
  largest it can be (the repeats per case) is used. With unequal repeats per
  case (``repeats=auto`` gives the noisy cases more) each of a case's runs
  counts R̄ / R_i, so the interval is about the mean of the case means (every
  case alike, as the estimate), not the runs' mean, which the cases with
  more repeats would pull their way.
  Hand-written: statsmodels has score intervals for two *independent*
  proportions only (``confint_proportions_2indep``), none for paired ones,
  and is not a dependency; the interval is a quadratic and a root search.
* ``bounded`` (scores in a known range: shares in [0, 1], probe scores 0–5)
  and ``amount`` (token counts and ratios: non-negative, no upper bound):
  **Student's t on the per-case means with Hall's (1992) skewness
  correction**. The cases are the independent units (a case's repeats are
  averaged first, the cluster mean); t is exact for normal differences, and
  Hall's monotone cubic transform of the t statistic removes the first-order
  error that skewed differences (token ratios are skewed) put into one tail,
  which at the first look's boundary is most of the error.
  **A minimum-information rule** guards the normal approximation: when fewer
  than ``MIN_DISAGREEING`` cases disagree (a nonzero per-case difference),
  the sum is a handful of jumps, not a normal variable, and the interval is
  widened to the **rate bound**: whatever the size of each unseen
  disagreement up to ``scale``, the difference is within scale × the Wilson
  upper bound on the share of cases that could disagree in that direction.
  ``scale`` is the width of the metric's range for ``bounded`` metrics (a
  true bound) and, for ``amount``, the largest value either arm showed on any
  case (an assumption an amount cannot avoid, stated where it is used). So
  no interval has zero width: 40 agreeing cases leave ±0.22 of the range open,
  320 of them ±0.013.

Hand-written rather than ``scipy.stats.bootstrap`` (no clusters, zero width
on constant data) or ``scipy.stats.ttest_1samp(...).confidence_interval``
(no skewness correction, no minimum-information rule); the two use only
scipy's distributions and root finder.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np

Kind = Literal["pass_fail", "bounded", "amount"]
KINDS: tuple[Kind, ...] = ("pass_fail", "bounded", "amount")
# below this many disagreeing cases a t interval is not trusted (the minimum-information rule)
MIN_DISAGREEING = 10


@dataclass(frozen=True)
class Interval:
    estimate: float  # mean over cases of each case's mean over its repeats
    low: float
    high: float
    n_cases: int
    disagreeing: int  # cases whose difference is nonzero in some repeat
    method: str  # which interval: "score", "t", "t + rate bound"


def _clean(diffs) -> np.ndarray:
    m = np.asarray(diffs, dtype=float)
    if m.ndim == 1:
        m = m[:, None]
    m = m[~np.all(np.isnan(m), axis=1)]
    if len(m) == 0:
        raise ValueError("no case has any paired difference; there is no interval")
    return m


def _z(confidence: float) -> float:
    from scipy.stats import norm  # lazy: scipy.stats costs ~0.5 s to import

    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must be in (0.5, 1), got {confidence}")
    return float(norm.isf((1 - confidence) / 2))


def paired_interval(diffs, confidence: float, kind: Kind, *, scale: float | None = None
                    ) -> Interval:
    """Two-sided interval of the mean paired difference at ``confidence``
    (each side a one-sided test at (1 − confidence) / 2).

    ``diffs``: cases × repeats (or one value per case) of variant − control,
    NaN where a pair is missing. ``kind``: ``pass_fail`` (every difference
    −1, 0 or 1), ``bounded`` or ``amount``; the last two need ``scale``, the
    largest size one case's difference can have (:func:`disagreement_scale`)."""
    m = _clean(diffs)
    if kind == "pass_fail":
        return _score(m, confidence)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if scale is None or not scale > 0 or math.isinf(scale):
        raise ValueError(f"a {kind} interval needs a positive, finite scale, got {scale}")
    return _t_interval(m, confidence, float(scale))


def disagreement_scale(kind: Kind, bounds: tuple[float, float] | None = None,
                       variant=None, control=None) -> float | None:
    """How large one case's difference can be: the width of the range of a
    ``bounded`` metric; for an ``amount``, the largest value either arm showed
    on any case; None for ``pass_fail`` (its differences are −1, 0 or 1)."""
    if kind == "bounded":
        if bounds is None:
            raise ValueError("a bounded metric needs its bounds")
        return float(bounds[1] - bounds[0])
    if kind == "amount":
        values = [np.abs(np.asarray(x, dtype=float)) for x in (variant, control) if x is not None]
        top = max((float(np.nanmax(v)) for v in values if np.any(~np.isnan(v))), default=0.0)
        return top if top > 0 else 1.0
    return None


# -- pass/fail: Tango's score interval, Rao–Scott for repeats -----------------------------
def _score(m: np.ndarray, confidence: float) -> Interval:
    bad = ~np.isnan(m) & ~np.isin(m, (-1.0, 0.0, 1.0))
    if np.any(bad):
        raise ValueError(f"pass_fail differences are -1, 0 or 1; got {m[bad][0]}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per_case = np.nanmean(m, axis=1)
    n_cases = len(m)
    # unequal repeats per case (repeats where the noise is): each of a case's runs counts
    # R̄ / R_i, so that every case weighs alike, as in the estimate (the mean of the case
    # means), and the runs still add up to n; with equal repeats every weight is 1
    counts = np.sum(~np.isnan(m), axis=1)
    weight = counts.mean() / counts
    b = float(np.sum(weight * np.sum(m == 1, axis=1)))
    c = float(np.sum(weight * np.sum(m == -1, axis=1)))
    n = float(counts.sum())
    disagreeing = int(np.sum(np.nansum(m != 0, axis=1) > 0))
    # a design effect estimated from a handful of disagreeing cases is noise: below the
    # minimum information, take the largest it can be (every repeat of a case alike)
    deff = _design_effect(m) if disagreeing >= MIN_DISAGREEING else max(n / n_cases, 1.0)
    low, high = tango(b / deff, c / deff, n / deff, _z(confidence))
    return Interval(float(np.mean(per_case)), low, high, n_cases, disagreeing, "score")


def _design_effect(m: np.ndarray) -> float:
    """Rao–Scott design effect of the mean of the case means: its variance
    estimated between cases (the case is the independent unit) over the
    variance it would have if the runs were independent (each run weighted as
    in :func:`_score`); 1 without repeats, never below 1, 1 when nothing
    varies. With equal repeats this is the ratio of the clustered to the
    per-run variance of the runs' mean."""
    counts = np.sum(~np.isnan(m), axis=1)
    if np.all(counts <= 1) or len(m) < 2:
        return 1.0
    k, n = len(m), float(counts.sum())
    per_case = np.nansum(m, axis=1) / counts
    mean = float(per_case.mean())
    weight = counts.mean() / counts
    runs = float(np.sum(weight * np.nansum((m - mean) ** 2, axis=1))) / (n - 1)  # per-run variance
    if not runs > 0:
        return 1.0
    between = float(np.sum((per_case - mean) ** 2)) / (k * (k - 1))  # variance of the mean, clustered
    return max(1.0, between * n / runs)


@functools.lru_cache(maxsize=4096)
def tango(b: float, c: float, n: float, z: float) -> tuple[float, float]:
    """Tango's (1998) score interval for p10 − p01 of paired binary outcomes:
    ``b`` pairs where only the first passed, ``c`` where only the second did,
    ``n`` pairs in all, at the normal quantile ``z`` per side. The score
    statistic (b − c − nΔ) / sqrt(n (2 q + Δ(1 − Δ))) uses q, the restricted
    maximum-likelihood p01 under Δ; the bounds are where it equals ±z."""
    from scipy.optimize import brentq

    if n <= 0:
        return -1.0, 1.0
    est = (b - c) / n

    def stat(delta: float) -> float:
        a_, b_ = 2 * n, -b - c + (2 * n - b + c) * delta
        c_ = -c * delta * (1 - delta)
        q = (math.sqrt(max(b_ * b_ - 4 * a_ * c_, 0.0)) - b_) / (2 * a_)
        var = n * (2 * q + delta * (1 - delta))
        return (b - c - n * delta) / math.sqrt(var) if var > 0 else math.copysign(
            math.inf, b - c - n * delta) if b - c != n * delta else 0.0

    edge = 1 - 1e-12
    low = -1.0 if stat(-edge) <= z else brentq(lambda d: stat(d) - z, -edge, est, xtol=1e-10)
    high = 1.0 if stat(edge) >= -z else brentq(lambda d: stat(d) + z, est, edge, xtol=1e-10)
    return float(low), float(high)


# -- bounded and amount: t with Hall's skewness correction, and the rate bound ------------
def _t_interval(m: np.ndarray, confidence: float, scale: float) -> Interval:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x = np.nanmean(m, axis=1)
    worse = int(np.sum(np.nanmin(m, axis=1) < 0))  # cases with some negative difference
    better = int(np.sum(np.nanmax(m, axis=1) > 0))
    disagreeing = int(np.sum(np.nansum(m != 0, axis=1) > 0))
    low, high, rate = t_bounds(x[None, :], np.array([worse]), np.array([better]),
                               np.array([disagreeing]), confidence, np.array([scale]))
    return Interval(float(x.mean()), float(low[0]), float(high[0]), len(x), disagreeing,
                    "t + rate bound" if rate[0] else "t")


def t_bounds(x: np.ndarray, worse: np.ndarray, better: np.ndarray, disagreeing: np.ndarray,
             confidence: float, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``bounded`` / ``amount`` interval of many samples at once (rows of
    ``x``: studies × cases of per-case mean differences; per row the cases with
    some negative, some positive, some nonzero difference, and the scale).
    Returns the lows, the highs, and whether the rate bound applied. One
    vectorised function serves a single interval and the coverage simulation."""
    from scipy.stats import norm, t

    s, n = x.shape
    est = x.mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = est.copy(), est.copy()
    if n >= 2:
        dev = x - est[:, None]
        sd = np.sqrt(np.sum(dev**2, axis=1) / (n - 1))
        ok = sd > 0
        m2 = np.mean(dev**2, axis=1)
        skew = np.where(ok, np.mean(dev**3, axis=1) / np.where(ok, m2, 1.0) ** 1.5, 0.0)
        # the variance of a difference most cases do not move comes from the cases that
        # disagree: Student's quantile at their degrees of freedom, not the cases'
        q = t.isf(tail, np.clip(disagreeing - 1, 1, n - 1))
        h_low, h_high = hall(skew, n, q)
        t_low, t_high = np.minimum(h_low, -q), np.maximum(h_high, q)
        se = sd / math.sqrt(n)
        low = np.where(ok, est - se * t_high, est)
        high = np.where(ok, est - se * t_low, est)
    rate = disagreeing < MIN_DISAGREEING
    if np.any(rate):
        z = float(norm.isf(tail))
        low = np.where(rate, np.minimum(low, -scale * wilson_upper(worse, n, z)), low)
        high = np.where(rate, np.maximum(high, scale * wilson_upper(better, n, z)), high)
    return low, high, rate


def hall(skew, n: int, q):
    """The range [t_low, t_high] of the studentized mean T = sqrt(n)(mean − mu)/sd
    that Hall's (1992, JRSS B 54) skewness-corrected interval accepts at the
    one-sided quantile ``q``: g(T) in [−q, q] for the monotone transform
    g(T) = T + a T² + a² T³ / 3 + b, a = skew / (3 sqrt(n)), b = skew / (6 sqrt(n)),
    which removes the n^(-1/2) term of T's Edgeworth expansion."""
    skew = np.asarray(skew, dtype=float)
    a, b = skew / (3 * math.sqrt(n)), skew / (6 * math.sqrt(n))
    flat = np.abs(a) < 1e-12
    safe = np.where(flat, 1.0, a)

    def inverse(y) -> np.ndarray:
        return np.where(flat, y, (np.cbrt(1 + 3 * safe * (y - b)) - 1) / safe)

    return inverse(-q), inverse(q)


def wilson_upper(k, n: int, z: float):
    """Wilson's upper score bound for a share, ``k`` of ``n`` (an array of k
    too), at the normal quantile ``z``."""
    p, z2 = np.asarray(k, dtype=float) / n, z * z
    centre = p + z2 / (2 * n)
    spread = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return np.minimum(1.0, (centre + spread) / (1 + z2 / n))
