"""The gate as a sequential study, on constructed results with a known truth:
when the baseline's cases do not decide, both sides run more blocks of the
pool until the verdict is decided; when they do, nothing more runs; a side
whose code cannot run caps what the check may reach, and a check that needs
it is refused."""

from __future__ import annotations

import numpy as np
import pytest

from silas_exp.analysis.data import JobData
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.errors import ConfigError
from silas_exp.gate.check import CheckRequest, _plan
from silas_exp.gate.jobs import Order
from silas_exp.gate.report import CANDIDATE, LOGGED
from silas_exp.gate.revision import Revision, Site
from silas_exp.gate.sequential import Side, run_gate
from silas_exp.schema.baseline import BaselineJob, BaselineRecord
from silas_exp.schema.benchmark import BenchmarkResult
from silas_exp.stats import Outcome

ORDER = Order(tuple(f"case-{i:03d}" for i in range(320)), 40, 0)
MARGINS = {"context.tokens_per_served_need": 500.0}


def _rows(cases, worse: float, noise: float, seed: int) -> dict[str, dict[str, float]]:
    """Per-case metrics: the control's level plus, for the checked side, an
    nDCG@10 shift ``worse`` with paired noise of sd ``noise`` (known truth)."""
    rows = {}
    for cid in sorted(cases):
        i = int(cid.split("-")[1])
        rng = np.random.default_rng([seed, i])
        level = 0.5 + 0.3 * ((i * 37) % 100) / 100
        rows[cid] = {"context.retrieval_relevance": level, "ir.ndcg_at_10": level - worse
                     + (rng.normal(0, noise) if worse or noise else 0.0),
                     "context.tokens_per_served_need": 10000.0, "summary.pass": 1.0,
                     "summary.error": 0.0, "latency_ms": 1.0}
    return rows


def _runner(worse: float, noise: float, ran: list):
    def run(overrides, grid, out, workers, site):
        checked = "change" in overrides
        out_jobs = {}
        for job in grid:
            ran.append(("checked" if checked else "control", job.block))
            rows = _rows(ORDER.block(job.block), worse if checked else 0.0,
                         noise if checked else 0.0, seed=1)
            out_jobs[(job.pairs_with, job.block)] = JobData(
                "x", job.pairs_with, {}, rows, status={c: "pass" for c in rows})
        return out_jobs
    return run


def _sides(worse: float, noise: float, ran: list) -> tuple[Side, Side]:
    here = Revision("a" * 40)
    runner = _runner(worse, noise, ran)
    checked = Side(CANDIDATE, "the change", ["change"], here, Site(here), runner=runner)
    control = Side(LOGGED, "the baseline", ["baseline"], here, Site(here), runner=runner,
                   logged_from="its record")
    rows = _rows(ORDER.block(0), 0.0, 0.0, seed=1)
    control.logged = {(0, 0): JobData("b", 0, {}, rows, status={c: "pass" for c in rows})}
    return checked, control


def _settings() -> AnalysisSettings:
    return AnalysisSettings(control=LOGGED, use_baseline=False, margins=MARGINS)


def test_cases_the_baseline_cannot_decide_are_followed_by_more_until_it_decides(tmp_path):
    """nDCG@10 worse by 1.5 margins with paired noise: the baseline's 40 cases
    (read at the first look's 99.92 %) cannot tell; more blocks, both sides, can."""
    ran: list = []
    checked, control = _sides(worse=0.045, noise=0.06, ran=ran)
    lines: list[str] = []
    run = run_gate(checked, control, ORDER, [0], 1, ORDER.blocks, _settings(), tmp_path, 1,
                   lines.append)
    assert run.state.looks == [1, 2, 4, 8]
    assert run.stopped > 1 and run.state.closed[CANDIDATE]["outcome"] == Outcome.DO_NOT_SHIP.value
    assert "undecided" in lines[0] and lines[-1].startswith(
        f"gate: look after {ORDER.cases_in(run.stopped)} cases") and "regression —" in lines[-1]
    assert sorted(b for side, b in ran if side == "checked") == list(range(run.stopped))
    assert sorted(b for side, b in ran if side == "control") == list(range(1, run.stopped))
    assert control.provenance(run.stopped, [0], ORDER).startswith(
        "logged for block 0 (40 cases) (its record); run now for blocks 1–")
    assert "decided after" in run.plan_line() and "looks after 40, 80, 160, 320 cases" in run.plan_line()


def test_a_baseline_whose_cases_decide_runs_nothing_more(tmp_path):
    ran: list = []
    checked, control = _sides(worse=0.2, noise=0.01, ran=ran)
    run = run_gate(checked, control, ORDER, [0], 1, ORDER.blocks, _settings(), tmp_path, 1,
                   lambda line: None)
    assert run.stopped == 1 and run.state.closed[CANDIDATE]["outcome"] == Outcome.DO_NOT_SHIP.value
    assert ran == [("checked", 0)]  # the control's block 0 is the baseline's logged results


def _record(blocks: int = 1) -> BaselineRecord:
    def results(b):
        return [BenchmarkResult(case_id=c, status="pass", latency_ms=1.0, token_cost=1)
                for c in sorted(ORDER.block(b))]

    return BaselineRecord(suite="default", suite_version="3.0.0", variant="scorer=weights",
                          overrides=["scorer=weights"], seed=0, cases_per_block=40,
                          source_run_id="r" * 32, git_revision="b" * 40 + "-dirty",
                          jobs=[BaselineJob(repeat=0, block=b, results=results(b))
                                for b in range(blocks)])


def test_a_side_that_cannot_run_caps_the_check_or_refuses_it():
    here = Revision("a" * 40)
    checked = Side(CANDIDATE, "the configuration `scorer=weights`", [], here, Site(here))
    base = Revision.parse("b" * 40 + "-dirty")
    why = "its jobs ran commit bbbbbbbbbbbb with uncommitted changes, which no commit holds"
    same_seeds = Side(LOGGED, "the baseline `scorer=weights`", [], base, None, why,
                      logged={(0, b): JobData("b", 0, {}, {}) for b in range(2)})
    # the baseline's own seeds: the check stays on its 80 logged cases
    assert _plan(CheckRequest(config=["scorer=weights"]), checked, same_seeds, ORDER, [0],
                 _record(2), "x") == (2, 2)
    with pytest.raises(ConfigError) as err:  # more cases asked for: they need the baseline's code
        _plan(CheckRequest(config=["scorer=weights"], max_cases=160), checked, same_seeds, ORDER,
              [0], _record(2), "configuration `scorer=weights`")
    text = str(err.value)
    assert "needs the baseline `scorer=weights` run with the code of bbbbbbbbbbbb with " \
           "uncommitted changes" in text and why in text
    assert "`silas-exp regress --config scorer=weights` with today's code, on its 80 cases" in text
    other_seeds = Side("baseline configuration", "the baseline `scorer=weights`", [], base, None,
                       why, offset=1)
    with pytest.raises(ConfigError, match="which cannot be run here"):  # nothing logged to use
        _plan(CheckRequest(config=["scorer=weights"], seeds_from=1), checked, other_seeds, ORDER,
              [0], _record(2), "x")
