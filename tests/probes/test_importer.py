"""Organic transcripts: JSONL import with PII scrubbing."""

from __future__ import annotations

import json

import pytest

from silas_exp.errors import SuiteError
from silas_exp.probes.importer import import_transcript, write_session
from silas_exp.probes.pii import scrub

SECRETS = ["sk-ant-api03-abcdefghijklmnop", "ghp_0123456789abcdefghij0123", "AKIAABCDEFGHIJKLMNOP",
           "eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl", "alice@example.com", "10.2.3.4", "hunter2secret"]


def test_scrub_replaces_each_kind_and_keeps_ordinary_text():
    text = ("mail alice@example.com key sk-ant-api03-abcdefghijklmnop gh ghp_0123456789abcdefghij0123 "
            "aws AKIAABCDEFGHIJKLMNOP jwt eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl password=hunter2secret "
            "Authorization: Bearer abcdefghijklmnop123 path /home/alice/src/app.py host 10.2.3.4 "
            "call +44 20 7946 0958 | keep python 3.11.7, src/app.py, 127.0.0.1, commit 9d1b5af")
    out, counts = scrub(text)
    for s in SECRETS:
        assert s not in out
    assert counts == {"email": 1, "secret": 6, "home_path": 1, "ip": 1, "phone": 1}
    assert "/home/<USER>/src/app.py" in out
    for kept in ("python 3.11.7", "src/app.py", "127.0.0.1", "commit 9d1b5af"):
        assert kept in out


def test_import_anthropic_and_openai_styles(tmp_path):
    anth = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the login for alice@example.com"},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading the handler."},
                                          {"type": "tool_use", "id": "tu1", "name": "read",
                                           "input": {"path": "/home/alice/app/auth.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1",
                                      "content": "token = sk-ant-api03-abcdefghijklmnop", "is_error": True}]},
        {"role": "user", "content": "Now run the tests"},
    ]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in anth) + "\n\n")
    imp = import_transcript(path)
    kinds = [(i.zone.value, i.kind, i.turn) for i in imp.session.items]
    assert kinds == [("system", "system_prompt", 0), ("chronicle", "user_message", 0),
                     ("chronicle", "agent_response", 0), ("workspace", "tool_result", 0),
                     ("chronicle", "user_message", 1)]
    tool = imp.session.items[3]
    assert tool.status == "error" and tool.group == "tu1" and tool.tool_name == "read"
    out = write_session(imp, tmp_path / "s.json").read_text()
    assert not any(s in out for s in SECRETS) and "alice" not in out
    oai = [{"role": "user", "content": "hi"},
           {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}}]},
           {"role": "tool", "tool_call_id": "c1", "content": "README.md"}]
    path2 = tmp_path / "b.jsonl"
    path2.write_text("\n".join(json.dumps(m) for m in oai))
    items = import_transcript(path2).session.items
    assert items[-1].tool_name == "bash" and items[-1].group == "c1" and "README.md" in items[-1].text


@pytest.mark.parametrize("line,fragment", [
    ("{not json", "b.jsonl:2: not valid JSON"),
    ('{"role": "robot", "content": "x"}', "b.jsonl:2: field 'role' is 'robot'"),
    ('{"role": "user"}', "b.jsonl:2: field 'content' is missing"),
])
def test_bad_lines_name_file_line_and_field(tmp_path, line, fragment):
    path = tmp_path / "b.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n' + line + "\n")
    with pytest.raises(SuiteError, match=fragment.replace("(", r"\(")):
        import_transcript(path)


def test_empty_transcript_is_an_error(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("\n")
    with pytest.raises(SuiteError, match="empty"):
        import_transcript(path)
