"""§20.2 expected modes mean what they say: each mode has a case that must
pass and one that must fail; bad expectations are bad input; a case with no
applicable metric is skipped, never passed."""

from __future__ import annotations

import json
import math

import pytest
from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.data.suites.loader import load_suite
from silas_exp.errors import SuiteError
from silas_exp.run.job import make_job, run_job

from .test_schema import SNAPSHOT_ITEMS, SPEC_SUITE

BUDGET = {"profile": "coding", "budget": {"total": 16000},
          "shares": {"chronicle": 0.4, "memory": 0.2, "workspace": 0.2}}


def _case(case_id: str, expected: dict, items=SNAPSHOT_ITEMS, overrides=BUDGET) -> dict:
    return {"case_id": case_id, "description": case_id,
            "input": {"goal": "g", "context": items, "config_overrides": overrides},
            "expected": expected}


def _suite(tmp_path, *cases, labels=None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "suite.json").write_text(json.dumps({**SPEC_SUITE, "cases": list(cases)}))
    if labels is not None:
        (tmp_path / "human_labels.json").write_text(json.dumps(labels))
    return tmp_path


@pytest.fixture
def run_suite(compose, tmp_path):
    def _run(suite_dir, *overrides):
        cfg = validate(OmegaConf.to_container(
            compose(f"suite.path={suite_dir}", "tracking=none", *overrides), resolve=True))
        outcome = run_job(cfg, make_job(cfg, "v"), tmp_path / "job")
        return {r.case_id: r for r in outcome.results()}, outcome.metrics

    return _run


def test_each_mode_passes_and_fails_as_written(tmp_path, run_suite):
    suite = _suite(
        tmp_path / "s",
        _case("contains-ok", {"mode": "contains", "value": "You are Silas."}),  # never evicted
        _case("contains-bad", {"mode": "contains", "value": "text that was never there"}),
        _case("exact-bad", {"mode": "exact", "value": "You are Silas."}),
        _case("threshold-ok", {"mode": "metric_threshold", "value": {"keep": ["t1"]},
                               "metric_thresholds": {"latency_ms": 60000, "token_cost": 100000}}),
        _case("threshold-bad", {"mode": "metric_threshold", "value": {"keep": ["t1"]},
                                "metric_thresholds": {"latency_ms": 0.0}}),
        _case("metric-bad", {"mode": "metric_threshold", "value": {"keep": ["t1", "u1", "w1"]},
                             "metric_thresholds": {"context.retrieval_relevance": 1.0}}),
        _case("human", {"mode": "human"}),
    )
    results, metrics = run_suite(suite)
    status = {cid: r.status for cid, r in results.items()}
    assert status == {"contains-ok": "pass", "contains-bad": "fail", "exact-bad": "fail",
                      "threshold-ok": "pass", "threshold-bad": "fail", "metric-bad": "fail",
                      "human": "skipped"}, {c: r.error for c, r in results.items()}
    # the output of a replay case is the retained context, so exact can be met exactly
    exact = results["contains-ok"].actual_output
    assert exact.startswith("You are Silas.") and len(exact.splitlines()) >= 2
    assert "misses its bound" in results["threshold-bad"].error
    assert "awaiting a human label" in results["human"].error
    assert metrics["summary.pass_rate"] == pytest.approx(2 / 6)  # skipped cases are not judged
    assert metrics["summary.skipped"] == 1.0


def test_exact_compares_the_whole_retained_context(tmp_path, run_suite):
    first = _suite(tmp_path / "a", _case("probe", {"mode": "contains", "value": "Silas"}))
    retained = run_suite(first)[0]["probe"].actual_output
    suite = _suite(tmp_path / "b", _case("exact-ok", {"mode": "exact", "value": retained}))
    assert run_suite(suite)[0]["exact-ok"].status == "pass"


def test_human_label_decides_once_imported(tmp_path, run_suite):
    suite = _suite(tmp_path / "s", _case("h1", {"mode": "human"}), _case("h2", {"mode": "human"}),
                   labels={"h1": "pass", "h2": "wrong item evicted"})
    results, _ = run_suite(suite)
    assert results["h1"].status == "pass" and results["h2"].status == "fail"
    assert results["h2"].human_label == "wrong item evicted"


def test_a_case_whose_metrics_do_not_apply_is_skipped_not_passed(tmp_path, run_suite):
    # nothing is ever needed again: retrieval relevance is undefined (NaN)
    suite = _suite(tmp_path / "s", _case("no-truth", {
        "mode": "metric_threshold", "value": {"keep": []},
        "metric_thresholds": {"context.retrieval_relevance": 0.5}}))
    results, _ = run_suite(suite)
    assert results["no-truth"].status == "skipped"
    assert "context.retrieval_relevance" in results["no-truth"].error


def test_snapshot_case_is_one_flush_decision(tmp_path, run_suite):
    suite = _suite(tmp_path / "s", _case("flush", {"mode": "metric_threshold",
                                                    "value": {"keep": ["t1"]},
                                                    "metric_thresholds": {"latency_ms": 60000}}))
    results, _ = run_suite(suite)
    m = results["flush"].metrics
    assert m["tier2.proposals"] == 1.0  # the scorer was asked once, at the snapshot
    assert results["flush"].evicted  # something left the full window
    assert not math.isnan(m["context.retrieval_relevance"])


@pytest.mark.parametrize("expected,needle", [
    ({"mode": "metric_threshold", "metric_thresholds": {"context.relevance": 0.5}},
     ["'context.relevance'", "no metric of that name"]),
    ({"mode": "metric_threshold", "metric_thresholds": {"tier2.proposals": 1}},
     ["'tier2.proposals'", "no direction"]),
    ({"mode": "metric_threshold"}, ["needs at least one threshold"]),
    ({"mode": "contains", "value": {"a": 1}}, ["compares the output with a string"]),
])
def test_bad_expectations_are_bad_input(tmp_path, expected, needle):
    suite = _suite(tmp_path, _case("c1", expected))
    with pytest.raises(SuiteError) as err:
        load_suite(suite)
    msg = str(err.value)
    assert "suite.json" in msg and "case 'c1'" in msg
    for part in needle:
        assert part in msg, msg


@pytest.mark.parametrize("mutate,needle", [
    (lambda cases: cases + [cases[0]], ["'c1' appears twice"]),
    (lambda cases: [{**cases[0], "input": {**cases[0]["input"], "context": [
        {**SNAPSHOT_ITEMS[1], "zone": "attic"}]}}], ["input.context[0]", "zone", "attic"]),
    (lambda cases: [{**cases[0], "input": {**cases[0]["input"], "context": [
        {**SNAPSHOT_ITEMS[1], "token_count": -3}]}}], ["input.context[0]", "token_count", "-3"]),
    (lambda cases: [{**cases[0], "input": {**cases[0]["input"], "context": [
        SNAPSHOT_ITEMS[1], SNAPSHOT_ITEMS[1]]}}], ["duplicate ctx_id"]),
])
def test_bad_suites_name_the_problem(tmp_path, mutate, needle):
    case = _case("c1", {"mode": "contains", "value": "x"})
    suite = _suite(tmp_path, *mutate([case]))
    with pytest.raises(SuiteError) as err:
        load_suite(suite)
    for part in needle:
        assert part in str(err.value), str(err.value)


@pytest.mark.parametrize("repeats", ["0", "-2"])
def test_no_repeats_is_bad_input(cli, repeats):
    res = cli("-m", "scorer=heuristic,weights", f"repeats={repeats}", "tracking=none")
    assert res.returncode == 2, res.stderr[-2000:]
    assert f"repeats = {repeats}" in res.stderr and "at least one repeat" in res.stderr
    assert "no job was started" in res.stderr
