"""Each reader on a fixture written the way its tool writes it: the events it
yields, the quirks it counts, and clear errors for unreadable files."""

from __future__ import annotations

from pathlib import Path

import pytest

from silas_exp.data.transcripts import readers
from silas_exp.errors import SuiteError

FIX = Path(__file__).parent / "fixtures"
CC, AIDER = FIX / "claude_code_session.jsonl", FIX / "httpkit.aider.chat.history.md"
SWE, OPENAI = FIX / "httpkit__httpkit-42.traj", FIX / "openai_chat.jsonl"


def kinds(session) -> list[str]:
    return [e.kind for e in session.events]


def test_aider_sessions_commands_edits_and_architect_repeats():
    one, two = readers.read(AIDER, "aider")
    assert (one.session_id, two.session_id) == ("httpkit-1", "httpkit-2")
    calls = [(e.tool, e.args) for e in one.events if e.kind == "call"]
    assert calls[0] == ("add", {"files": ["src/httpkit/client.py"]})
    assert calls[1] == ("run", {"command": "python -m pytest tests/test_client.py -q"})
    assert calls[2] == ("edit", {"path": "src/httpkit/client.py",
                                 "search": "        delay = int(resp.headers['retry_after'])",
                                 "replace": "        delay = int(resp.headers.get('Retry-After', '1'))"})
    run_out = next(e for e in one.events if e.kind == "result" and e.call_id == "aider-2")
    assert "KeyError: 'retry_after'" in run_out.text
    assert one.quirks["banner_lines_skipped"] == 5
    assert [e.text for e in two.events if e.kind == "user"] == [
        "make the auth token lookup in src/httpkit/auth.py case-insensitive"]
    assert two.quirks["architect_repeats"] == 2 and two.quirks["mode_commands"] == 1


def test_swe_agent_steps_are_turns_and_ids_are_kept():
    (s,) = readers.read(SWE, "swe-agent")
    assert kinds(s)[:2] == ["system", "user"] and kinds(s).count("turn") == 6
    calls = [e for e in s.events if e.kind == "call"]
    assert [c.tool for c in calls] == ["open", "bash", "edit", "edit", "bash", "submit"]
    assert [c.call_id for c in calls][:3] == ["call_5qY0", "call_5qY1", "call_5qY0"]  # reused
    errors = [e.is_error for e in s.events if e.kind == "result"]
    assert errors == [False, False, True, False, False, False]
    assert s.quirks["demonstration_messages_dropped"] == 1
    assert s.meta["exit_status"] == "submitted" and s.meta["model"] == "claude-sonnet-4-5-20250929"


@pytest.mark.parametrize("fmt", ["claude-code", "openai", "aider", "swe-agent"])
def test_empty_file_is_a_clear_error(tmp_path, fmt):
    p = tmp_path / "t.jsonl"
    p.write_text("\n")
    with pytest.raises(SuiteError, match=r"t\.jsonl:1: the file is empty"):
        readers.read(p, fmt)


def test_bad_json_line_names_file_and_line(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"type":"user","sessionId":"x","parentUuid":null}\n{oops\n')
    with pytest.raises(SuiteError, match=r"s\.jsonl:2: not valid JSON"):
        readers.read(p, "claude-code")


def test_not_utf8_and_unknown_format(tmp_path):
    p = tmp_path / "b.jsonl"
    p.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(SuiteError, match="not UTF-8"):
        readers.read(p, "openai")
    q = tmp_path / "notes.txt"
    q.write_text("just some notes\n")
    with pytest.raises(SuiteError, match="format not recognised; pass --format"):
        readers.detect(q)


def test_traj_without_steps_is_rejected(tmp_path):
    p = tmp_path / "x.traj"
    p.write_text('{"info": {}}')
    with pytest.raises(SuiteError, match="field 'trajectory' is missing"):
        readers.read(p, "swe-agent")
