"""The decision in one sentence, the ranking of several shipping variants, the
control that passes nothing, the parent run's few metrics, and regressions in
the words of each metric's declared direction."""

from __future__ import annotations

import html
import re

import numpy as np

from silas_exp.analysis.ablation import ablation
from silas_exp.analysis.data import JobData
from silas_exp.analysis.decision import decision_sentence
from silas_exp.analysis.html import ablation_html
from silas_exp.analysis.parent import PARENT_METRICS, parent_summary
from silas_exp.analysis.report import ablation_markdown
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.gate.report import regress
from silas_exp.stats import Outcome

from .test_ablation_rules import BASE, _sweep

# the default pool's size: enough agreeing pass/fail cases to rule out a loss of the pass
# rate's margin (18 cannot), so the verdicts below turn on the metrics they are about
POOL = list(np.linspace(0.3, 0.95, 320))


def test_one_ships_one_does_not_in_one_sentence():
    res = ablation(_sweep({"scorer=heuristic": POOL, "scorer=better": [q + 0.05 for q in POOL],
                           "scorer=worse": [q - 0.1 for q in POOL]}))
    sentence = decision_sentence(res, res.ranking)
    assert sentence.startswith("scorer=better ships; scorer=worse does not (")
    assert f"<p><b>{html.escape(sentence)}</b></p>" in ablation_html(res, [])
    assert re.search(r"retrieval relevance −0\.(1\d*|09\d+) \(margin: worse by at most 0\.02\)",
                     sentence), sentence
    summary = parent_summary(res)
    assert summary.description.splitlines()[0].startswith(f"**{sentence}** Control: ")
    assert summary.tags["mlflow.runName"].startswith("1✓ 1✗ 0? · ")


def test_several_shipping_variants_are_ranked_with_a_ci():
    res = ablation(_sweep({"scorer=heuristic": POOL, "scorer=some": [q + 0.03 for q in POOL],
                           "scorer=most": [q + 0.08 for q in POOL]}))
    assert {v.outcome.value for v in res.verdicts.values()} == {"ship"}
    assert res.ranking is not None and res.ranking.metric == "context.retrieval_relevance"
    assert [r.variant for r in res.ranking.rows] == ["scorer=most", "scorer=some"]
    assert res.ranking.lead.low > 0 and all(r.superior for r in res.ranking.rows)
    sentence = decision_sentence(res, res.ranking)
    assert re.search(r"scorer=most is better than scorer=some on retrieval relevance: "
                     r"\+0\.0[45]\d* \[\+0\.0\d+, \+0\.0\d+\]", sentence), sentence
    assert "## Ranking of the shipping variants on retrieval relevance" in \
        ablation_markdown(res)


def test_a_control_that_passes_no_case_is_flagged():
    low = [q * 0.5 for q in BASE]  # every case below the pass bar: the control passes nothing
    res = ablation(_sweep({"scorer=heuristic": low, "scorer=weights": BASE}))
    assert res.notes[0].startswith("The control scorer=heuristic passes no case")
    md = ablation_markdown(res)
    assert "**Note:** The control scorer=heuristic passes no case" in md.split("## Verdicts")[0]
    assert "passes no case" in parent_summary(res).description.split("| variant |")[0]
    page = ablation_html(res, [])
    assert "<b>Note:</b> The control scorer=heuristic passes no case" in page.split("Verdicts")[0]
    fine = ablation(_sweep({"scorer=heuristic": BASE, "scorer=weights": BASE}))
    assert not any("passes no case" in n for n in fine.notes)


def test_a_wide_sweep_keeps_few_parent_metrics_gated_first():
    variants = {"scorer=heuristic": BASE, **{f"scorer=v{i}": [q + 0.001 * i for q in BASE]
                                             for i in range(12)}}
    summary = parent_summary(ablation(_sweep(variants)))
    assert len(summary.metrics) + 2 <= PARENT_METRICS  # + sweep.jobs, sweep.failed_jobs
    assert {k.split("/")[0].split(".")[0] for k in summary.metrics} == {"verdict",
                                                                       "margins vs heuristic"}
    assert list(summary.metrics)[0].startswith("margins vs heuristic/v0.")  # logged order
    [table] = summary.tables.values()
    assert len(set(table["variant"])) == 12  # every comparison is in the table


def _job(tokens: float, n: int = 60) -> JobData:
    cases = {f"c{i}": {"context.tokens_per_served_need": tokens + i, "latency_ms": 1.0}
             for i in range(n)}
    return JobData("scorer=heuristic", 0, {}, cases, status={c: "pass" for c in cases})


def test_a_lower_is_better_metric_that_rises_worsened():
    rng = np.random.default_rng(0)
    base = _job(9000.0)
    run = _job(9000.0)
    for i, c in enumerate(run.cases.values()):
        c["context.tokens_per_served_need"] += 2000 + float(rng.normal(0, 5)) + i
    gate = AnalysisSettings(gate=["context.tokens_per_served_need"])
    rep = regress([run], [base], subject="run", baseline_name="base", baseline_run_id="b",
                  settings=gate)
    assert rep.outcome is Outcome.DO_NOT_SHIP and rep.regressed
    assert "tokens per served need" in rep.markdown()
    better = regress([base], [run], subject="base", baseline_name="run", baseline_run_id="r",
                     settings=gate)
    assert better.outcome is not Outcome.DO_NOT_SHIP  # fewer tokens is better, never a regression


def test_margins_of_studies_against_other_controls_never_share_a_chart():
    """MLflow's chart view puts the part of a key before "/" into a section of its own:
    each study's margins go to the section of its control, which the section names."""
    worse = [q - 0.01 for q in BASE]
    keys = {}
    for control in ("scorer=heuristic", "scorer=weights"):
        res = ablation(_sweep({control: BASE, "scorer=online": worse}),
                       settings=AnalysisSettings(control=control))
        keys[control] = {k for k in parent_summary(res).metrics if not k.startswith("verdict.")}
    assert keys["scorer=heuristic"] and keys["scorer=weights"]
    assert not keys["scorer=heuristic"] & keys["scorer=weights"]
    assert {k.partition("/")[0] for k in keys["scorer=heuristic"]} == {"margins vs heuristic"}
    assert {k.partition("/")[0] for k in keys["scorer=weights"]} == {"margins vs weights"}
    assert "margins vs weights/online.ir.ndcg_at_10" in keys["scorer=weights"]


def test_cases_needed_read_against_the_pool():
    from silas_exp.analysis.decision import about, needed_cell, needed_text

    assert [about(n) for n in (48, 436, 2587, 60511)] == ["48", "440", "2,600", "61,000"]
    assert needed_text(2587, 320) == "needs about 2,600 cases to decide; the pool has 320"
    assert needed_text(436, 500) == "needs about 440 cases to decide"
    assert needed_cell(60511, 320, 5) == "about 61,000 cases × 5 repeats (the pool has 320)"


def test_a_count_beyond_the_pool_says_so_in_every_place_it_is_printed():
    """Two variants left undecided by the same blocker, each needing more cases
    than the study's 18: the sentence names the count once per variant, as out
    of the pool's reach, never as a bare "≈ N cases needed"."""
    at_margin = [q - 0.02 for q in BASE]
    res = ablation(_sweep({"scorer=heuristic": BASE, "scorer=a": at_margin,
                           "scorer=b": at_margin}))
    assert {v.outcome for v in res.verdicts.values()} == {Outcome.INCONCLUSIVE}
    assert res.pool_cases == 18 and all(v.n_needed > 18 for v in res.verdicts.values())
    sentence = decision_sentence(res)
    assert "≈" not in sentence and "cases needed" not in sentence, sentence
    assert re.search(r"scorer=a needs about [\d,]+ cases to decide; the pool has 18", sentence), \
        sentence
    md = ablation_markdown(res)
    assert "(the pool has 18) |" in md and "≈" not in md.split("## Verdicts")[1].split("\n\n")[1]
    page = ablation_html(res, [])
    assert "(the pool has 18)" in page
