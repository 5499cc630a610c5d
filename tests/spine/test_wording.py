"""Messages say what happened, in the words the user wrote: a field by the
name the case gives it, a JSON error by what it most likely is, a resumed
sweep's decision without markdown, the added control's hint as a hint."""

from __future__ import annotations

import json

import pytest

from silas_exp.data.suites.loader import load_suite
from silas_exp.errors import SuiteError
from tests.plugins.test_declared_once import silas

from .test_suite_problems import ITEMS, case, write_suite


def refused(path) -> str:
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    return str(err.value)


def test_a_bad_silas_field_is_named_as_the_case_writes_it(tmp_path):
    """Silas's ContextItem names (token_count, turn_number) in the message, not ours."""
    items = [{"ctx_id": "u1", "turn_number": 0, "zone": "chronicle", "source": "user",
              "content": "hello", "token_count": -5}, ITEMS[1]]
    write_suite(tmp_path, {"a": case("silas-names", items)})
    msg = refused(tmp_path)
    assert "field 'input.context[0] (ctx_id 'u1').token_count'" in msg
    assert "(ctx_id 'u1').tokens'" not in msg


@pytest.mark.parametrize("text,says,never", [
    ('{"case_id": "a", "input": {"goal": "g", "context": [1, 2', "cut short", "trailing comma"),
    ('{"case_id": "a", "description": "un', "cut short", "trailing comma"),
    ('{"case_id": "a",}', "Remove the trailing comma", "cut short"),
    ("{'case_id': 'a'}", "Put the key in double quotes", "trailing comma"),
])
def test_a_json_error_says_what_it_most_likely_is(tmp_path, text, says, never):
    write_suite(tmp_path, {})
    (tmp_path / "cases" / "a.json").write_text(text)
    msg = refused(tmp_path)
    assert "a.json: not valid JSON" in msg and says in msg and never not in msg


def test_a_truncated_chat_export_is_said_to_be_cut_short(tmp_path):
    from silas_exp.data.transcripts.readers import read

    export = tmp_path / "big.json"
    export.write_text('{"messages": [\n {"role": "user", "content": "hi"},\n {"role": "assis')
    with pytest.raises(SuiteError) as err:
        read(export, "openai")
    assert "big.json:3: not valid JSON" in str(err.value) and "cut short" in str(err.value)


def test_a_finished_sweeps_result_has_no_markdown_marks(tmp_path):
    from silas_exp.records import SweepEnd, SweepManifest, write_sweep_end
    from silas_exp.run.sweep_folder import finished_result

    end = SweepEnd(metrics={"sweep.jobs": 2.0}, description=(
        "**scorer=weights ships.** Control: **scorer=heuristic**, the §19.5 control.\n\n"
        "| variant | verdict |"))
    write_sweep_end(tmp_path, end)
    text = finished_result(tmp_path, SweepManifest(sweep_id="abc", experiment_name="e",
                                                   command_key="k"))
    assert "scorer=weights ships. Control: scorer=heuristic, the §19.5 control." in text
    assert "**" not in text


@pytest.mark.slow  # a three-job sweep: ~30-60 s on 2 busy cores
def test_the_added_controls_hint_reads_as_a_hint(tmp_path):
    done = silas(tmp_path, None, "-m", "scorer=oracle,random", "suite=smoke", "tracking=none",
                 "hydra.launcher.n_jobs=1")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    assert "Added the control scorer=heuristic to the sweep (to compare with another, set " \
           "analysis.control=...)" in out
    assert "(analysis.control=... names another)" not in out
    assert json.loads((tmp_path / "multirun" / "control.json").read_text())["added"] == {
        "scorer": "heuristic"}
