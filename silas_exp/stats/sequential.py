"""Sequential studies: looking at the verdict after every round.

Looking repeatedly at a confidence bound and stopping when it clears the
margin inflates the error rate unless the looks are paid for. Two plans, one
per kind of round:

- **Rounds of new cases** (sequential over cases, the default): each block
  adds cases the earlier looks never saw, so a look's estimate is a mean of
  independent per-case differences and the estimates at nested looks are
  jointly normal (central limit theorem) with correlation sqrt(n_i / n_j).
  That is the setting of group-sequential designs, and the plan is their
  standard one: **alpha spending** with the Kim–DeMets power function
  alpha(t) = alpha · t^rho of the information fraction t (cases so far over
  the pool), rho = 2, exact boundaries of the joint normal (Lan & DeMets), and
  each look's interval is the repeated confidence interval those boundaries
  give (Jennison & Turnbull). Chosen over Bonferroni, which ignores the
  correlation and pays for every look in full, and over Pocock's boundary,
  which spends as much at the first block as at the last: the variants that
  matter for a decision sit near their margin and need the whole pool, and
  rho = 2 leaves 75 % of alpha for the last look (its one-sided boundary
  2.02 after blocks 1, 2, 4, 8 of 8, against Bonferroni's 2.50) while a
  clear effect still stops at the first block (boundary 3.36). Each side of
  the interval is its own one-sided test (ship: not worse than the margin;
  do not ship: worse than it); stopping for any other reason (futility,
  another metric, the other side) can only lower either error, so the
  boundaries need not assume it (non-binding).
- **Rounds of repeats** (``repeats=auto``): repeats of the same cases do not
  add independent information, and a cluster bootstrap over cases × repeats
  gives no normal independent increments, so the plan is **Bonferroni alpha
  spending**: with at most K planned looks, each look tests at level alpha/K
  (two-sided confidence 1 − 2·alpha/K). Whatever the dependence between
  looks, the chance that *any* look ships a variant worse than its margin is
  at most alpha (a union bound), at some cost in power (measured in
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

import functools
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


SPENDING_RHO = 2.0  # Kim–DeMets power alpha(t) = alpha * t**rho for rounds of new cases


@functools.lru_cache(maxsize=64)
def spending_bounds(fractions: tuple[float, ...], alpha: float,
                    rho: float = SPENDING_RHO) -> tuple[float, ...]:
    """One-sided boundaries (standard normal quantiles), one per look, of a
    group-sequential plan that spends ``alpha(t) = alpha * t**rho`` by the
    information fraction ``t`` of each look (increasing, the last 1).

    Look k's boundary c_k solves P(Z_1 < c_1, …, Z_{k-1} < c_{k-1}, Z_k >= c_k)
    = alpha(t_k) − alpha(t_{k-1}), the z statistics being a Brownian motion
    W(t)/sqrt(t) seen at the looks. The probabilities come from the
    Armitage–McPherson–Rowe recursion: the density of W on the region no
    look has stopped, carried from look to look by the normal transition
    kernel, integrated by Simpson's rule on a fixed grid (deterministic, a few
    milliseconds). Written here because statsmodels has no group-sequential
    design and the maintained Python package that solves these boundaries
    (spotify-confidence) pulls a charting and notebook stack into the
    install; tests check it against scipy's multivariate normal CDF and a
    simulation. Each boundary is rounded *up* to 1e-3, which keeps the plan
    at or under its alpha and makes it one set of numbers on every machine."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    t = np.asarray(fractions, dtype=float)
    if len(t) == 0 or np.any(np.diff(t) <= 0) or t[0] <= 0 or not math.isclose(t[-1], 1.0):
        raise ValueError(f"information fractions must increase to 1, got {fractions}")
    spent = alpha * t**rho
    bounds = [math.ceil(float(norm.isf(spent[0])) * 1000 - 1e-9) / 1000]
    n = 1201  # Simpson nodes (odd)
    weights = np.ones(n)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    # W(t_1) on the region the first look did not stop, on its grid
    grid = np.linspace(-10 * math.sqrt(t[0]), bounds[0] * math.sqrt(t[0]), n)
    density = norm.pdf(grid, scale=math.sqrt(t[0])) * weights * (grid[1] - grid[0]) / 3
    for k in range(1, len(t)):
        sd = math.sqrt(t[k] - t[k - 1])

        def crossing(c: float, k: int = k, sd: float = sd, density: np.ndarray = density,
                     grid: np.ndarray = grid) -> float:
            return float(density @ norm.sf((c * math.sqrt(t[k]) - grid) / sd)) - (
                spent[k] - spent[k - 1])
        bounds.append(math.ceil(float(brentq(crossing, 0.0, 10.0, xtol=1e-7)) * 1000 - 1e-9)
                      / 1000)
        if k + 1 < len(t):  # carry the density to this look's continuation region
            top = bounds[k] * math.sqrt(t[k])
            nxt = np.linspace(min(grid[0], top) - 6 * sd, top, n)
            kernel = norm.pdf((nxt[:, None] - grid[None, :]) / sd) / sd
            density = (kernel @ density) * weights * (nxt[1] - nxt[0]) / 3
            grid = nxt
    return tuple(bounds)


def spending_confidences(confidence: float, fractions: tuple[float, ...],
                         rho: float = SPENDING_RHO) -> list[float]:
    """Two-sided confidence of each look's interval (each side a one-sided
    test at the look's boundary) so that the looks spend the one-sided alpha
    of ``confidence`` by ``spending_bounds``. One look is the plain test."""
    from scipy.stats import norm

    if len(fractions) == 1:
        return [confidence]
    alpha = (1 - confidence) / 2
    return [1 - 2 * float(norm.sf(c)) for c in spending_bounds(tuple(fractions), alpha, rho)]


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
                   half_width_max: float, z: float, spread: float = 1.0,
                   z_now: float | None = None) -> tuple[float, float]:
    """Conditional power: if the current estimate is the truth, the chances that
    the interval at ``repeats_max`` (half-width ``half_width_max``) ends within
    the margin (ship) or beyond it (stop). The estimate still moves by the part
    of its spread that more repeats remove. ``spread`` > 1 widens that move:
    predictive power, which also averages over where the truth may lie.
    ``z_now`` is the quantile the current interval spans when the last look's
    differs (group-sequential boundaries)."""
    from scipy.stats import norm

    half = (high - low) / 2  # now, at the normal quantile z_now (default: z, the last look's)
    tau = spread * math.sqrt(max((half / (z_now or z))**2 - (half_width_max / z)**2, 0.0))
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
