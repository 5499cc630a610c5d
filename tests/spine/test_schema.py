"""§19.2 / §20.2 models: round-trips, a suite written exactly to the spec loads,
and broken suite files produce errors naming file, case and field."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from silas_exp.context.budget import TokenBudget
from silas_exp.data.suites.loader import load_suite, session_case
from silas_exp.errors import SuiteError
from silas_exp.schema import (
    BenchmarkRun,
    BenchmarkSuite,
    EvictionFeedback,
    EvictionProposal,
)

from ..conftest import REPO

# A scorer suite written to §20.2 with Silas's own ContextItem field names:
# a snapshot of a window (no turn script) and a latency/token threshold case.
SNAPSHOT_ITEMS = [
    {"ctx_id": "sys", "zone": "system", "content": "You are Silas.", "token_count": 400,
     "turn_number": 0, "source": "system", "pinned": True},
    {"ctx_id": "u1", "zone": "chronicle", "content": "Fix the flaky test in parser.py",
     "token_count": 3000, "turn_number": 0, "source": "user", "pinned": False},
    {"ctx_id": "t1", "zone": "chronicle", "content": "pytest: ValueError in parse_header",
     "token_count": 6000, "turn_number": 1, "source": "tool:pytest", "pinned": False},
    {"ctx_id": "m1", "zone": "memory", "content": "note: the CI runs on Python 3.11",
     "token_count": 2500, "turn_number": 1, "source": "memory", "pinned": False,
     "relevance": 0.2},
    {"ctx_id": "w1", "zone": "workspace", "content": "plan: 1) reproduce 2) patch 3) test",
     "token_count": 3500, "turn_number": 2, "source": "plan", "pinned": False},
]
SPEC_SUITE = {
    "suite_id": "scorer-snapshots",
    "name": "scorer-snapshots",
    "target": "silas.context_manager.scorer",
    "version": "2.1.0",
    "metadata": {"domain": "context", "difficulty": "mixed", "source": "synthetic"},
    "cases": [
        {
            "case_id": "keep-the-error",
            "description": "A full window: the failing test output must survive the flush",
            "input": {"goal": "fix the flaky test", "context": SNAPSHOT_ITEMS,
                      "config_overrides": {"profile": "coding", "budget": {"total": 16000}},
                      "skill_args": None},
            "expected": {"mode": "contains", "value": "ValueError in parse_header",
                         "metric_thresholds": None},
            "tags": ["fill-heavy"],
            "difficulty": "easy",
            "source": "synthetic",
        },
        {
            "case_id": "latency",
            "description": "Fast enough",
            "input": {"goal": "run", "context": SNAPSHOT_ITEMS,
                      "config_overrides": {"budget": {"total": 16000}}, "skill_args": None},
            "expected": {"mode": "metric_threshold", "value": {"keep": ["t1"]},
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
    assert [c.case_id for c in loaded.suite.cases] == ["keep-the-error", "latency"]
    sc = session_case(loaded, loaded.suite.cases[0], TokenBudget())
    assert sc.flush_turn == 2 and sc.session.turns == 4  # a snapshot: one flush at its last turn
    kinds = {it.ctx_id: (it.kind, it.tool_name, it.tokens) for it in sc.session.items}
    assert kinds["t1"] == ("tool_result", "pytest", 6000) and kinds["u1"][0] == "user_message"
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
        for case in loaded.cases:
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
    assert "case 'keep-the-error', field 'difficulty'" in msg and "impossible" in msg


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
        "expected": {"mode": "metric_threshold", "value": {"references": refs},
                     "metric_thresholds": {"context.retrieval_relevance": 0.5}},
    }
    (tmp_path / "suite.json").write_text(json.dumps({**SPEC_SUITE, "cases": [case]}))

    def build():
        loaded = load_suite(tmp_path)  # session data is checked when the suite loads
        return session_case(loaded, loaded.suite.cases[0], TokenBudget())

    return build


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
