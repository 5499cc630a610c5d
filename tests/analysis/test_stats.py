"""Statistics on hand-computed fixtures, cross-checked against scipy where it
has the same statistic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from silas_exp.metrics.shadow import classify_diff, shadow_diff
from silas_exp.stats import (
    Verdict,
    benjamini_hochberg,
    cluster_bootstrap_ci,
    cohens_dz,
    cohens_kappa,
    holm,
    paired_permutation,
    paired_power,
    paired_t,
    paired_wilcoxon,
    required_n_paired,
    sprt_run,
    verdict,
)


def test_holm_hand_computed():
    # sorted p: 0.01*3=0.03, 0.03*2=0.06, max(0.06, 0.04*1)=0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_bh_matches_hand_formula():
    p = np.array([0.01, 0.04, 0.03, 0.2])
    # BH: p_(i) * m / i, then cumulative min from the top: [0.04, 0.0533, 0.0533, 0.2]
    assert benjamini_hochberg(p) == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])


def test_paired_tests_agree_with_scipy():
    d = np.array([0.3, 0.1, 0.4, 0.2, -0.1, 0.5, 0.25, 0.15])
    assert paired_t(d).pvalue == pytest.approx(sps.ttest_1samp(d, 0).pvalue)
    assert paired_wilcoxon(d).pvalue == pytest.approx(sps.wilcoxon(d).pvalue)
    # exact sign-flip distribution has 2^8 = 256 arrangements; only all-positive and its mirror
    # plus a few others are as extreme: p well below 0.05 and equals scipy's exact permutation p
    perm = paired_permutation(d, n_resamples=10_000)
    exact = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
    assert perm.pvalue == pytest.approx(exact)
    assert paired_permutation(np.zeros(5)).pvalue == 1.0


@pytest.mark.parametrize("n,shift", [(12, 0.1), (40, 0.06), (320, 0.02), (320, 0.0)])
def test_sign_flip_test_is_scipys_test(n, shift):
    """Exact below 2**n <= resamples, randomised above: scipy's p-value, to the bit
    when exact and within Monte Carlo error (10,000 resamples: SE <= 0.005) when not."""
    d = np.random.default_rng(n).normal(shift, 0.2, n)
    ref = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=10_000,
                               random_state=0).pvalue
    got = paired_permutation(d, n_resamples=10_000).pvalue
    assert got == ref if 2**n <= 10_000 else abs(got - ref) < 0.02


@pytest.mark.parametrize("d", [
    [0.1, 0.1, 0.2, -0.1, 0.3, 0.3, 0.2, 0.1, -0.2, 0.4, 0.1, 0.2],   # ties
    [0.0, 0.1, 0.1, -0.3, 0.2, 0.0, 0.5, 0.2],                       # ties and zeros
    [0.0, 0.4, -0.1, 0.2],                                           # a zero, no tie
])
def test_wilcoxon_with_ties_equals_scipys_exact_permutation_path(d):
    # our vectorised sign-flip path must give scipy.stats.wilcoxon's own answer
    ours, ref = paired_wilcoxon(d), sps.wilcoxon(d)
    assert ours.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
    assert ours.statistic == pytest.approx(ref.statistic)


def test_cohens_dz_hand_computed():
    d = np.array([1.0, 2.0, 3.0])  # mean 2, sd 1
    assert cohens_dz(d) == pytest.approx(2.0)
    assert cohens_dz([0.0, 0.0]) == 0.0


def test_cluster_bootstrap_respects_clusters():
    rng = np.random.default_rng(1)
    cases = rng.normal(0.1, 0.2, size=30)
    m = cases[:, None] + rng.normal(0, 0.01, size=(30, 5))  # repeats almost identical
    ci = cluster_bootstrap_ci(m, n_resamples=2000, seed=0)
    assert ci.low < ci.estimate < ci.high and ci.n_clusters == 30
    # treating the 150 repeats as independent would shrink the interval by ~sqrt(5)
    naive = sps.bootstrap((m.ravel(),), np.mean, n_resamples=2000, method="percentile",
                          random_state=0).confidence_interval
    assert (ci.high - ci.low) > 1.8 * (naive.high - naive.low)
    # one repeat per case: close to scipy's percentile bootstrap
    single = cluster_bootstrap_ci(cases, n_resamples=4000, seed=0)
    ref = sps.bootstrap((cases,), np.mean, n_resamples=4000, method="percentile",
                        random_state=0).confidence_interval
    assert single.low == pytest.approx(ref.low, abs=0.01) and single.high == pytest.approx(ref.high, abs=0.01)


def test_power_matches_framework_figure():
    # sigma 0.15, delta 0.05, alpha 0.05, power 0.8: normal approx ~71, t-test a little more
    n = required_n_paired(0.15, 0.05)
    assert 72 <= n <= 74
    assert paired_power(n, 0.15, 0.05) >= 0.8 > paired_power(n - 1, 0.15, 0.05)
    assert required_n_paired(0.15, 0.10) < n


def test_sprt_hand_computed():
    # delta=1, sigma=1: increment = d - 0.5; upper = ln(0.8/0.05) = 2.77
    res = sprt_run([2.0, 2.0], delta=1.0, sigma=1.0)
    assert res.decision == "accept_h1" and res.n_used == 2 and res.llr == pytest.approx(3.0)
    assert sprt_run([-1.0] * 5, delta=1.0, sigma=1.0).decision == "accept_h0"
    assert sprt_run([0.5], delta=1.0, sigma=1.0).decision == "continue"


def test_weighted_kappa_textbook():
    a = [0, 1, 2, 2, 1, 0, 2, 1]
    assert cohens_kappa(a, a) == 1.0
    b = [0, 1, 2, 1, 1, 0, 2, 2]
    # unweighted: po = 6/8, pe = (2*2 + 3*3 + 3*3)/64 = 22/64 -> (0.75 - 0.34375)/(0.65625)
    assert cohens_kappa(a, b) == pytest.approx((0.75 - 22 / 64) / (1 - 22 / 64))
    assert cohens_kappa(a, b, weights="quadratic") > cohens_kappa(a, b)


def test_descriptive_verdicts():
    assert verdict(0.01, 0.05, 0.01, higher_is_better=True) is Verdict.BETTER
    assert verdict(0.01, 0.05, 0.01, higher_is_better=False) is Verdict.WORSE
    assert verdict(-0.01, 0.05, 0.01, higher_is_better=True) is Verdict.NO_DIFFERENCE
    assert verdict(-0.05, -0.01, 0.20, higher_is_better=True) is Verdict.NO_DIFFERENCE


def test_shadow_diff_classification():
    same = shadow_diff(["a", "b", "c", "d"], ["a", "b", "c", "d"])
    assert same.classification == "identical" and same.kendall_tau == 1.0 and same.jaccard == 1.0
    swapped = shadow_diff(["a", "b", "c", "d"], ["b", "a", "c", "d"])
    assert swapped.top1_changed and math.isclose(swapped.kendall_tau, 4 / 6)
    assert swapped.classification == "incompatible"
    assert classify_diff(0.96, 0.9, False) == "minor" and classify_diff(0.9, 0.9, True) == "major"


def test_shadow_diff_counts_re_evictions_apart():
    # x evicted, fetched back, evicted again: the order of first evictions is compared
    same = shadow_diff(["x", "y", "x"], ["x", "y", "x"])
    assert same.classification == "identical" and same.kendall_tau == 1.0
    assert same.re_evictions_a == 1 and same.re_evictions_b == 1
    diff = shadow_diff(["x", "y", "x"], ["y", "x"])
    assert diff.top1_changed and diff.re_evictions_b == 0


def test_paired_t_is_nan_where_undefined():
    assert math.isnan(paired_t([0.3]).pvalue)
    assert math.isnan(paired_t([0.2, 0.2, 0.2]).pvalue)  # no spread: t undefined
    assert math.isnan(paired_t([0.0, 0.0]).statistic)
