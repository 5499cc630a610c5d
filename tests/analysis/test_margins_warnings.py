"""A relative margin fixed once per study, and the warning lines of what the
verdict rule lets through."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from silas_exp.analysis.ablation import ablation
from silas_exp.analysis.columns import data_table
from silas_exp.analysis.data import JobData, SweepData
from silas_exp.analysis.let_through import flags_beyond, pass_flips
from silas_exp.analysis.margins import margins_from_baseline
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.records import SweepEnd
from silas_exp.run.exit_policy import gate_failures
from silas_exp.stats import Outcome
from silas_exp.study.looks import look_and_close
from silas_exp.study.state import AdaptiveState, read_as_decided

TOKENS = "context.tokens_per_served_need"
CONTROL, VARIANT = "scorer=heuristic", "scorer=weights"


def _job(variant: str, n: int, tokens: np.ndarray, relevance: np.ndarray,
         passed: np.ndarray) -> JobData:
    cases, status = {}, {}
    for i in range(n):
        cid = f"c{i:03d}"
        status[cid] = "pass" if passed[i] else "fail"
        cases[cid] = {TOKENS: float(tokens[i]), "context.retrieval_relevance": float(relevance[i]),
                      "ir.ndcg_at_10": float(relevance[i]), "summary.pass": float(passed[i]),
                      "summary.error": 0.0, "latency_ms": 1.0}
    return JobData(variant, 0, {}, cases, status=status)


def _study(n: int, tokens_rise: float = 0.0, relevance_drop: float = 0.0,
           flips: int = 0) -> SweepData:
    rng = np.random.default_rng(1)
    tokens = np.linspace(6000, 14000, 320)[:n]  # later cases cost more: the mean moves by look
    rel = 0.7 + 0.2 * rng.random(320)[:n]
    passed = np.ones(n, bool)
    v_passed = passed.copy()
    v_passed[:flips] = False
    v_rel = rel - relevance_drop + rng.normal(0, 0.002, n)
    return SweepData("s", "", [_job(CONTROL, n, tokens, rel, passed),
                               _job(VARIANT, n, tokens * (1 + tokens_rise) + rng.normal(0, 5, n),
                                    v_rel, v_passed)])


def test_relative_margin_is_fixed_at_the_first_look_and_kept():
    settings = AnalysisSettings()
    state = AdaptiveState.plan_blocks(settings, 8, 40, 320, 0)
    first = look_and_close(_study(40), settings, state, 1)
    fixed = state.margins[TOKENS]
    assert fixed == 0.05 * np.mean(np.linspace(6000, 14000, 320)[:40])
    assert "first look" in state.margins_from
    second = look_and_close(_study(80), settings, state, 2)
    margin = {r: next(c.margin for c in res.comparisons if c.metric == TOKENS)
              for r, res in (("first", first), ("second", second))}
    assert margin["first"] == margin["second"] == fixed  # the control's mean moved; not it
    reread, _, notes = read_as_decided(AdaptiveState.from_json(_json(state)), settings)
    assert reread.margins[TOKENS] == fixed and any("fixed for the whole study" in n for n in notes)
    assert next(c.margin for c in ablation(_study(160), reread).comparisons
                if c.metric == TOKENS) == fixed


def _json(state: AdaptiveState) -> str:
    import json
    from dataclasses import asdict

    return json.dumps(asdict(state))


def test_a_gate_fixes_the_margin_from_the_baselines_logged_results():
    results = [SimpleNamespace(case_id=f"c{i}", status="pass", metrics={TOKENS: 1000.0 * i})
               for i in range(1, 5)] + [SimpleNamespace(case_id="c9", status="error",
                                                        metrics={TOKENS: 1e9})]
    record = SimpleNamespace(jobs=[SimpleNamespace(results=results)])
    assert margins_from_baseline(record) == {TOKENS: 0.05 * 2500.0}
    given = AnalysisSettings(margins={TOKENS: 10.0})
    assert margins_from_baseline(record, given) == {}  # a margin given is not replaced


def test_a_shipping_variant_worse_within_its_margin_gets_a_warning():
    data = _study(320, relevance_drop=0.01, flips=6)
    r = ablation(data, AnalysisSettings(gate=["context.retrieval_relevance"]))
    assert r.verdicts[VARIANT].outcome is Outcome.SHIP  # the decision does not change
    lines = r.warnings[VARIANT]
    assert any(w.startswith("retrieval relevance is worse than the control within its margin")
               for w in lines), lines
    assert any("6 pass → fail against 0 fail → pass" in w for w in lines), lines
    table = data_table(r)
    end = SweepEnd(tables={"ablation_table.json": table})
    assert gate_failures(end, ["warning"]) == {VARIANT: "ship with a warning"}
    assert gate_failures(end, ["do_not_ship"]) == {}
    clean = ablation(_study(320), AnalysisSettings(gate=["context.retrieval_relevance"]))
    assert clean.verdicts[VARIANT].outcome is Outcome.SHIP and not clean.warnings


def test_flip_counts_beyond_noise():
    assert pass_flips(9, 0, 0.025) and not pass_flips(3, 2, 0.025)
    assert flags_beyond(9, 0.5, 0.025) and not flags_beyond(5, 5.0, 0.025)
