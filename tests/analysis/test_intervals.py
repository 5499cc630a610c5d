"""The paired interval of each kind of metric: hand-derived values, an
independent computation of Tango's statistic, and the coverage its kind
promises on small simulations with known truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps

from silas_exp.stats.intervals import (
    MIN_DISAGREEING,
    disagreement_scale,
    paired_interval,
    tango,
    wilson_upper,
)

FIRST_LOOK = 0.99922  # two-sided confidence of the default plan's first look (one-sided 0.04 %)


def _z(confidence: float) -> float:
    return float(sps.norm.isf((1 - confidence) / 2))


def test_pass_fail_keeps_width_when_no_pair_disagrees():
    """40 agreeing pairs: the score interval is ±z²/(n + z²) (the restricted MLE
    puts every hypothesised difference on one kind of discordant pair), never [0, 0]."""
    iv = paired_interval(np.zeros((40, 1)), FIRST_LOOK, "pass_fail")
    z2 = _z(FIRST_LOOK) ** 2
    assert iv.estimate == 0 and iv.disagreeing == 0
    assert iv.low == pytest.approx(-z2 / (40 + z2), abs=1e-7)
    assert iv.high == pytest.approx(z2 / (40 + z2), abs=1e-7)
    assert iv.low < -0.05  # cannot rule out a loss of the pass rate's margin


def _score_stat(b: int, c: int, n: int, delta: float) -> float:
    """Tango's statistic with the restricted MLE found by numerical maximisation
    of the multinomial likelihood (independent of the closed form)."""
    def nll(q: float) -> float:
        p10, p01 = q + delta, q
        rest = 1 - p10 - p01
        return -(b * math.log(max(p10, 1e-300)) + c * math.log(max(p01, 1e-300))
                 + (n - b - c) * math.log(max(rest, 1e-300)))
    lo, hi = max(0.0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12
    q = optimize.minimize_scalar(nll, bounds=(lo, hi), method="bounded",
                                 options={"xatol": 1e-12}).x
    return (b - c - n * delta) / math.sqrt(n * (2 * q + delta * (1 - delta)))


@pytest.mark.parametrize("b,c,n", [(3, 21, 640), (0, 4, 40), (5, 2, 80), (12, 30, 320)])
def test_tango_bounds_are_where_the_score_statistic_is_z(b, c, n):
    z = _z(0.95)
    low, high = tango(b, c, n, z)
    assert low < (b - c) / n < high
    assert _score_stat(b, c, n, low) == pytest.approx(z, abs=1e-4)
    assert _score_stat(b, c, n, high) == pytest.approx(-z, abs=1e-4)


def test_pass_fail_with_repeats_counts_a_case_once():
    """Repeats that copy each other add no information: the design effect
    brings the interval back to that of the cases alone."""
    rng = np.random.default_rng(0)
    one = rng.choice([-1.0, 0.0, 1.0], p=[0.15, 0.8, 0.05], size=(80, 1))
    alone = paired_interval(one, 0.95, "pass_fail")
    copied = paired_interval(np.repeat(one, 3, axis=1), 0.95, "pass_fail")
    naive = tango(3 * float(np.sum(one == 1)), 3 * float(np.sum(one == -1)), 240.0, _z(0.95))
    assert copied.high - copied.low == pytest.approx(alone.high - alone.low, rel=0.03)
    assert naive[1] - naive[0] < 0.7 * (alone.high - alone.low)  # what ignoring clusters gives


def test_pass_fail_refuses_other_values():
    with pytest.raises(ValueError, match="-1, 0 or 1"):
        paired_interval(np.array([0.5, 0.0]), 0.95, "pass_fail")


def test_bounded_rate_bound_when_few_cases_disagree():
    """No case disagrees: whatever a disagreement's size up to the range, the
    mean is within range × Wilson's bound on the share that could disagree."""
    iv = paired_interval(np.zeros(40), FIRST_LOOK, "bounded", scale=1.0)
    bound = float(wilson_upper(0, 40, _z(FIRST_LOOK)))
    assert (iv.low, iv.high) == pytest.approx((-bound, bound))
    assert iv.method == "t + rate bound" and bound > 0.2
    at_pool = paired_interval(np.zeros(320), 0.9569, "bounded", scale=1.0)
    assert 0 < at_pool.high < 0.02  # the whole pool agreeing rules out relevance's margin
    few = np.zeros(40)
    few[:MIN_DISAGREEING - 1] = -0.01
    assert paired_interval(few, 0.95, "bounded", scale=1.0).method == "t + rate bound"
    few[MIN_DISAGREEING - 1] = -0.01
    assert paired_interval(few, 0.95, "bounded", scale=1.0).method == "t"


def test_t_interval_is_students_on_symmetric_differences():
    x = np.array([-0.03, -0.01, 0.015, 0.01, 0.03, -0.02, 0.02, -0.05, 0.05, 0.04, -0.04, 0.005,
                  -0.005, -0.015])
    iv = paired_interval(x, 0.95, "bounded", scale=1.0)
    ref = sps.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high))


def test_skewed_amounts_widen_the_long_side():
    """Right-skewed token differences: Hall's correction moves the upper
    bound beyond Student's (the side a lower-is-better amount is worse on)."""
    x = np.random.default_rng(3).lognormal(0, 1.0, 60) * 100
    iv = paired_interval(x, 0.99, "amount", scale=float(x.max()))
    ref = sps.ttest_1samp(x, 0.0).confidence_interval(0.99)
    assert iv.high > ref.high + 1 and iv.low == pytest.approx(ref.low)


def test_amount_scale_is_the_largest_value_either_arm_showed():
    assert disagreement_scale("amount", variant=[[1.0, 5.0]], control=[[7.0, np.nan]]) == 7.0
    assert disagreement_scale("bounded", bounds=(0.0, 5.0)) == 5.0
    assert disagreement_scale("pass_fail") is None
    with pytest.raises(ValueError, match="scale"):
        paired_interval(np.zeros(5), 0.95, "amount")


def test_first_look_pass_rate_beyond_its_margin_is_not_called_non_inferior():
    """The failure the bootstrap had: 40 cases, 6 % of pairs disagreeing (all
    pass → fail, a true loss of 0.06 against a 0.05 margin), the first look's
    confidence. The worse-side bound clears −0.05 in no study (the expanded
    cluster bootstrap: 8.7 % of studies, each on a zero-width interval)."""
    rng = np.random.default_rng(7)
    cleared = 0
    for _ in range(2000):
        d = -(rng.random((40, 1)) < 0.06).astype(float)
        iv = paired_interval(d, FIRST_LOOK, "pass_fail")
        cleared += iv.low > -0.05
        assert iv.high > iv.low
    assert cleared == 0
