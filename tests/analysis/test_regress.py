"""The regression check on constructed results: the verdict rule alone decides,
§20.5's flags come with the count noise alone gives, simulated latency is never
flagged, and too few cases never pass the gate."""

from __future__ import annotations

import numpy as np

from silas_exp.analysis.data import JobData
from silas_exp.analysis.regress import case_flags, regress
from silas_exp.stats import Outcome

N = 200


def _job(repeat: int, seed: int, shift: float = 0.0, cases: int = N, latency: float = 50.0,
         job_shift: float = 0.0) -> JobData:
    """Cases around the pass threshold (relevance >= 0.7), with per-seed noise;
    ``job_shift`` moves every case's nDCG@10 together (what a seed drawn once
    per job, like the weights scorer's calibration, does)."""
    rng = np.random.default_rng(seed)
    level = np.linspace(0.55, 0.9, cases)
    rows, status = {}, {}
    for i, q in enumerate(level + rng.normal(0, 0.01, cases) - shift):
        cid = f"case-{i:03d}"
        status[cid] = "pass" if q >= 0.7 else "fail"
        rows[cid] = {"context.retrieval_relevance": q, "ir.ndcg_at_10": q - 0.2 + job_shift,
                     "context.tokens_per_served_need": 1000.0 * (1 + shift),
                     "summary.pass": float(q >= 0.7), "summary.error": 0.0,
                     "latency_ms": latency * (1 + rng.random())}
    return JobData("x", repeat, {}, rows, status=status)


def _check(checked, baseline, aa=(), latency=False):
    return regress(checked, baseline, subject="configuration `scorer=weights`",
                   baseline_name="`scorer=weights` (run abcdef12)", baseline_run_id="a" * 32,
                   aa=aa, latency=latency)


def test_unchanged_configuration_is_no_regression_with_flags_near_noise():
    base = _job(0, seed=0)
    report = _check([_job(0, seed=1)], [base], aa=[_job(0, seed=2)])
    assert report.outcome is Outcome.SHIP and not report.regressed
    assert report.decision == "no regression" and report.cases == N and report.compared == N
    flips = report.flag_counts()["pass"]
    assert flips > 0 and abs(flips - report.expected["pass"]) < 3 * np.sqrt(flips + 1)
    md = report.markdown()
    assert "## Regression check: no regression" in md
    assert f"pass → fail: {flips}, ≈ " in md and "expected from noise" in md
    assert "latency +50%: not checked (the simulated model's latency" in md
    assert report.headline().startswith("**Regression check: no regression** — configuration")


def test_worse_by_twice_the_margins_is_a_regression():
    report = _check([_job(0, seed=1, shift=0.04)], [_job(0, seed=0)], aa=[_job(0, seed=2)])
    assert report.outcome is Outcome.DO_NOT_SHIP and report.regressed
    assert report.flag_counts()["pass"] > report.expected["pass"] + 5
    accepted = report.headline("a known cost (by ci, 2026-11-27T00:00:00+00:00)")
    assert accepted.startswith("**Regression check: REGRESSION (accepted: a known cost (by ci,")


def test_too_few_cases_never_pass_the_gate():
    report = _check([_job(0, seed=1, cases=4)], [_job(0, seed=0, cases=4)])
    assert report.outcome is Outcome.INCONCLUSIVE and report.regressed
    assert report.decision == "regression not ruled out" and "only 4 paired cases" in report.reasons()


def test_expected_counts_from_the_baselines_own_repeats_and_cases_it_covers():
    base = [_job(0, seed=0), _job(1, seed=10)]
    partial = _job(1, seed=10)
    for cid in list(partial.cases)[:20]:
        del partial.cases[cid]
    report = _check([_job(0, seed=0), partial], base)  # the same streams, 20 results missing
    assert report.flag_counts()["pass"] == 0 and report.expected["pass"] > 0  # between repeats
    assert "the baseline's own 2 repeats" in report.expected_from
    assert report.compared == 2 * N - 20
    assert report.notes[0].startswith("20 (case, repeat) result(s) of the baseline have none")


def test_latency_is_flagged_only_for_real_models():
    was, now = _job(0, seed=0, latency=50.0), _job(0, seed=0, latency=200.0)
    assert not [f for f in case_flags(now, was, latency=False) if f.kind == "latency"]
    flagged = [f for f in case_flags(now, was, latency=True) if f.kind == "latency"]
    assert len(flagged) > N // 2 and flagged[0].text.startswith("latency ")


AA_SHIFTS = (0.03, -0.03, 0.02, -0.025)  # A/A runs: the same configuration under other seeds


def _aa() -> list[JobData]:
    return [_job(0, seed=20 + k, job_shift=x) for k, x in enumerate(AA_SHIFTS)]


def _ndcg(report):
    return next(c for c in report.result.comparisons
                if c.variant == "checked" and c.metric == "ir.ndcg_at_10")


def test_a_job_level_shift_under_other_seeds_is_not_called_a_regression():
    base, checked = _job(0, seed=0), _job(0, seed=1, job_shift=-0.04)
    same_rule = _check([checked], [base], aa=_aa())  # as if the seeds were the baseline's
    assert same_rule.outcome is Outcome.DO_NOT_SHIP and "nDCG" in same_rule.reasons()
    narrow = _ndcg(same_rule)
    report = regress([checked], [base], subject="configuration (other seeds)",
                     baseline_name="b", baseline_run_id="a" * 32, aa=_aa(), other_seeds=True)
    wide = _ndcg(report)
    assert report.outcome is Outcome.INCONCLUSIVE and report.decision == "regression not ruled out"
    assert wide.delta == narrow.delta and wide.ci_low < narrow.ci_low - 0.03
    assert wide.ci_high > -wide.margin  # the seed part reaches past the margin: undecided
    assert any("between-seed variance of a job-level shift" in n and "4 pair(s)" in n
               for n in report.notes)


def test_twice_the_margins_under_other_seeds_is_still_a_regression():
    report = regress([_job(0, seed=1, shift=0.04, job_shift=0.01)], [_job(0, seed=0)],
                     subject="worse", baseline_name="b", baseline_run_id="a" * 32, aa=_aa(),
                     other_seeds=True)
    assert report.outcome is Outcome.DO_NOT_SHIP
    assert "relevance worse beyond its margin" in report.reasons()


def test_other_seeds_without_any_seed_pair_decide_nothing():
    report = regress([_job(0, seed=1)], [_job(0, seed=0)], subject="s", baseline_name="b",
                     baseline_run_id="a" * 32, other_seeds=True)
    assert report.outcome is Outcome.INCONCLUSIVE
    assert "cannot be measured" in report.notes[0]
    assert all(c.call.value == "undecided" for c in report.result.comparisons
               if c.variant == "checked" and c.call is not None)


def test_the_baselines_repeats_measure_the_seed_level_shift():
    base = [_job(r, seed=10 + r, job_shift=x) for r, x in enumerate((0.0, 0.03, -0.02))]
    checked = [_job(r, seed=30 + r, job_shift=-0.035) for r in range(3)]
    report = regress(checked, base, subject="s", baseline_name="b", baseline_run_id="a" * 32,
                     other_seeds=True)
    assert "(t with 2 df" in report.notes[0] and "3 pair(s)" in report.notes[0]
    assert report.outcome is not Outcome.DO_NOT_SHIP
