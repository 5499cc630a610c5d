"""The ship rule: non-inferiority against a margin, three outcomes, and error
rates that hold in simulation (bench/bench_verdict.py runs the 500-ablation
version and reports power)."""

from __future__ import annotations

import math

import pytest

from silas_exp.stats import (
    MetricCall,
    Oriented,
    Outcome,
    cases_needed,
    combine,
    metric_call,
    sprt_with_pilot,
)
from silas_exp.stats.simulation import Scenario, simulate_calls


def test_orientation_follows_the_declared_direction():
    # a lower-is-better metric that went down by 0.1 is an improvement of 0.1
    d = Oriented.of(-0.1, -0.15, -0.05, "lower")
    assert (d.estimate, d.low, d.high) == (0.1, 0.05, 0.15)
    with pytest.raises(ValueError):
        Oriented.of(0.0, 0.0, 0.0, "none")


@pytest.mark.parametrize("low,high,call", [
    (-0.01, 0.04, MetricCall.NONINFERIOR),  # worst case -0.01, margin 0.02: within
    (-0.05, -0.03, MetricCall.INFERIOR),     # best case -0.03: worse beyond the margin
    (-0.04, 0.01, MetricCall.UNDECIDED),     # crosses -0.02: the data cannot tell
    (-0.019, -0.001, MetricCall.NONINFERIOR),  # significantly worse, yet within the margin
])
def test_metric_call_against_margin(low, high, call):
    assert metric_call(Oriented((low + high) / 2, low, high), 0.02) is call


def test_not_significantly_worse_is_not_ship():
    # the old rule's blind spot: a wide CI around a large loss is "no detectable difference"
    assert metric_call(Oriented(-0.3, -0.9, 0.2), 0.02) is MetricCall.UNDECIDED
    assert combine({"a": MetricCall.UNDECIDED, "b": MetricCall.NONINFERIOR}) is Outcome.INCONCLUSIVE
    assert combine({"a": MetricCall.INFERIOR, "b": MetricCall.UNDECIDED}) is Outcome.DO_NOT_SHIP
    assert combine({"a": MetricCall.NONINFERIOR}) is Outcome.SHIP
    assert combine({}) is Outcome.INCONCLUSIVE


def test_cases_needed_shrinks_the_interval_to_the_margin():
    d = Oriented(0.0, -0.04, 0.04)  # half-width 0.04, gap to the margin 0.02: 4x the cases
    assert cases_needed(d, 0.02, 18) == 72
    assert cases_needed(Oriented(-0.02, -0.05, 0.01), 0.02, 18) is None  # on the margin


def test_boundary_variant_ships_at_most_alpha():
    # truly worse by exactly the margin: "ship" is the error; the one-sided level is 2.5%
    rates = simulate_calls(Scenario(delta=-0.02, margin=0.02), n_sims=300, seed=1)
    assert rates[MetricCall.NONINFERIOR] <= 0.05, rates  # 2.5% + 2 binomial SEs at n=300


def test_small_suites_need_the_expanded_interval():
    # six cases: the plain percentile bootstrap ships a boundary variant far too often
    s = Scenario(delta=-0.02, margin=0.02, n_cases=6, n_repeats=3)
    plain = simulate_calls(s, n_sims=300, seed=2, expanded=False,
                           interval="bootstrap")[MetricCall.NONINFERIOR]
    fixed = simulate_calls(s, n_sims=300, seed=2, expanded=True,
                           interval="bootstrap")[MetricCall.NONINFERIOR]
    verdict = simulate_calls(s, n_sims=300, seed=2)[MetricCall.NONINFERIOR]
    assert plain > 0.05 and fixed < plain and verdict <= 0.05, (plain, fixed, verdict)


def test_identical_variant_is_never_stopped_and_usually_ships():
    # se of the mean difference ~0.0053, so the worse bound sits near -0.012 > -0.02
    rates = simulate_calls(Scenario(delta=0.0, margin=0.02, case_sd=0.02), n_sims=200, seed=3)
    assert rates[MetricCall.INFERIOR] == 0.0
    assert rates[MetricCall.NONINFERIOR] >= 0.8, rates
    # with noisier cases the same suite cannot show it: inconclusive, still never stopped
    noisy = simulate_calls(Scenario(delta=0.0, margin=0.02, case_sd=0.08), n_sims=100, seed=4)
    assert noisy[MetricCall.UNDECIDED] > 0.5 and noisy[MetricCall.INFERIOR] == 0.0


def test_sprt_with_pilot_accepts_h0_under_the_null():
    import numpy as np

    rng = np.random.default_rng(0)
    decisions = [sprt_with_pilot(rng.normal(0, 1, 200), delta=0.5).decision for _ in range(200)]
    h1 = decisions.count("accept_h1") / len(decisions)
    assert decisions.count("accept_h0") / len(decisions) >= 0.85
    assert h1 <= 0.10  # alpha 0.05, with sigma from a 5-value pilot
    with pytest.raises(ValueError):
        sprt_with_pilot([0.1, 0.2], delta=0.5)
    assert math.isnan(sprt_with_pilot(rng.normal(0, 1, 50), delta=0.5).sigma) is False
