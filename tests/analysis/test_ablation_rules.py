"""The ablation's verdict rules on constructed sweeps: errored cases cannot
flatter a variant, a zero-pass variant never ships, the control is chosen in
the documented order and never alphabetically."""

from __future__ import annotations

import json
import re
import zlib

import numpy as np
import pytest

from silas_exp.analysis.ablation import ablation, pick_control
from silas_exp.analysis.baseline import ControlArm
from silas_exp.analysis.data import BASELINE, JobData, SweepData
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.baselines import read_baseline
from silas_exp.errors import AnalysisError
from silas_exp.stats import Outcome

N_CASES, N_REPEATS = 18, 5
METRICS = ("context.retrieval_relevance", "ir.ndcg_at_10", "context.tokens_per_served_need")


def _job(variant, repeat, quality, status=None, rng=None):
    """quality[i]: the case's retrieval relevance / nDCG level; tokens fall with it."""
    rng = rng or np.random.default_rng(repeat)
    cases, st = {}, {}
    for i, q in enumerate(quality):
        cid = f"c{i:02d}"
        s = (status or {}).get(cid, "pass" if q >= 0.5 else "fail")
        st[cid] = s
        if s == "error":
            cases[cid] = {"summary.pass": 0.0, "summary.error": 1.0, "latency_ms": 1.0}
            continue
        noise = float(rng.normal(0, 0.005))
        cases[cid] = {"context.retrieval_relevance": q + noise, "ir.ndcg_at_10": q + noise,
                      "context.tokens_per_served_need": 1000 * (2 - q),
                      "summary.pass": float(s == "pass"), "summary.error": 0.0, "latency_ms": 1.0}
    return JobData(variant, repeat, {}, cases, status=st)


def _sweep(variants: dict[str, list[float]], errors: dict[str, set[str]] | None = None,
           **kw) -> SweepData:
    jobs = []
    for v, quality in variants.items():
        for r in range(N_REPEATS):
            status = {c: "error" for c in (errors or {}).get(v, ())}
            jobs.append(_job(v, r, quality, status, np.random.default_rng(zlib.crc32(f"{v}|{r}".encode()))))
    return SweepData("s1", "", jobs, **kw)


BASE = list(np.linspace(0.3, 0.95, N_CASES))  # hard cases first


def test_errored_hard_cases_cannot_flatter_a_variant():
    # the variant matches the control everywhere but errors on the 4 hardest cases in every
    # repeat: a mean over its completed cases would look better than the control's
    data = _sweep({"scorer=heuristic": BASE, "scorer=flaky": BASE},
                  errors={"scorer=flaky": {"c00", "c01", "c02", "c03"}})
    res = ablation(data)
    v = res.verdicts["scorer=flaky"]
    assert v.outcome is Outcome.DO_NOT_SHIP, v
    assert any(reason.startswith("errors:") for reason in v.reasons), v
    rr = next(c for c in res.table("context.retrieval_relevance") if c.variant == "scorer=flaky")
    assert rr.n_pairs == (N_CASES - 4) * N_REPEATS  # compared on cases both completed
    assert abs(rr.delta) < 0.01  # no flattering from the missing hard cases


def test_a_variant_that_fails_every_case_never_ships():
    data = _sweep({"eviction=two_tier": BASE, "eviction=truncate": [0.45] * N_CASES})
    v = ablation(data).verdicts["eviction=truncate"]
    assert v.outcome is Outcome.DO_NOT_SHIP and v.reasons[0] == "passes no case"


def test_identical_variant_ships_and_worse_one_is_stopped():
    # an unchanged pass/fail and token count on every case: 18 agreeing cases cannot rule
    # out a loss of the margin (inconclusive), the whole pool's 320 can (ship)
    worse = [q - 0.1 for q in BASE]
    data = _sweep({"scorer=heuristic": BASE, "scorer=same": BASE, "scorer=worse": worse})
    res = ablation(data)
    assert res.verdicts["scorer=same"].outcome is Outcome.INCONCLUSIVE
    pool = list(np.linspace(0.3, 0.95, 320))
    assert ablation(_sweep({"scorer=heuristic": pool, "scorer=same": pool})).verdicts[
        "scorer=same"].outcome is Outcome.SHIP
    assert res.verdicts["scorer=worse"].outcome is Outcome.DO_NOT_SHIP
    assert res.gated[:3] == sorted(METRICS)


def test_wide_interval_is_inconclusive_with_cases_needed():
    rng = np.random.default_rng(5)
    noisy = [q + float(rng.normal(0, 0.08)) for q in BASE]  # same mean, per-case spread
    data = _sweep({"scorer=heuristic": BASE, "scorer=noisy": noisy})
    v = ablation(data, AnalysisSettings(gate=["context.retrieval_relevance"])).verdicts[
        "scorer=noisy"]
    assert v.outcome is Outcome.INCONCLUSIVE and v.n_needed and v.n_needed > N_CASES


def test_control_order_explicit_then_baseline_arm_then_section_19_5():
    data = _sweep({"scorer=online": BASE, "scorer=prompt": BASE, "scorer=weights": BASE})
    with pytest.raises(AnalysisError, match="no control"):
        pick_control(data, AnalysisSettings())  # never "first alphabetically"
    assert pick_control(data, AnalysisSettings(control="scorer=weights"))[0] == "scorer=weights"
    with pytest.raises(AnalysisError, match="did not run the promoted baseline"):
        pick_control(data, AnalysisSettings(control=BASELINE))  # never a logged block
    data.control_arm = ControlArm("scorer=weights", ("scorer=weights",), "the suite's promoted "
                                  "baseline (…)", "r" * 32, "1")
    control, why = pick_control(data, AnalysisSettings())
    assert control == "scorer=weights" and why.startswith("the suite's promoted baseline")
    assert pick_control(data, AnalysisSettings(control=BASELINE))[0] == "scorer=weights"
    result = ablation(data)
    assert set(result.verdicts) == {"scorer=online", "scorer=prompt"}  # never against itself
    assert result.control == "scorer=weights"
    with pytest.raises(AnalysisError, match="no control"):  # the arm only when baselines are used
        pick_control(data, AnalysisSettings(use_baseline=False))
    data.control_arm = None
    data.jobs += _sweep({"scorer=heuristic": BASE}).jobs
    control, why = pick_control(data, AnalysisSettings())
    assert control == "scorer=heuristic" and "§19.5" in why
    with pytest.raises(AnalysisError, match="not a variant"):
        pick_control(data, AnalysisSettings(control="scorer=nope"))


def test_baseline_file_of_the_first_format_still_reads(tmp_path):
    job = {"metrics": {}, "run": {"results": [
        {"case_id": "c1", "status": "error", "latency_ms": 2.0, "token_cost": 0, "metrics": {}}]}}
    (tmp_path / "baseline.json").write_text(json.dumps(
        {"pins": {"run_id": "r1", "suite": "s", "suite_version": "1.0.0",
                  "variant": "scorer=weights"}, **job}))
    base = read_baseline(tmp_path)
    assert base.source_run_id == "r1" and base.overrides == ["scorer=weights"]
    assert base.jobs[0].results[0].status == "error"
    (tmp_path / "baseline.json").write_text("{}")
    with pytest.raises(AnalysisError, match="promote"):
        read_baseline(tmp_path)


def test_too_few_cases_decide_nothing():
    few = BASE[-4:]  # easy cases: both pass
    data = SweepData("s2", "", [j for v in ("scorer=heuristic", "scorer=same")
                                for j in _sweep({v: few}).jobs if len(j.cases) == 4])
    v = ablation(data).verdicts["scorer=same"]
    assert v.outcome is Outcome.INCONCLUSIVE and "only 4 paired cases" in v.reasons[0]
    assert v.n_needed >= 6


def test_parent_summary_and_html_carry_the_verdicts(tmp_path):
    from silas_exp.analysis.html import ablation_html
    from silas_exp.analysis.parent import parent_summary
    from silas_exp.metrics.names import safe_name

    worse = [q - 0.1 for q in BASE]
    res = ablation(_sweep({"scorer=heuristic": BASE, "scorer=worse": worse}))
    summary = parent_summary(res)
    assert summary.tags["silas.verdict.worse"] == "do_not_ship"  # as in margins vs …/worse.<metric>
    # −0.1 against a margin of 0.02: five margins worse (charts label two decimals)
    margins = "margins vs heuristic/worse"
    assert summary.metrics[f"{margins}.context.retrieval_relevance"] == pytest.approx(-5, abs=0.5)
    assert summary.metrics[f"{margins}.context.tokens_per_served_need"] < -1  # more tokens: worse
    [table] = summary.tables.values()
    [row] = [i for i, (v, m) in enumerate(zip(table["variant"], table["metric"], strict=True))
             if v == "scorer=worse" and m == "context.retrieval_relevance"]
    assert table["ci_high"][row] < -0.02 and table["margin"][row] == pytest.approx(0.02)
    assert "| scorer=worse | **do not ship** |" in summary.description
    first = summary.description.splitlines()[0]
    assert first.startswith("**No variant may ship: scorer=worse is blocked by")
    assert re.search(r"retrieval relevance −0\.(1\d*|09\d+) \(margin: worse by at most 0\.02\)",
                     first), first
    assert summary.tags["mlflow.runName"].startswith("0✓ 1✗ 0? · ")
    assert safe_name("scorer=a,eviction=b") == "scorer_a.eviction_b"
    page = ablation_html(res, [])
    assert "do not ship" in page and "<table>" in page and "Verdict rule" in page


def test_a_variant_can_be_read_at_a_confidence_of_its_own():
    # a sequential study reads each variant at the look it stopped at
    rng = np.random.default_rng(5)
    noisy = [q + float(rng.normal(0, 0.08)) for q in BASE]
    data = _sweep({"scorer=heuristic": BASE, "scorer=a": noisy, "scorer=b": noisy})

    def ci(res, variant):
        c = next(c for c in res.table("context.retrieval_relevance") if c.variant == variant)
        return c.ci_low, c.ci_high

    plain = ablation(data, AnalysisSettings(confidence=0.95))
    own = ablation(data, AnalysisSettings(confidence=0.95), confidence_of={"scorer=a": 0.999})
    assert ci(own, "scorer=b") == ci(plain, "scorer=b") and own.confidence == 0.95
    (lo, hi), (lo95, hi95) = ci(own, "scorer=a"), ci(plain, "scorer=a")
    assert lo < lo95 and hi > hi95 and (hi - lo) > 1.15 * (hi95 - lo95)


def test_a_blocker_is_common_only_when_it_reads_the_same_for_every_variant():
    from silas_exp.analysis.decision import decision_sentence

    rng = np.random.default_rng(3)
    far = [q - 0.1 for q in BASE]  # beyond the margin: its Δ is printed
    near = [q - 0.02 + float(rng.normal(0, 0.03)) for q in BASE]  # around the margin: undecided
    res = ablation(_sweep({"scorer=heuristic": BASE, "scorer=far": far, "scorer=near": near}))
    assert res.verdicts["scorer=far"].outcome is Outcome.DO_NOT_SHIP
    assert res.verdicts["scorer=near"].outcome is not Outcome.SHIP
    sentence = decision_sentence(res)
    far_delta = next(c for c in res.comparisons if c.variant == "scorer=far"
                     and c.metric == "context.retrieval_relevance").delta
    assert f"{far_delta:+.4g}".replace("-", "−") in sentence
    assert "every one is blocked by retrieval relevance −" not in sentence, sentence


def test_a_named_control_is_found_however_its_overrides_are_typed():
    # a swept boolean is named as Hydra writes it (False); users type false, in any order
    data = _sweep({"eviction.keepbacks=False,scorer=heuristic": BASE,
                   "eviction.keepbacks=True,scorer=heuristic": BASE})
    control, why = pick_control(data, AnalysisSettings(control="scorer=heuristic,eviction.keepbacks=false"))
    assert control == "eviction.keepbacks=False,scorer=heuristic" and "analysis.control" in why
    with pytest.raises(AnalysisError, match="is not a variant of sweep"):
        pick_control(data, AnalysisSettings(control="scorer=weights"))


def test_a_look_computes_the_verdicts_alone_and_reaches_the_same_ones():
    """descriptive=False (what a sequential study's look asks for) skips the
    p-values and the ranking, and every verdict, call, interval and count of
    cases needed is the full ablation's."""
    data = _sweep({"scorer=heuristic": BASE, "scorer=same": BASE,
                   "scorer=worse": [q - 0.1 for q in BASE],
                   "scorer=edge": [q - 0.02 for q in BASE]})
    full, look = ablation(data), ablation(data, descriptive=False)
    assert {v: (x.outcome, x.reasons, x.n_needed) for v, x in full.verdicts.items()} == \
        {v: (x.outcome, x.reasons, x.n_needed) for v, x in look.verdicts.items()}
    key = lambda c: (c.variant, c.metric)  # noqa: E731
    assert [(key(c), c.call, c.ci_low, c.ci_high) for c in full.comparisons] == \
        [(key(c), c.call, c.ci_low, c.ci_high) for c in look.comparisons]
    assert all(np.isnan(c.p_perm) and np.isnan(c.p_adjusted) for c in look.comparisons)
    assert not any(np.isnan(c.p_perm) for c in full.comparisons)
