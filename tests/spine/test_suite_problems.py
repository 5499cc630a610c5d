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


def refused(path) -> str:
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    return str(err.value)


def test_a_single_file_suite_reports_every_problem_at_once(tmp_path):
    """suite.json with its own cases: schema and meaning checked together."""
    missing = case("no-mode")
    del missing["expected"]["mode"]
    suite = {k: v for k, v in SPEC_SUITE.items() if k != "cases"} | {"cases": [
        case("twin"), case("twin"),                                   # duplicate case id
        case("bad-zone", [{**ITEMS[0], "zone": "attic"}, ITEMS[1]]),  # bad zone
        missing,                                                      # missing expected.mode
    ]}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    msg = refused(tmp_path)
    assert "the suite has 3 problems" in msg
    assert "case_id 'twin' appears twice in 'cases'" in msg
    assert "case 'bad-zone': field 'input.context[0] (ctx_id 'u1').zone'" in msg
    assert "case 'no-mode', field 'expected.mode': Field required (missing)" in msg


def test_a_bad_suite_header_is_reported_with_the_cases_problems(tmp_path):
    suite = {k: v for k, v in SPEC_SUITE.items() if k != "cases"} | {
        "version": "two", "cases": [case("twin"), case("twin")]}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    msg = refused(tmp_path)
    assert "the suite has 2 problems" in msg
    assert "field 'version'" in msg and "'twin' appears twice" in msg


def nothing_to_replay(case_id: str) -> dict:
    """Valid §20.2 (input.context is optional), but no session to replay."""
    return {"case_id": case_id, "description": "d", "input": {"goal": "g"},
            "expected": {"mode": "llm_judge", "value": {"rubric": "r"}}}


def test_a_case_with_nothing_to_replay_is_skipped_and_counted(tmp_path, compose):
    from omegaconf import OmegaConf

    from silas_exp.config import validate
    from silas_exp.run.job import make_job, run_job

    write_suite(tmp_path / "s", {"a": case("runs"), "b": nothing_to_replay("no-context")})
    with pytest.warns(SuiteWarning, match=r"1 of 2 case\(s\) are skipped: no input.context"):
        loaded = load_suite(tmp_path / "s")
    assert list(loaded.unreplayable) == ["no-context"]
    cfg = validate(OmegaConf.to_container(compose(f"suite.path={tmp_path / 's'}",
                                                  "tracking=none"), resolve=True))
    outcome = run_job(cfg, make_job(cfg, "v"), tmp_path / "job", loaded=loaded)
    results = {r.case_id: r for r in outcome.results()}
    assert results["no-context"].status == "skipped" and results["runs"].status != "error"
    assert "nothing to replay" in results["no-context"].error
    assert outcome.metrics["summary.skipped"] == sum(r.status == "skipped"
                                                     for r in results.values())


def test_a_suite_with_no_case_left_is_refused(tmp_path):
    write_suite(tmp_path, {"a": nothing_to_replay("x"), "b": nothing_to_replay("y")})
    with pytest.raises(SuiteError, match="none of the suite's 2 case"):
        load_suite(tmp_path)


def test_a_suite_warning_reads_as_one_line_on_the_console(capsys):
    from silas_exp.cli.app import _show_warning

    _show_warning(SuiteWarning("s/suite.json: 1 of 5 case(s) are skipped"), SuiteWarning,
                  "memo.py", 45)
    assert capsys.readouterr().err == "warning: s/suite.json: 1 of 5 case(s) are skipped\n"
