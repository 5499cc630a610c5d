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
    df: int  # degrees of freedom of the residual variance: n − 1 − covariates used
    covariates: tuple[str, ...] = ()

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
    return Corrected(mean, var, mean, var, (), n, n_rest, max(n - 1, 0))


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
    df = n - 1 - k
    # the residual variance on its regression degrees of freedom: an estimated b fits
    # the paid cases a little better than it will fit new ones
    var = float(np.sum((resid - resid.mean()) ** 2) / df) / n + float(b @ sx @ b) / m
    plain = _plain(y, m)
    return Corrected(est, var, plain.estimate, plain.plain_variance, tuple(map(float, b)), n, m,
                     df, names)


# fewer paid cases than this with a nonzero difference: no correction (the plain
# interval, which keeps its width without disagreement, decides)
MIN_INFORMATIVE = 10


def interval(c: Corrected, confidence: float) -> tuple[float, float]:
    """Two-sided ``confidence`` interval of the corrected mean: Student's t on
    the residual degrees of freedom (``c.df``)."""
    from scipy.stats import t

    q = float(t.ppf(1 - (1 - confidence) / 2, max(c.df, 1)))
    return c.estimate - q * c.se, c.estimate + q * c.se


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
