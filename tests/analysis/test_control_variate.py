"""The prediction-powered (control-variate) mean of paired differences:
PPI++'s formulas on a hand-checked fixture, and by simulation with known
truth its coverage and what it buys (or costs) at each predictor quality."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, t

from silas_exp.stats.control_variate import corrected_interval, corrected_mean, select
from silas_exp.stats.coverage import MODELS, cv_design
from silas_exp.stats.intervals import MIN_DISAGREEING, Interval
from silas_exp.stats.sequential import spending_confidences


def test_estimate_and_weight_are_ppi_plus_plus_on_a_small_fixture():
    y = np.array([0.3, -0.1, 0.4, 0.0, 0.2, 0.5])
    xp = np.array([0.2, -0.2, 0.5, 0.1, 0.1, 0.4])
    xr = np.array([0.0, 0.3, -0.1, 0.2])
    n, m = len(y), len(xr)
    c = corrected_mean(y, xp, xr)
    x_all = np.concatenate([xp, xr])
    # PPI++ (Angelopoulos, Duchi & Zrnic 2023): lambda = Cov(y, x) / ((1 + n/m) Var(x)),
    # theta = lambda * mean(x unlabeled) + mean(y - lambda x)
    lam = np.cov(xp, y)[0, 1] / ((1 + n / m) * np.var(x_all, ddof=1))
    assert c.weights[0] == pytest.approx(lam)
    assert c.estimate == pytest.approx(lam * xr.mean() + np.mean(y - lam * xp))
    resid = y - lam * xp
    assert c.variance == pytest.approx(np.sum((resid - resid.mean()) ** 2) / (n - 2) / n
                                       + lam**2 * np.var(x_all, ddof=1) / m)
    assert c.plain_estimate == pytest.approx(y.mean())
    assert c.multiplier == pytest.approx((np.var(y, ddof=1) / n) / c.variance)


def test_with_every_pool_case_paid_it_is_the_plain_mean():
    y = np.array([0.1, 0.2, -0.3, 0.4])
    c = corrected_mean(y, y, np.zeros((0, 1)))
    assert c.estimate == pytest.approx(y.mean()) and c.weights == () and c.multiplier == 1.0


def _draw(rng, rho: float, n_pool: int, kind: str) -> tuple[np.ndarray, np.ndarray, float]:
    if kind == "normal":
        x = rng.normal(size=n_pool)
        return 0.1 + rho * x + math.sqrt(1 - rho**2) * rng.normal(size=n_pool), x, 0.1
    # paired pass/fail: y in {-1, 0, 1}; the prediction is y itself with probability rho
    p = [0.1, 0.8, 0.1]
    y = rng.choice([-1.0, 0.0, 1.0], p=p, size=n_pool)
    return y, np.where(rng.random(n_pool) < rho, y, rng.choice([-1.0, 0.0, 1.0], p=p,
                                                                size=n_pool)), 0.0


def _simulate(rho: float, kind: str, confidence: float, sims: int = 2000, n: int = 40,
              n_pool: int = 320, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    covered, est, plain, claimed = 0, [], [], []
    for _ in range(sims):
        y, x, truth = _draw(rng, rho, n_pool, kind)
        order = rng.permutation(n_pool)
        c = corrected_mean(y[order[:n]], x[order[:n]], x[order[n:]])
        covered += abs(c.estimate - truth) <= t.ppf(1 - (1 - confidence) / 2, c.df) * c.se
        est.append(c.estimate)
        plain.append(c.plain_estimate)
        claimed.append(c.multiplier)
    return {"coverage": covered / sims, "ess": float(np.var(plain) / np.var(est)),
            "claimed": float(np.median(claimed))}


@pytest.mark.parametrize("kind", ["normal", "pass_fail"])
@pytest.mark.parametrize("rho", [0.0, 0.7, 0.95])
def test_coverage_is_nominal_at_every_predictor_quality(kind, rho):
    out = _simulate(rho, kind, 0.95)
    assert out["coverage"] >= 0.95 - 2.6 * math.sqrt(0.95 * 0.05 / 2000)  # MC error
    assert out["claimed"] == pytest.approx(out["ess"], rel=0.15)  # the reported multiplier is honest


def test_a_useless_predictor_costs_a_few_percent_and_a_good_one_pays():
    useless = _simulate(0.0, "normal", 0.95, sims=4000, seed=1)
    assert 0.95 <= useless["ess"] <= 1.02  # at most a few percent lost at 40 paid cases
    good = _simulate(0.9, "normal", 0.95, sims=2000, seed=2)
    # 40 of 320 paid: the limit is 1 / (1 - rho^2 (N - n) / N) = 3.43
    assert good["ess"] >= 2.8


def test_the_first_looks_tail_holds_for_paired_pass_fail():
    out = _simulate(0.9, "pass_fail", 0.9992, sims=4000, seed=3)
    assert out["coverage"] >= 0.9992 - 2.6 * math.sqrt(0.9992 * 0.0008 / 4000)


def test_a_second_covariate_is_kept_only_when_it_pays_for_itself():
    rng = np.random.default_rng(4)
    kept = {"useless": 0, "useful": 0}
    for _ in range(300):
        y, x, _ = _draw(rng, 0.5, 320, "normal")
        useful = y - 0.5 * x + 0.3 * rng.normal(size=320)  # knows what x does not
        for name, z in (("useless", rng.normal(size=320)), ("useful", useful)):
            c = select(y[:40], {"sim": (x[:40], x[40:]), name: (z[:40], z[40:])}, "sim")
            kept[name] += name in c.covariates
    assert kept["useful"] >= 290 and kept["useless"] <= 60


def test_the_third_cumulant_and_degrees_of_freedom_are_the_two_terms_on_a_small_fixture():
    rng = np.random.default_rng(5)
    x = rng.exponential(size=60)
    y = 0.5 * x + rng.exponential(size=60) - 1.0
    y[::4] = 0.0  # some paid cases do not move
    n, k = 20, 1
    c = corrected_mean(y[:n], x[:n], x[n:])
    m, b = 60 - n, c.weights[0]
    resid, pool = y[:n] - b * x[:n], b * x
    v_paid = np.var(resid, ddof=1 + k) / n
    v_pool = b**2 * np.var(x, ddof=1) / m
    assert c.variance == pytest.approx(v_paid + v_pool)
    assert c.third == pytest.approx(np.mean((resid - resid.mean()) ** 3) / n**2
                                    + np.mean((pool - pool.mean()) ** 3) / m**2)
    # Welch–Satterthwaite, at most the paid residual's n − 1 − k (every residual is nonzero)
    assert c.df == pytest.approx(min((v_paid + v_pool) ** 2
                                     / (v_paid**2 / (n - 1 - k) + v_pool**2 / (60 - 1)), n - 1 - k))
    assert c.df == n - 1 - k  # the pool term's 59 would give more: the paid residual's bound


def _plain(y, disagreeing: int) -> Interval:
    return Interval(float(np.mean(y)), -9.0, 9.0, len(y), disagreeing, "t")


def test_the_corrected_interval_is_halls_t_on_the_estimates_skewness():
    rng = np.random.default_rng(6)
    x = rng.lognormal(0, 1, 200)
    y = x + rng.lognormal(0, 1, 200)  # right-skewed, like a token ratio's differences
    c = corrected_mean(y[:40], x[:40], x[40:])
    ci = corrected_interval(c, _plain(y[:40], 40), 0.99)
    assert ci.method == "corrected t" and ci.estimate == c.estimate
    q = t.isf(0.005, c.df)
    skew = c.third / c.variance**1.5
    assert skew > 0.1

    def g(tt):  # Hall's (1992) transform, written forwards (the code inverts it)
        a = skew / 3
        return tt + a * tt**2 + a**2 * tt**3 / 3 + skew / 6

    # the upper bound is where the transformed studentized statistic meets the quantile;
    # on the lower side Hall's would be narrower than t, and t is kept (where it widens)
    assert g((c.estimate - ci.high) / c.se) == pytest.approx(-q)
    assert (c.estimate - ci.low) / c.se == pytest.approx(q)
    assert g(q) > q
    assert ci.high - c.estimate > c.estimate - ci.low  # right skew: the upper side is longer


def test_below_the_minimum_information_or_without_a_covariate_it_is_the_kinds_interval():
    rng = np.random.default_rng(7)
    x = rng.normal(size=100)
    y = x + rng.normal(size=100)
    c = corrected_mean(y[:40], x[:40], x[40:])
    few = _plain(y[:40], MIN_DISAGREEING - 1)
    assert corrected_interval(c, few, 0.95) is few
    none = corrected_mean(y[:40], x[:40], x[:0])  # every pool case paid: no covariate
    enough = _plain(y[:40], 40)
    assert corrected_interval(none, enough, 0.95) is enough
    assert corrected_interval(c, enough, 0.95).method == "corrected t"


FIRST = spending_confidences(0.95, (1 / 8, 2 / 8, 4 / 8, 1.0))[0]  # 99.92 %


@pytest.mark.parametrize("cell,rho", [((MODELS[3], 1.0), 0.7), ((MODELS[0], 0.25), 0.9)])
def test_the_first_looks_worse_side_tail_holds_for_a_skewed_amount_and_a_pass_rate(cell, rho):
    """40 of 320 cases at 99.92 %: the worse side misses at most its 0.04 % level
    (beyond chance at 1 %), worse by the margin, where the tail is spent."""
    model, share = cell
    studies = 1500
    d = cv_design(model, share, rho, "margin", 40, [1], [FIRST], studies, seed=11, pool=320)
    misses = round(d.worse_miss[0] * studies)
    assert d.corrected[0] > 0.5  # the corrected interval is what is measured
    assert misses == 0 or binom.sf(misses - 1, studies, (1 - FIRST) / 2) >= 0.01
