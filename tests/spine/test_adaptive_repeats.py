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


def test_later_rounds_repeat_only_the_noisy_cases(cli, tmp_path):
    """repeats=auto on 20 cases of five kinds: after the two rounds of every case each
    case's repeats follow its within-case sd predicted from the other cases of its kind
    (relative to all the others'); the later rounds run fewer (case, repeat) pairs than
    20 a round (75 of 80 per arm, simulated model), the same ones for the control and the
    variant, and the report comes out with its verdict. The margins keep the variant open
    past the first look."""
    from silas_exp.records import sweep_job_results

    res = cli("-m", "scorer=heuristic,weights", "repeats=auto", "repeats_max=4", "suite=default",
              "suite.max_cases=20", "cases_per_block=null", "tracking=none",
              "analysis.gate=[context.retrieval_relevance]",
              "++analysis.margins={summary.pass:0.6,context.retrieval_relevance:0.021}")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep = tmp_path / "multirun"
    state = json.loads((sweep / "adaptive.json").read_text())
    counts, sd = state["allocation"], state["predicted_sd"]
    assert len(counts) == 20 and 2 <= min(counts.values()) < max(counts.values()) == 4
    assert all(sd[a] > sd[b] for a in counts for b in counts if counts[a] > counts[b])
    ran: dict[tuple[str, int], set[str]] = {}
    for folder, job in sweep_job_results(sweep):
        ran[job.variant, job.repeat] = {r.case_id for r in job.cases(folder)}
    arms = {v for v, _ in ran}
    assert len(arms) == 2 and {r for _, r in ran} == {0, 1, 2, 3}
    for r in range(4):
        wanted = {c for c, n in counts.items() if n > r}
        assert all(ran[v, r] == wanted for v in arms)  # paired: both arms, the same cases
    pairs = sum(len(ran[v, r]) for v, r in ran if v == min(arms))
    assert pairs == sum(counts.values()) < 20 * 4
    report = (sweep / "ablation.md").read_text()
    assert "repeats where the noise is" in report and "scorer=weights" in report
    assert "stopped after 4 repeat(s)" in report


def test_the_allocation_is_part_of_the_resumed_state(tmp_path):
    """adaptive.json keeps the counts: a resumed study (the same plan) reads them back
    and runs a case's repeat r only below its count."""
    from silas_exp.analysis.settings import AnalysisSettings
    from silas_exp.study.state import AdaptiveState

    state = AdaptiveState.plan(AnalysisSettings(), 2, 4)
    state.looked, state.allocation, state.predicted_sd = [2], {"a": 2, "b": 4}, {"a": 0.1, "b": 0.9}
    state.write(tmp_path)
    resumed = AdaptiveState.plan(AnalysisSettings(), 2, 4).continued(tmp_path)
    assert resumed.allocation == {"a": 2, "b": 4} and resumed.predicted_sd == state.predicted_sd
    assert [r for r in range(4) if resumed.runs("a", r)] == [0, 1]
    assert [r for r in range(4) if resumed.runs("b", r)] == [0, 1, 2, 3]
    assert AdaptiveState.plan(AnalysisSettings(), 2, 4).runs("a", 3)  # before the allocation: every case
