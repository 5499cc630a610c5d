"""Repeats where the noise is (silas_exp.stats.repeats), by simulation with known
truth: cross-fitted Neyman allocation buys precision and keeps coverage; the
rule that looks at a case's own repeats is biased; the judge's share of the
variance is recovered."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t

from silas_exp.stats.intervals import paired_interval
from silas_exp.stats.repeats import allocate, cross_fitted_sd, judge_share
from silas_exp.study.allocation import neyman_counts, relative_sd

GROUPS = {0: 0.01, 1: 0.05, 2: 0.20}  # within-case sd by kind of case


def _study(rng, allocated: bool, n: int = 60, mean_repeats: int = 4):
    group = {i: i % 3 for i in range(n)}
    mu = 0.1 + rng.normal(0.0, 0.02, n)  # each case's true mean difference
    draw = {i: (lambda k, i=i: mu[i] + rng.normal(0.0, GROUPS[group[i]], k)) for i in range(n)}
    if allocated:
        first = {i: draw[i](2) for i in range(n)}
        counts = allocate(cross_fitted_sd(first, group), mean_repeats, 2, 12)
        means = np.array([np.concatenate([first[i], draw[i](counts[i] - 2)]).mean()
                          for i in range(n)])
    else:
        means = np.array([draw[i](mean_repeats).mean() for i in range(n)])
    se = means.std(ddof=1) / math.sqrt(n)
    return means.mean(), abs(means.mean() - 0.1) <= t.ppf(0.975, n - 1) * se


def test_cross_fitted_allocation_buys_precision_and_keeps_coverage():
    rng = np.random.default_rng(0)
    runs = {a: [_study(rng, a) for _ in range(1500)] for a in (False, True)}
    var = {a: np.var([m for m, _ in r]) for a, r in runs.items()}
    assert var[False] / var[True] > 1.3  # same repeats in all, a smaller variance
    for r in runs.values():
        assert np.mean([c for _, c in r]) >= 0.95 - 2.6 * math.sqrt(0.95 * 0.05 / 1500)
    assert abs(np.mean([m for m, _ in runs[True]]) - 0.1) < 0.002  # unbiased


def test_repeats_chosen_from_a_cases_own_repeats_bias_its_mean():
    """Pass/fail repeats with p = 0.8: a case whose two first repeats disagree gets ten,
    one whose repeats agree stops. Looking at the case itself moves the mean to
    ~0.877; predicting its noise from other cases keeps 0.8."""
    rng = np.random.default_rng(1)
    own, crossed = [], []
    for _ in range(200):
        first = {i: (rng.random(2) < 0.8).astype(float) for i in range(60)}
        own += [np.concatenate([f, (rng.random(8) < 0.8)]).mean() if f[0] != f[1] else f.mean()
                for f in first.values()]
        counts = allocate(cross_fitted_sd(first, dict.fromkeys(first, 0)), 4, 2, 10)
        crossed += [np.concatenate([f, (rng.random(counts[i] - 2) < 0.8)]).mean()
                    for i, f in first.items()]
    assert abs(np.mean(own) - 0.8) > 0.05
    assert abs(np.mean(crossed) - 0.8) < 0.01


def test_allocation_follows_the_predicted_sd_within_bounds():
    counts = allocate({"a": 0.01, "b": 0.05, "c": 0.20}, 4, 1, 8)
    assert counts["a"] < counts["b"] < counts["c"] <= 8 and counts["a"] >= 1
    assert allocate({"a": 0.1, "b": 0.1}, 3, 1, 8) == {"a": 3, "b": 3}
    sd = cross_fitted_sd({"a": [0.0, 1.0], "b": [0.0, 0.0], "c": [5.0, 5.0]},
                         {"a": 0, "b": 0, "c": 1})
    assert sd["a"] == 0.0 and sd["b"] == math.sqrt(0.5)  # the other case of its group, never itself


def test_judge_share_recovers_the_split():
    rng = np.random.default_rng(2)
    agent = rng.normal(3.0, 0.6, (400, 1))  # what the answers are worth
    grades = agent + rng.normal(0.0, 0.4, (400, 5))  # five gradings each
    out = judge_share(grades)
    assert abs(out["judge"] - 0.16) < 0.02 and abs(out["agent"] - 0.36) < 0.06
    assert abs(out["share"] - 0.16 / 0.52) < 0.05


def test_pass_fail_interval_is_about_the_case_means_with_unequal_repeats():
    """Half the cases disagree often (+1 in 30 % of runs, -1 in 10 %: mean +0.2) and get
    eight repeats; the other half never disagree and get two. The truth, the mean of the
    case means, is 0.1; the runs' mean (b - c) / n would be 0.16. The score interval with
    the Rao–Scott design effect covers the case means' truth at its level."""
    from silas_exp.stats.intervals import paired_interval

    rng = np.random.default_rng(5)
    covered, sims = 0, 400
    for _ in range(sims):
        m = np.full((120, 8), np.nan)
        m[:60] = rng.choice([1.0, -1.0, 0.0], size=(60, 8), p=[0.3, 0.1, 0.6])
        m[60:, :2] = 0.0
        ci = paired_interval(m, 0.95, "pass_fail")
        assert abs(ci.estimate - np.mean(np.nanmean(m, axis=1))) < 1e-12
        covered += ci.low <= 0.1 <= ci.high
    assert covered / sims >= 0.95 - 2.6 * math.sqrt(0.95 * 0.05 / sims), covered / sims


def test_a_case_with_fewer_repeats_keeps_the_repeats_it_has():
    """Repeat 2 ran only case "b" (the allocation gave it more): the paired matrix
    still holds case "a" with its two repeats, NaN where it did not run."""
    from silas_exp.analysis.data import JobData, SweepData

    def job(variant, repeat, values):
        return JobData(variant, repeat, {}, {c: {"m": v, "summary.pass": 1.0} for c, v in values.items()},
                       status=dict.fromkeys(values, "pass"))

    jobs = [job("v", 0, {"a": 1.0, "b": 2.0}), job("c", 0, {"a": 0.0, "b": 0.0}),
            job("v", 1, {"a": 3.0, "b": 4.0}), job("c", 1, {"a": 0.0, "b": 0.0}),
            job("v", 2, {"b": 6.0}), job("c", 2, {"b": 0.0})]
    cases, m = SweepData("s", "", jobs).matrix("v", "c", "m")
    assert cases == ["a", "b"]
    np.testing.assert_array_equal(m, [[1.0, 3.0, np.nan], [2.0, 4.0, 6.0]])
    assert np.nanmean(m, axis=1).tolist() == [2.0, 4.0]  # each case over the repeats it has
    _, passed = SweepData("s", "", jobs).matrix("v", "c", "summary.pass")  # counted over every case run
    assert np.isnan(passed[0, 2]) and not np.isnan(passed[1, 2])


# -- the allocation as repeats=auto runs it (silas_exp.study.allocation) --------------------
def _counts(rng, first, group, r_min, r_max, allocated):
    """The sweeper's counts from the first ``r_min`` repeats of every case, or
    (``allocated=False``) the same repeats in all spread evenly over the cases."""
    counts = neyman_counts(relative_sd({"d": first}, group), r_min, r_max)
    if allocated:
        return counts
    base, extra = divmod(sum(counts.values()), len(first))
    return {c: base + (k < extra) for k, c in enumerate(rng.permutation(len(first)).tolist())}


def _swept(rng, sds, n, r_min, r_max, allocated, draw=None):
    """One study: every case ``r_min`` repeats, then the rest of its count; the
    final interval the verdict reads (bounded differences, or pass/fail).
    Returns (estimate, the interval, the within-case variance of the estimate
    given the counts: (1/n²) Σ σ_i² / R_i, exact, and the repeats in all)."""
    group = {i: i % len(sds) for i in range(n)}
    mu = 0.1 + rng.normal(0.0, 0.02, n)
    draw = draw or (lambda i, k: mu[i] + rng.normal(0.0, sds[group[i]], k))
    first = {i: draw(i, r_min) for i in range(n)}
    counts = _counts(rng, first, group, r_min, r_max, allocated)
    m = np.full((n, r_max), np.nan)
    for i in range(n):
        m[i, :counts[i]] = np.concatenate([first[i], draw(i, counts[i] - r_min)])
    kind = "pass_fail" if np.all(np.isin(m[~np.isnan(m)], (-1.0, 0.0, 1.0))) else "bounded"
    ci = paired_interval(m, 0.95, kind, scale=None if kind == "pass_fail" else 1.0)
    var = sum(sds[group[i]] ** 2 / counts[i] for i in range(n)) / n**2
    return ci, var, sum(counts.values())


def _coverage_floor(sims: int) -> float:
    return 0.95 - 2.6 * math.sqrt(0.95 * 0.05 / sims)


@pytest.mark.parametrize(("sds", "n", "r_max"), [((0.01, 0.05, 0.20), 60, 10),
                                                  ((0.1, 0.1, 0.1), 60, 10),
                                                  ((0.01, 0.20), 6, 6)])
def test_the_sweepers_allocation_keeps_the_final_interval_at_its_level(sds, n, r_max):
    """Unequal within-case sds, equal ones, and the smallest study (6 cases in two
    groups, repeats_min=2): the interval of the mean of the case means covers the
    truth (0.1) at least at its level, and the estimate is unbiased."""
    rng, sims = np.random.default_rng(11), 600
    runs = [_swept(rng, sds, n, 2, r_max, True) for _ in range(sims)]
    assert np.mean([ci.low <= 0.1 <= ci.high for ci, _, _ in runs]) >= _coverage_floor(sims)
    assert abs(np.mean([ci.estimate for ci, _, _ in runs]) - 0.1) < 0.003


def test_pass_fail_verdicts_keep_their_level_under_the_allocation():
    """Pass/fail differences: one group disagrees often (+1 in 30 % of runs, -1 in 10 %),
    the other rarely (+1 in 2 %); the first gets the repeats. The truth is the mean of
    the case means, 0.11; the runs' mean would lean to the noisy group's 0.2."""
    rng, sims, n = np.random.default_rng(12), 500, 40
    p = {0: [0.3, 0.1, 0.6], 1: [0.02, 0.0, 0.98]}

    def draw(i, k):
        return rng.choice([1.0, -1.0, 0.0], size=k, p=p[i % 2])

    runs = [_swept(rng, (0.6, 0.14), n, 2, 8, True, draw) for _ in range(sims)]
    assert np.mean([t for _, _, t in runs]) < 0.8 * n * 8  # the allocation did spare repeats
    assert np.mean([ci.low <= 0.11 <= ci.high for ci, _, _ in runs]) >= _coverage_floor(sims)


@pytest.mark.parametrize(("sds", "n", "r_max", "least"), [((0.01, 0.05, 0.20), 60, 10, 1.5),
                                                           ((0.01, 0.05, 0.20), 30, 4, 1.3),
                                                           ((0.1, 0.1, 0.1), 60, 10, 0.97),
                                                           ((0.01, 0.20), 6, 6, 1.0)])
def test_the_allocation_buys_precision_where_sds_differ_and_little_is_lost_where_not(
        sds, n, r_max, least):
    """At the same repeats in all, the variance of the estimate with equal counts over
    the allocation's (exact given the counts, averaged over simulated first rounds):
    1.67 / 1.43 where the within-case sds differ, 0.997 where they are equal and the
    predictor can only add noise to the counts. Six cases are too few to predict from
    (fewer than ten other cases vary): every case gets every repeat, as without it."""
    rng = np.random.default_rng(13)
    alloc, equal = [], []
    for _ in range(150 if n > 6 else 600):
        state = rng.bit_generator.state
        alloc.append(_swept(rng, sds, n, 2, r_max, True)[1])
        rng.bit_generator.state = state  # the same first rounds, the same total, spread evenly
        equal.append(_swept(rng, sds, n, 2, r_max, False)[1])
    assert np.mean(equal) / np.mean(alloc) >= least - 1e-9
