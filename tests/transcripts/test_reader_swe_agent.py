"""The SWE-agent reader on .traj files shaped the way SWE-agent 1.x and 0.x save them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from silas_exp.data.transcripts.readers import head_of, swe_agent
from silas_exp.errors import SuiteError

FIX = Path(__file__).parent / "fixtures"
FC, LEGACY = FIX / "swe_agent_fc.traj", FIX / "swe_agent_legacy.traj"
AIDER = (FIX / "aider_basic.aider.chat.history.md", FIX / "aider_architect.aider.chat.history.md")


def calls(session) -> list[tuple]:
    return [(e.call_id, e.tool) for e in session.events if e.kind == "call"]


def errors(session) -> list[bool]:
    return [e.is_error for e in session.events if e.kind == "result"]


def test_function_calling_steps_are_turns_with_their_ids_kept():
    (s,) = swe_agent.read(FC)
    assert (s.session_id, s.source, s.format) == ("swe_agent_fc", "swe_agent_fc.traj", "swe-agent")
    assert [e.kind for e in s.events] == ["system", "user"] + ["turn", "assistant", "call",
                                                               "result"] * 6
    assert s.events[0].text.startswith("You are a helpful assistant")
    assert s.events[1].text.startswith("<uploaded_files>\n/testbed\n</uploaded_files>")
    assert "Here is a demonstration" not in " ".join(e.text for e in s.events)
    assert s.quirks["demonstration_messages_dropped"] == 1
    # SWE-agent reuses ids across steps: kept as they are for the builder to rename
    assert calls(s) == [("call_7Hq2", "str_replace_editor"), ("call_Lm9x", "bash"),
                        ("call_7Hq2", "str_replace_editor"), ("call_Qw3e", "str_replace_editor"),
                        ("call_Lm9x", "bash"), ("call_Zt0p", "submit")]
    args = [e.args for e in s.events if e.kind == "call"]
    assert args[0] == {"command": "view", "path": "/testbed/slugify/core.py"}
    assert args[1] == {"command": "cd /testbed && python -c 'from slugify import slugify; "
                                  "print(slugify(\"a  --  b\"))'"}
    assert args[5] == {}
    assert errors(s) == [False, False, True, False, False, False]
    bad = [e for e in s.events if e.kind == "result"][2]
    assert bad.text.startswith("No replacement was performed") and bad.call_id == "call_7Hq2"
    assert [e.text for e in s.events if e.kind == "assistant"][:2] == [
        "Let me look at the slugify implementation first.", "Reproduce the problem."]
    assert [e.where for e in s.events if e.kind == "turn"][-1] == "swe_agent_fc.traj:step 5"
    assert s.meta == {"exit_status": "submitted", "swe_agent_version": "1.1.0",
                      "model": "claude-sonnet-4-20250514"}


def test_legacy_trajectory_commands_and_failed_edit():
    (s,) = swe_agent.read(LEGACY)
    assert calls(s) == [("swe-0", "find_file"), ("swe-1", "open"), ("swe-2", "edit"),
                        ("swe-3", "edit"), ("swe-4", "bash"), ("swe-5", "submit")]
    assert [e.args for e in s.events if e.kind == "call"][1] == {"command": "open slugify/core.py"}
    assert errors(s) == [False, False, True, False, False, False]
    assert s.quirks["demonstration_messages_dropped"] == 1
    assert s.meta == {"exit_status": "submitted"}
    assert s.events[1].text.startswith("We're currently solving the following issue")


def test_history_only_falls_back_to_actions_in_the_message_text(tmp_path):
    obj = json.loads(LEGACY.read_text())
    del obj["trajectory"]
    p = tmp_path / "old.traj"
    p.write_text(json.dumps(obj))
    (s,) = swe_agent.read(p)
    (t,) = swe_agent.read(LEGACY)
    assert calls(s) == calls(t)
    assert [e.args for e in s.events if e.kind == "call"] == \
        [e.args for e in t.events if e.kind == "call"]
    assert [e.text for e in s.events if e.kind == "assistant"] == \
        [e.text for e in t.events if e.kind == "assistant"]
    assert s.quirks["actions_from_content"] == 6
    assert errors(s) == [False, False, True, False, False, False]
    # the observation is the next user message, as the template wrapped it; submit has none
    results = [e.text for e in s.events if e.kind == "result"]
    assert results[4] == "creme-brulee\n(Open file: /slugify/slugify/core.py)\n" \
                         "(Current directory: /slugify)\nbash-$"
    assert results[5] == ""


def test_function_calling_history_only_and_a_step_without_id(tmp_path):
    obj = json.loads(FC.read_text())
    del obj["trajectory"]
    del obj["history"][-2]["tool_calls"]  # the submit message lost its call
    p = tmp_path / "fc.traj"
    p.write_text(json.dumps(obj))
    (s,) = swe_agent.read(p)
    assert [c for c, _ in calls(s)] == ["call_7Hq2", "call_Lm9x", "call_7Hq2", "call_Qw3e",
                                        "call_Lm9x", "swe-5"]
    res = [e for e in s.events if e.kind == "result"]
    assert res[0].text.startswith("OBSERVATION:\nHere's the result of running `cat -n`")
    assert [r.is_error for r in res] == [False, False, True, False, False, False]


@pytest.mark.parametrize(("observation", "is_error"), [
    ("Error: the command `foo` was not found", True),
    ("error: pathspec 'x' did not match any file(s) known to git", True),
    ("Your proposed edit has introduced new syntax error(s). Please read this error message", True),
    ("The path /testbed/nope.py does not exist. Please provide a valid path.", True),
    ("Traceback ...\nexit code: 2", True),
    ("All tests passed; no errors", False),
    ("", False),
])
def test_error_observations(tmp_path, observation, is_error):
    p = tmp_path / "e.traj"
    p.write_text(json.dumps({"trajectory": [{"action": "python run.py", "observation": observation,
                                             "thought": "run it", "response": "run it"}],
                             "history": [{"role": "user", "content": "fix it"}]}))
    (s,) = swe_agent.read(p)
    assert [e.kind for e in s.events] == ["user", "turn", "assistant", "call", "result"]
    assert s.events[3].call_id == "swe-0" and s.events[3].tool == "bash"
    assert s.events[4].is_error is is_error


def test_looks_like_its_own_files_only():
    for path in (FC, LEGACY):
        assert swe_agent.looks_like(path, head_of(path))
    for path in AIDER:
        assert not swe_agent.looks_like(path, head_of(path))


@pytest.mark.parametrize(("data", "message"), [
    (b"", r"t\.traj:1: the file is empty; pass a SWE-agent trajectory"),
    (b'{"history": ["\xff"]}', r"t\.traj: not UTF-8 text \(byte 14\); re-export"),
    (b'{"trajectory": [\n  {"action": }\n]}', r"t\.traj:2: not valid JSON \(Expecting value at "
                                              r"column 14\); pass the \.traj file as SWE-agent"),
    (b'{"info": {"exit_status": "submitted"}}', r"t\.traj:1: field 'trajectory' is missing "
                                                r"\(and no 'history'; found keys info\); pass a "
                                                r"SWE-agent \.traj"),
    (b"[1, 2]", r"field 'trajectory' is missing \(and no 'history'; found a JSON list\)"),
])
def test_unreadable_files_are_clear_errors(tmp_path, data, message):
    p = tmp_path / "t.traj"
    p.write_bytes(data)
    with pytest.raises(SuiteError, match=message):
        swe_agent.read(p)
