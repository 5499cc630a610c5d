"""A broken suite reports every problem in one run; an item kind outside
Silas's eight is read as its zone's generic kind (warned and counted), while
a near miss of a known kind is a typo with "did you mean"."""

from __future__ import annotations

import json

import pytest

from silas_exp.data.suites.loader import load_suite
from silas_exp.errors import SuiteError, SuiteWarning
from silas_exp.schema.session import KNOWN_KINDS

from .test_schema import SPEC_SUITE

ITEMS = [{"ctx_id": "u1", "turn": 0, "zone": "chronicle", "kind": "user_message", "tokens": 900},
         {"ctx_id": "t1", "turn": 1, "zone": "chronicle", "kind": "tool_result", "tokens": 900}]


def case(case_id: str, items=ITEMS, **extra) -> dict:
    return {"case_id": case_id, "description": "d",
            "input": {"goal": "g", "context": items, "config_overrides": {"profile": "coding"},
                      "skill_args": {"turns": 4}},
            "expected": {"mode": "metric_threshold", "value": {"references": []},
                         "metric_thresholds": {"context.retrieval_relevance": 0.5}}, **extra}


def write_suite(root, cases: dict[str, dict]) -> None:
    (root / "cases").mkdir(parents=True)
    (root / "suite.json").write_text(json.dumps({k: v for k, v in SPEC_SUITE.items()
                                                 if k != "cases"} | {"cases": []}))
    for name, body in cases.items():
        (root / "cases" / f"{name}.json").write_text(json.dumps(body))


def test_three_problems_are_reported_in_one_run(tmp_path):
    missing = case("no-expected")
    del missing["expected"]
    write_suite(tmp_path, {
        "a": case("twin"), "b": case("twin"),                             # duplicate case id
        "c": case("bad-zone", [{**ITEMS[0], "zone": "attic"}, ITEMS[1]]),  # bad zone
        "d": missing,                                                      # missing field
    })
    with pytest.raises(SuiteError) as err:
        load_suite(tmp_path)
    msg = str(err.value)
    assert "the suite has 3 problems" in msg
    assert "b.json: case_id 'twin' is a duplicate: already defined in" in msg
    assert "c.json: case 'bad-zone': field 'input.context[0] (ctx_id 'u1').zone'" in msg
    assert "'attic'" in msg
    assert "d.json" in msg and "field 'expected'" in msg and "missing" in msg


def test_an_unknown_kind_is_read_as_the_zones_generic_kind(tmp_path):
    items = [{**ITEMS[0], "kind": "message"}, {**ITEMS[1], "kind": "lint_report"},
             {"ctx_id": "w1", "turn": 1, "zone": "workspace", "kind": "lint_report", "tokens": 50}]
    write_suite(tmp_path, {"a": case("own-kinds", items)})
    with pytest.warns(SuiteWarning, match=r"2 of kind 'lint_report', 1 of kind 'message'"):
        loaded = load_suite(tmp_path)
    assert loaded.generic_kinds == {"message": 1, "lint_report": 2}
    session = loaded.parsed(loaded.cases[0])[0]
    assert [(it.kind, it.declared_kind) for it in session.items] == [
        ("agent_response", "message"), ("agent_response", "lint_report"), ("plan", "lint_report")]
    assert all(it.kind in KNOWN_KINDS for it in session.items)


def test_a_typo_of_a_known_kind_gets_did_you_mean(tmp_path):
    write_suite(tmp_path, {"a": case("typo", [ITEMS[0], {**ITEMS[1], "kind": "tool_reslt"}])})
    with pytest.raises(SuiteError) as err:
        load_suite(tmp_path)
    assert "kind 'tool_reslt' is not a known kind; did you mean 'tool_result'?" in str(err.value)
