"""repeats=auto: the sweep runs in rounds and stops a variant once its verdict
is settled or more repeats cannot decide; error rates hold in simulation."""

from __future__ import annotations

import json

from silas_exp.stats.sequential import look_confidence, look_rounds, projected_half_width
from silas_exp.stats.simulation import Scenario, simulate_adaptive


def test_look_plan_spends_alpha_over_few_looks():
    assert look_rounds(2, 10) == [2, 4, 8, 10] and look_rounds(2, 5) == [2, 4, 5]
    assert look_confidence(0.95, 4) == 1 - 0.05 / 4


def test_more_repeats_shrink_only_the_within_case_part():
    import numpy as np

    rng = np.random.default_rng(0)
    between_only = rng.normal(0, 0.05, size=(20, 1)) + np.zeros((20, 3))
    assert projected_half_width(between_only, 0.02, 100) == 0.02  # nothing to gain
    noisy = rng.normal(0, 0.05, size=(400, 3))  # all within-case noise: ~1/sqrt(100/3)
    assert projected_half_width(noisy, 0.02, 100) < 0.02 / 3


def test_adaptive_rule_keeps_its_error_rate_and_saves_repeats():
    boundary = simulate_adaptive(Scenario(-0.02, 0.02, case_sd=0.02), 2, 5, n_sims=150, seed=3)
    assert boundary["non-inferior"] <= 0.04, boundary  # declared 2.5%, +SE at n=150
    same = simulate_adaptive(Scenario(0.0, 0.02, case_sd=0.02), 2, 5, n_sims=100, seed=4)
    assert same["worse beyond margin"] == 0.0 and same["non-inferior"] >= 0.55, same
    assert same["mean_repeats"] < 4.0


def test_sweep_runs_in_rounds_and_stops_undecidable_variants(cli, tmp_path):
    res = cli("-m", "scorer=heuristic,weights", "repeats=auto", "repeats_max=4", "suite=smoke",
              "tracking=none")
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = [line for line in res.stdout.splitlines() if line.startswith("[job ")]
    assert len(jobs) == 4, res.stdout  # two rounds of two variants, not 4 x 2
    state = json.loads((tmp_path / "multirun" / "adaptive.json").read_text())
    assert state["closed"]["scorer=weights"]["round"] == 2
    assert "repeats cannot add cases" in state["closed"]["scorer=weights"]["why"]
    report = (tmp_path / "multirun" / "ablation.md").read_text()
    assert "repeats=auto" in report and "stopped after 2 repeat(s)" in report
