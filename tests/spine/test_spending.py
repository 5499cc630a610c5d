"""Group-sequential boundaries of a study over blocks of new cases: the
spending plan is what it says (checked against an independent computation
and a simulation), conservative after rounding, and a sweep reads each
variant at the look it stopped at."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.stats.sequential import spending_bounds, spending_confidences
from silas_exp.study.state import AdaptiveState, adaptive_notes

FRACTIONS = (1 / 8, 2 / 8, 4 / 8, 1.0)  # the default pool's looks: blocks 1, 2, 4, 8 of 8


def _crossing_by_look(bounds, fractions) -> list[float]:
    """P(first crossing at look k), from scipy's multivariate normal CDF."""
    t = np.asarray(fractions)
    corr = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    below = [norm.cdf(bounds[0])]
    for k in range(1, len(t)):
        below.append(multivariate_normal(mean=np.zeros(k + 1), cov=corr[:k + 1, :k + 1],
                                         abseps=1e-7, releps=0, seed=1).cdf(np.array(bounds[:k + 1])))
    return list(np.diff([1.0, *below]) * -1)


def test_one_look_is_the_plain_one_sided_test():
    assert spending_bounds((1.0,), 0.025) == (pytest.approx(1.960, abs=1e-3),)


@pytest.mark.parametrize("rho", [1.0, 2.0, 3.0])
def test_each_look_spends_what_the_power_function_allows(rho):
    bounds = spending_bounds(FRACTIONS, 0.025, rho)
    spent = 0.025 * np.asarray(FRACTIONS) ** rho
    crossing = _crossing_by_look(bounds, FRACTIONS)
    # rounding each boundary up to 1e-3 may only spend less, never more
    assert np.all(np.asarray(crossing) <= np.diff([0.0, *spent]) + 2e-6), (crossing, spent)
    assert sum(crossing) == pytest.approx(0.025, abs=2.5e-4)
    assert list(bounds) == sorted(bounds, reverse=True)  # the power family keeps early looks strict


def test_simulated_random_walks_cross_at_the_planned_rate():
    rng = np.random.default_rng(7)
    bounds = np.array(spending_bounds(FRACTIONS, 0.025))
    steps = rng.standard_normal((400_000, 8)).cumsum(axis=1)  # one column per block, unit variance
    z = steps[:, [0, 1, 3, 7]] / np.sqrt([1, 2, 4, 8])
    crossed = (z >= bounds).any(axis=1).mean()
    assert crossed == pytest.approx(0.025, abs=0.0008)  # ~3.2 standard errors
    # the looks are worth having: the last boundary is far under Bonferroni's 2.50
    assert bounds[-1] < norm.isf(0.025 / 4) - 0.4


def test_fractions_must_rise_to_one():
    with pytest.raises(ValueError, match="increase to 1"):
        spending_bounds((0.5, 0.4, 1.0), 0.025)
    with pytest.raises(ValueError, match="increase to 1"):
        spending_bounds((0.25, 0.5), 0.025)


def test_a_plan_over_blocks_reads_each_look_at_its_boundary():
    state = AdaptiveState.plan_blocks(AnalysisSettings(), 8, 40, 320, seed=0)
    assert state.looks == [1, 2, 4, 8]
    assert state.confidences == spending_confidences(0.95, FRACTIONS)
    assert state.confidence == state.confidences[-1] < 1 - 0.05 / 4  # the last look: narrower
    assert [state.confidence_at(r) for r in (1, 2, 3, 4, 5, 8)] == [
        state.confidences[i] for i in (0, 1, 2, 2, 3, 3)]
    # a pool that is not a whole number of blocks: the last look is the whole pool
    short = AdaptiveState.plan_blocks(AnalysisSettings(), 3, 40, 100, seed=0)
    assert short.looks == [1, 2, 3] and short.confidences == spending_confidences(
        0.95, (0.4, 0.8, 1.0))
    state.closed = {"a=1": {"round": 1, "outcome": "do_not_ship", "why": "x"},
                    "a=2": {"round": 8, "outcome": "ship", "why": "y"}}
    assert state.closed_confidences() == {"a=1": state.confidences[0],
                                          "a=2": state.confidences[-1]}
    notes = "\n".join(adaptive_notes(state))
    assert "Kim–DeMets" in notes and f"read at {state.confidences[0]:.2%}" in notes


def test_a_state_written_before_per_look_boundaries_still_reads(tmp_path):
    old = AdaptiveState(1, 8, [1, 2, 4, 8], 1 - 0.05 / 4, unit="block", cases_per_block=40,
                        pool_cases=320, seed=0)
    old.write(tmp_path)
    back = AdaptiveState.read(tmp_path)
    assert back is not None and back.confidence_at(2) == 1 - 0.05 / 4
    assert "Bonferroni" in adaptive_notes(back)[0]


def test_a_resumed_study_launches_each_round_for_the_variants_open_then():
    from silas_exp.study.loop import run_looks

    state = AdaptiveState.plan_blocks(AnalysisSettings(), 4, 10, 40, seed=0)
    assert state.looks == [1, 2, 4]
    # as recorded by the interrupted study: b stopped at the look after block 2
    state.control, state.looked = "c", [1, 2]
    state.closed = {"b": {"round": 2, "outcome": "ship", "why": "decided"}}
    batches, looked = [], []
    run_looks(state, {"c": "C", "a": "A", "b": "B"}, lambda r, jobs: [(r, j) for j in jobs],
              lambda batch, index: batches.append((index, batch)), looked.append)
    assert batches == [(0, [(0, "C"), (0, "A"), (0, "B")]), (3, [(1, "C"), (1, "A"), (1, "B")]),
                       (6, [(2, "C"), (2, "A"), (3, "C"), (3, "A")])]
    assert looked == [1, 2, 4]
