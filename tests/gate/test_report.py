"""The regression check on constructed results: the verdict rule alone decides,
§20.5's flags come with the count noise alone gives, simulated latency is never
flagged, and too few cases never pass the gate."""

from __future__ import annotations

import numpy as np

from silas_exp.analysis.data import JobData
from silas_exp.gate.report import case_flags, regress
from silas_exp.metrics.numbers import num
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


def _ndcg(report):
    return next(c for c in report.result.comparisons
                if c.variant == "checked" and c.metric == "ir.ndcg_at_10")


def _other_seeds(checked, control, base=None):
    return regress([checked], [base or _job(0, seed=0)], subject="configuration (other seeds)",
                   baseline_name="b", baseline_run_id="a" * 32, control=[control])


def test_under_other_seeds_a_shift_the_seeds_share_is_not_a_regression():
    """A seed drawn once per job (the weights scorer's calibration) moves every
    case of the job: against the logged results an unchanged configuration
    looks worse beyond the margin; against the baseline's configuration under
    the same seeds it is not."""
    base = _job(0, seed=0)
    rerun, checked = _job(0, seed=1, job_shift=-0.04), _job(0, seed=1, job_shift=-0.04)
    logged_only = _check([checked], [base])
    assert logged_only.outcome is Outcome.DO_NOT_SHIP and "nDCG" in logged_only.reasons()
    report = _other_seeds(checked, rerun, base)
    assert report.outcome is Outcome.SHIP and report.decision == "no regression"
    assert _ndcg(report).delta == 0.0 and _ndcg(logged_only).delta < -0.03
    note = report.notes[0]
    assert "a concurrent control" in note and "nDCG@10 −0.04" in note
    assert "| gated metric | checked | baseline's configuration, same seeds | Δ [CI] | margin |" \
        in report.markdown()
    flips = report.flag_counts()["pass"]  # flags still compare with the logged results
    assert flips == round(report.expected["pass"]) and "under the check's seeds" in report.expected_from


def test_twice_the_margins_under_other_seeds_is_a_regression():
    rerun = _job(0, seed=1, job_shift=0.02)
    report = _other_seeds(_job(0, seed=1, shift=0.04, job_shift=0.02), rerun)
    assert report.outcome is Outcome.DO_NOT_SHIP
    assert "relevance worse beyond its margin" in report.reasons()


def test_the_control_pairs_only_the_cases_the_baseline_covers():
    base = _job(0, seed=0, cases=50)
    report = _other_seeds(_job(0, seed=1), _job(0, seed=1), base)
    assert report.cases == 50 and report.compared == 50
    assert all(c.n_cases == 50 for c in report.result.comparisons if c.variant == "checked")


def test_no_regression_says_what_the_rule_let_through():
    """Worse by half the relevance margin on 600 cases: no regression (the rule
    allows it), with a warning line for each gated metric significantly worse
    within its margin (19 pass → fail against ≈ 13 from noise is not beyond it)."""
    report = _check([_job(0, seed=1, shift=0.01, cases=600)], [_job(0, seed=0, cases=600)],
                    aa=[_job(0, seed=2, cases=600)])
    assert report.outcome is Outcome.SHIP and report.decision == "no regression"
    warned = "\n".join(report.warnings)
    assert "retrieval relevance is worse than the control within its margin" in warned
    assert "pass rate is worse than the control within its margin" in warned
    assert "more than noise gives" not in warned
    assert "**Warning:** retrieval relevance" in report.markdown()
    assert "\nwarning: retrieval relevance" in report.headline()
    clean = _check([_job(0, seed=1, cases=600)], [_job(0, seed=0, cases=600)],
                   aa=[_job(0, seed=2, cases=600)])
    assert clean.outcome is Outcome.SHIP and clean.warnings == []


def test_one_word_per_decision_and_the_sweeps_numbers():
    """The tag reads as the description does, and the report's numbers take the
    sweep's forms: four significant digits, the margin as "worse by at most"."""
    reports = [_check([_job(0, seed=1)], [_job(0, seed=0)], aa=[_job(0, seed=2)]),
               _check([_job(0, seed=1, shift=0.04)], [_job(0, seed=0)]),
               _check([_job(0, seed=1, cases=4)], [_job(0, seed=0, cases=4)])]
    assert [r.tag for r in reports] == ["no_regression", "regression", "regression_not_ruled_out"]
    for r in reports:
        head = r.headline().removeprefix("**Regression check: ").split("**")[0]
        assert head.lower() == r.tag.replace("_", " ")
    md = reports[0].markdown()
    row = next(line for line in md.splitlines() if "(`context.tokens_per_served_need`) |" in line)
    assert "| worse by at most 50 |" in row  # 5 % of the logged mean, 1,000 tokens
    relevance = next(c for c in reports[0].gated() if c.metric == "context.retrieval_relevance")
    assert f"| {num(relevance.mean)} | {num(relevance.control_mean)} | " in md
    assert "95% two-sided confidence" in md and "+0.0000" not in md
    figures = reports[1].figures()
    assert figures["regress.cases"] == N and figures["regress.flags.pass"] > 0
    assert figures["regress.context.retrieval_relevance.margin"] == 0.02
    assert "regress.flags.latency" not in figures  # the simulated model's latency: not checked
