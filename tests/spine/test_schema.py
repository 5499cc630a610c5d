"""§19.2 / §20.2 models: round-trips, a suite written exactly to the spec loads,
and broken suite files produce errors naming file, case and field."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from silas_exp.context.budget import TokenBudget
from silas_exp.errors import SuiteError
from silas_exp.schema import (
    BenchmarkRun,
    BenchmarkSuite,
    EvictionFeedback,
    EvictionProposal,
)
from silas_exp.suites.loader import load_suite, session_case

from ..conftest import REPO

SPEC_SUITE = {
    "suite_id": "shell-skill-v2",
    "name": "shell-skill-v2",
    "target": "executor.shell",
    "version": "2.1.0",
    "metadata": {"domain": "shell", "difficulty": "mixed", "source": "synthetic"},
    "cases": [
        {
            "case_id": "pipe-chain",
            "description": "Chain three commands",
            "input": {"goal": "count lines", "context": None, "config_overrides": None,
                      "skill_args": None},
            "expected": {"mode": "contains", "value": "42", "metric_thresholds": None},
            "tags": ["multi-step"],
            "difficulty": "easy",
            "source": "synthetic",
        },
        {
            "case_id": "latency",
            "description": "Fast enough",
            "input": {"goal": "run", "context": [{"zone": "memory"}], "config_overrides": {"a": 1},
                      "skill_args": {"x": 1}},
            "expected": {"mode": "metric_threshold", "value": None,
                         "metric_thresholds": {"latency_ms": 5000, "token_cost": 1000}},
            "tags": [],
            "difficulty": "adversarial",
            "source": "regression",
        },
    ],
}


def test_spec_suite_loads_and_round_trips(tmp_path):
    (tmp_path / "suite.json").write_text(json.dumps(SPEC_SUITE))
    loaded = load_suite(tmp_path)
    assert [c.case_id for c in loaded.suite.cases] == ["pipe-chain", "latency"]
    again = BenchmarkSuite.model_validate_json(loaded.suite.model_dump_json())
    assert again == loaded.suite


def test_eviction_models_round_trip():
    now = datetime(2026, 1, 2, tzinfo=UTC)
    proposal = EvictionProposal(
        proposal_id="p1", scope_id="s", turn_number=3, proposed_at=now, scorer_model="claude-haiku-4-5",
        candidates=[{"ctx_id": "a", "zone": "chronicle", "relevance_score": 0.2, "age_turns": 4,
                     "token_count": 120}],
    )
    feedback = EvictionFeedback(
        proposal_id="p1", scope_id="s", resolved_at=now, resolved_by="llm", evicted=[],
        excluded=[{"ctx_id": "a", "relevance_score": 0.2, "exclude_reason": "still needed"}],
    )
    assert EvictionProposal.model_validate_json(proposal.model_dump_json()) == proposal
    assert EvictionFeedback.model_validate_json(feedback.model_dump_json()) == feedback
    with pytest.raises(ValueError):
        EvictionFeedback.model_validate({**feedback.model_dump(), "resolved_by": "robot"})


def test_run_model_round_trip():
    run = BenchmarkRun(run_id="r", suite_id="s", started_at=datetime.now(UTC), config_snapshot={"a": 1},
                       results=[{"case_id": "c", "status": "pass", "latency_ms": 1.5, "token_cost": 3,
                                 "retries": 0, "metrics": {"x": 0.5}}])
    assert BenchmarkRun.model_validate_json(run.model_dump_json()) == run


def test_shipped_suites_load_and_replay_inputs_validate():
    for name in ("default", "smoke"):
        loaded = load_suite(REPO / "suites" / name)
        assert loaded.eval_cases and loaded.calibration_cases
        for case in loaded.suite.cases:
            sc = session_case(loaded, case, TokenBudget())
            assert sc.session.items and sc.truth.references


def test_not_json_names_file_line_and_fix(tmp_path):
    (tmp_path / "suite.json").write_text('{"suite_id": "x",}')
    with pytest.raises(SuiteError) as err:
        load_suite(tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "suite.json") in msg and "not valid JSON" in msg and "line 1" in msg


def test_schema_break_names_file_case_and_field(tmp_path):
    bad = json.loads(json.dumps(SPEC_SUITE))
    del bad["cases"][1]["expected"]["mode"]
    bad["cases"][0]["difficulty"] = "impossible"
    (tmp_path / "suite.json").write_text(json.dumps(bad))
    with pytest.raises(SuiteError) as err:
        load_suite(tmp_path)
    msg = str(err.value)
    assert "suite.json" in msg
    assert "case 'latency', field 'expected.mode'" in msg and "missing" in msg
    assert "case 'pipe-chain', field 'difficulty'" in msg and "impossible" in msg


def test_broken_case_file_is_named(tmp_path):
    (tmp_path / "suite.json").write_text(json.dumps({**SPEC_SUITE, "cases": []}))
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "c1.json").write_text(json.dumps({"case_id": "c1", "description": "d"}))
    with pytest.raises(SuiteError) as err:
        load_suite(tmp_path)
    assert "c1.json" in str(err.value) and "case 'c1'" in str(err.value) and "'input'" in str(err.value)


def _session_suite(tmp_path, items, refs, overrides=None):
    case = {
        "case_id": "s1", "description": "d",
        "input": {"goal": "g", "context": items, "config_overrides": overrides or {"profile": "coding"},
                  "skill_args": {"turns": 5}},
        "expected": {"mode": "metric_threshold", "value": {"references": refs}},
    }
    (tmp_path / "suite.json").write_text(json.dumps({**SPEC_SUITE, "cases": [case]}))
    loaded = load_suite(tmp_path)
    return lambda: session_case(loaded, loaded.suite.cases[0], TokenBudget())


ITEM = {"ctx_id": "a", "turn": 1, "zone": "chronicle", "kind": "user_message", "tokens": 10}


@pytest.mark.parametrize("items,refs,overrides,expect", [
    ([{**ITEM, "zone": "attic"}], [], None, ["input.context[0] (ctx_id 'a')", "zone", "attic"]),
    ([{**ITEM, "tokens": -5}], [], None, ["input.context[0] (ctx_id 'a')", "tokens", "-5"]),
    ([ITEM], [{"turn": 1, "ctx_id": "a", "grade": 2}], None, ["'a'", "turn 1", "only exists from"]),
    ([ITEM], [{"turn": 3, "ctx_id": "ghost", "grade": 2}], None, ["'ghost'", "no item"]),
    ([ITEM], [], {"profile": "coding", "shares": {"chronicle": 0.5, "memory": 0.3, "workspace": 0.2}},
     ["config_overrides", "0.80"]),
])
def test_bad_session_data_names_item_and_field(tmp_path, items, refs, overrides, expect):
    build = _session_suite(tmp_path, items, refs, overrides)
    with pytest.raises(SuiteError) as err:
        build()
    msg = str(err.value)
    assert "case 's1'" in msg and "suite.json" in msg
    for part in expect:
        assert part in msg, msg
