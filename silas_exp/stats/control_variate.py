"""A paired difference corrected by free predictions of it: the simulated
replay of the same cases (and, where it helps, the baseline's logged results
on them) as control variates.

A study pays for n cases of a pool of N. The simulated replay of every
variant and of the control costs nothing, so its per-case difference x is
known on all N cases, while the paid difference y is known on the n paid
ones. The **prediction-powered** estimate (Angelopoulos et al., "Prediction-
powered inference", Science 2023; its power-tuned form PPI++, Angelopoulos,
Duchi & Zrnic, arXiv:2311.01453) is

    theta = mean_paid(y - b·x) + b·mean_rest(x)

over the n paid cases and the m = N − n pool cases not paid (disjoint, so the
two means are independent), with variance

    Var = Var(y - b·x) / n + b' Var(x) b / m.

Any b leaves theta unbiased, because the two terms estimate E[y] − b·E[x]
and b·E[x]; the power-tuned b minimises the variance:
b = Var(x)⁻¹ Cov(x, y) · m / (n + m), the PPI++ weight (for one covariate,
PPI++'s λ̂ = Cov/((1 + n/m) Var)). A predictor that knows nothing gets b ≈ 0 and
the plain mean back, losing only what estimating b costs (one degree of
freedom and an O(1/n) term: measured in tests/analysis/test_control_variate.py);
a predictor that matches y perfectly leaves Var ≈ Var(x)/m. This is also the
regression estimator of two-phase sampling (Cochran, *Sampling Techniques*,
3rd ed., §12.6) and, with a pre-period metric as x, CUPED (Deng, Xu, Kohavi &
Walker, WSDM 2013), whose covariate's mean is known from outside the
experiment: here from the pool cases not paid.

A second covariate (the baseline's logged per-case value) is kept only where
it helps: where it cuts the estimated variance by at least 10 % (``select``);
the first is always used, its weight tuned.

The **effective sample multiplier** is Var(plain mean of y) / Var(theta): how
many times the paid cases the plain mean would need for the same precision.

Hand-written rather than ``ppi_py`` (ppi-python): the closed form is a few
lines of linear algebra, and ppi-python takes one predictor, pulls
scikit-learn, statsmodels, pandas and gdown into the install, and gives
normal intervals, while a study's looks need the estimate and its variance
for their own boundaries. tests/analysis/test_control_variate.py checks the
estimate and weight against PPI++'s formulas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from silas_exp.stats.intervals import MIN_DISAGREEING, Interval, hall


@dataclass(frozen=True)
class Corrected:
    """A difference's mean corrected by control variates."""

    estimate: float
    variance: float  # of ``estimate``
    plain_estimate: float  # the paid cases' mean of y
    plain_variance: float  # Var(y) / n
    weights: tuple[float, ...]  # b, one per covariate used (empty: none used)
    n_paid: int
    n_rest: int
    df: float  # of ``variance``: Welch–Satterthwaite's, at most the paid residual's
    covariates: tuple[str, ...] = ()
    third: float = 0.0  # third cumulant of ``estimate`` (of its influence values' sums)

    @property
    def multiplier(self) -> float:
        """Effective sample multiplier: the plain mean's variance over this one's."""
        if self.variance > 0:
            return self.plain_variance / self.variance
        return math.inf if self.plain_variance > 0 else 1.0

    @property
    def se(self) -> float:
        return math.sqrt(max(self.variance, 0.0))


def _plain(y: np.ndarray, n_rest: int) -> Corrected:
    n = len(y)
    var = float(np.var(y, ddof=1)) / n if n > 1 else math.nan
    mean = float(np.mean(y)) if n else math.nan
    third = float(np.mean((y - mean) ** 3)) / n**2 if n else math.nan
    return Corrected(mean, var, mean, var, (), n, n_rest, max(n - 1, 0), third=third)


def corrected_mean(y, x_paid, x_rest, names: tuple[str, ...] | None = None) -> Corrected:
    """The prediction-powered mean of ``y`` (n paid cases) with covariates
    ``x_paid`` (n × k, the same cases) and ``x_rest`` (m × k, the pool cases not
    paid), power-tuned. With no rest (every pool case paid) or too few cases
    to estimate the weights, the plain mean."""
    y = np.asarray(y, dtype=float)
    xp = np.asarray(x_paid, dtype=float).reshape(len(y), -1)
    xr = np.asarray(x_rest, dtype=float).reshape(-1, xp.shape[1])
    n, m, k = len(y), len(xr), xp.shape[1]
    names = names or tuple(f"x{i}" for i in range(k))
    if m == 0 or n < k + 3:
        return _plain(y, m)
    x_all = np.vstack([xp, xr])
    sx = np.atleast_2d(np.cov(x_all, rowvar=False, ddof=1))  # every pool case: the best Var(x)
    cxy = np.array([np.cov(xp[:, j], y, ddof=1)[0, 1] for j in range(k)])
    if not np.all(np.isfinite(sx)) or np.linalg.matrix_rank(sx) < k:
        return _plain(y, m)
    b = np.linalg.solve(sx, cxy) * (m / (n + m))
    resid = y - xp @ b
    est = float(resid.mean() + xr.mean(axis=0) @ b)
    # the residual variance on its regression degrees of freedom: an estimated b fits
    # the paid cases a little better than it will fit new ones
    var_paid = float(np.sum((resid - resid.mean()) ** 2) / (n - 1 - k)) / n
    pool = x_all @ b  # the pool term's influence values (Var(x) is read on every pool case)
    var_pool = float(b @ sx @ b) / m
    var = var_paid + var_pool
    # a term whose values are mostly zero (rare disagreements) has the degrees of freedom of
    # its nonzero values; the sum's are Welch–Satterthwaite's, never more than the paid
    # residual's: b is estimated on the paid cases, which Satterthwaite's formula leaves out
    # (measured: with the pool term's 319 it missed 0.07 % at the first look, level 0.039 %)
    df_paid = max(min(n, _nonzero(resid)) - 1 - k, 1)
    df_pool = max(_nonzero(pool) - 1, 1)
    df = min(var**2 / (var_paid**2 / df_paid + var_pool**2 / df_pool), df_paid) if var > 0 \
        else float(df_paid)
    third = (float(np.mean((resid - resid.mean()) ** 3)) / n**2
             + float(np.mean((pool - pool.mean()) ** 3)) / m**2)
    plain = _plain(y, m)
    return Corrected(est, var, plain.estimate, plain.plain_variance, tuple(map(float, b)), n, m,
                     float(df), names, third)


def _nonzero(v: np.ndarray) -> int:
    return int(np.count_nonzero(np.abs(v) > 1e-12 * max(float(np.max(np.abs(v))), 1e-300)))


def corrected_interval(c: Corrected, plain: Interval, confidence: float) -> Interval:
    """The two-sided ``confidence`` interval of the corrected mean, built as the
    kind's own interval is (silas_exp.stats.intervals), on the corrected
    estimate and its variance. ``plain``: the kind's interval of the same paid
    differences (:func:`~silas_exp.stats.intervals.paired_interval`).

    * Student's t on the variance's Welch–Satterthwaite degrees of freedom,
      each term's at most its nonzero influence values − 1 (the minimum-
      information rule of the t family: the variance of a mostly-zero
      difference comes from the cases that move), and never more than the
      paid residual's (the weight b is estimated on the paid cases);
    * with Hall's (1992) skewness correction, taken where it widens, from the
      estimate's standardised third cumulant. Hall's transform depends on the
      mean's skewness only through skew / sqrt(n), the standardised third
      cumulant of the mean, which is also the covariance of the mean with its
      variance estimate; for a sum of independent means (the paid residuals
      y − b·x and the pool term b·x) both are the sum of each term's k3 / n²,
      so the transform applies to the corrected estimate as it stands;
    * no correction below ``MIN_DISAGREEING`` disagreeing paid cases, or
      without a covariate: ``plain`` is returned. Below that count the kind's
      own interval is the score interval (pass/fail) or at least the rate
      bound (bounded, amount), valid whatever the twin; a regression on a
      handful of nonzero values has no variance to trust. Falling back is the
      simplest rule that keeps the rate bound, and costs only the correction
      where it could buy little.

    bench/bench_cv.py measures its coverage, per kind and predictor quality,
    at every look of the sequential design."""
    if not c.weights or plain.disagreeing < MIN_DISAGREEING or not c.variance > 0:
        return plain
    from scipy.stats import t

    q = float(t.isf((1 - confidence) / 2, max(c.df, 1.0)))
    skew = c.third / c.variance**1.5  # standardised third cumulant of the estimate
    # hall() reads skew / sqrt(n): pass the estimate's own as a one-case mean's
    t_low, t_high = hall(skew, 1, q)
    t_low, t_high = min(float(t_low), -q), max(float(t_high), q)
    low, high = c.estimate - c.se * t_high, c.estimate - c.se * t_low
    return Interval(c.estimate, low, high, plain.n_cases, plain.disagreeing, "corrected t")


KEEP_GAIN = 0.10  # a further covariate must cut the estimated variance by this share


def select(y, covariates: dict[str, tuple[np.ndarray, np.ndarray]], first: str) -> Corrected:
    """The corrected mean with covariate ``first`` (the simulated difference),
    and each other covariate added only where it helps: when it cuts the
    estimated variance by at least ``KEEP_GAIN`` (10 %). A covariate that
    knows nothing passes that bar by chance in under 5 % of studies at 40
    cases (its apparent gain is about chi-square(1) / n), and costs little when it does."""
    names = [first]
    best = corrected_mean(y, covariates[first][0], covariates[first][1], (first,))
    for name in covariates:
        if name == first:
            continue
        use = [*names, name]
        xp = np.column_stack([covariates[v][0] for v in use])
        xr = np.column_stack([covariates[v][1] for v in use])
        cand = corrected_mean(y, xp, xr, tuple(use))
        if cand.weights and cand.variance < (1 - KEEP_GAIN) * best.variance:
            best, names = cand, use
    return best
