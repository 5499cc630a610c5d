"""The exit status of a completed run or sweep: 0 whatever the verdicts unless
``fail_on`` names them; 1 when a case errored from code (unless
``case_errors=ignore``), with the cause last on the console."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.exits import Reported
from silas_exp.records import SweepEnd
from silas_exp.run.exit_policy import CaseErrors, after_sweep, gate_failures

END = SweepEnd(tags={"silas.verdict.scorer_weights": "do_not_ship",
                     "silas.verdict.scorer_prompt": "inconclusive",
                     "silas.verdict.scorer_online": "ship", "silas.control": "scorer=heuristic"})


@pytest.fixture
def config(compose):
    return lambda *o: validate(OmegaConf.to_container(compose(*o), resolve=True))


def test_verdicts_exit_0_unless_the_gate_asks(tmp_path, config):
    after_sweep(tmp_path, config(), END)  # no gate: completed is 0, whatever the verdicts
    assert gate_failures(END, ["do_not_ship"]) == {"scorer_weights": "do_not_ship"}
    with pytest.raises(Reported) as stop:
        after_sweep(tmp_path, config("fail_on=[do_not_ship,inconclusive]"), END)
    assert stop.value.exit_code == 1
    assert str(stop.value.error).startswith("fail_on=[do_not_ship,inconclusive]: scorer_prompt: "
                                            "inconclusive, scorer_weights: do_not_ship")
    table = {"variant": ["scorer=heuristic", "scorer=weights", "scorer=weights"],
             "verdict": ["control", "do_not_ship", "do_not_ship"], "metric": ["a", "a", "b"]}
    assert gate_failures(SweepEnd(tables={"t": table}), ["do_not_ship"]) == {
        "scorer=weights": "do_not_ship"}
    after_sweep(tmp_path, config("fail_on=do_not_ship"), SweepEnd(tags={
        "silas.verdict.scorer_prompt": "inconclusive"}))  # one verdict, as a plain value


def test_case_errors_exit_1_before_the_gate(tmp_path, config, capsys):
    for job, count in (("0", 2), ("1", 3)):
        (tmp_path / job).mkdir()
        (tmp_path / job / "failures.json").write_text(json.dumps([{
            "cause": "scorer 'x' (built-in) raised ValueError at scorers/x.py:7", "count": count,
            "first": "case c1, turn 4", "detail": "boom", "traceback": ""}]))
    with pytest.raises(Reported) as stop:
        after_sweep(tmp_path, config("fail_on=[do_not_ship]"), END)
    assert isinstance(stop.value.error, CaseErrors) and stop.value.exit_code == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: 5 case run(s) in 2 job(s) errored: scorer 'x' (built-in) "
                           "raised ValueError at scorers/x.py:7 — first: case c1, turn 4: boom")
    with pytest.raises(Reported):  # ignored case errors: the gate still applies
        after_sweep(tmp_path, config("case_errors=ignore", "fail_on=[do_not_ship]"), END)
    after_sweep(tmp_path, config("case_errors=ignore"), END)


def test_a_bad_gate_is_bad_input(config):
    from silas_exp.errors import ConfigError

    with pytest.raises(ConfigError, match="fail_on"):
        config("fail_on=[ship]")


def test_a_model_call_that_failed_for_good_is_no_crash(tmp_path, config):
    from silas_exp.errors import LLMError, PluginFailure
    from silas_exp.run.failures import FailureLog, write

    log = FailureLog([])
    log.add("c1", LLMError("overloaded after 2 retries", reason="overloaded", retries=2))
    wrapped = PluginFailure("scorer 'x' (built-in) raised LLMError")
    wrapped.__cause__ = LLMError("timeout", reason="timeout")
    log.add("c2", wrapped)
    (tmp_path / "0").mkdir()
    write(tmp_path / "0", log.records())
    assert [r["code"] for r in log.records()] == [False, False]
    after_sweep(tmp_path, config(), END)  # counted in the job, not a crash: exit 0
    log.add("c3", ZeroDivisionError("division by zero"))
    write(tmp_path / "0", log.records())
    with pytest.raises(Reported):
        after_sweep(tmp_path, config(), END)


def test_the_gate_is_no_part_of_a_variants_name():
    from silas_exp.variants import swept_keys, variant_name

    cli = ["scorer=heuristic,weights", "fail_on=[do_not_ship,inconclusive]"]
    job = ["scorer=weights", "fail_on=[do_not_ship,inconclusive]", "case_errors=ignore"]
    assert variant_name(job, swept_keys(cli, {}), "") == "scorer=weights"
