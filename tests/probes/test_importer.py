"""Organic transcripts: PII scrubbing and the chat-message JSONL importer."""

from __future__ import annotations

import json
import re
import secrets
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from silas_exp.errors import SuiteError
from silas_exp.probes.importer import ImportedTranscript, import_transcript, write_session
from silas_exp.probes.pii import scrub, scrub_obj
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import Session

# Fake credentials shaped like the real ones, made at run time (no key-shaped
# literal is committed); none of them is valid anywhere.
ANTHROPIC = "sk-ant-api03-" + secrets.token_hex(10)
OPENAI = "sk-proj-" + secrets.token_hex(12)
GITHUB = "ghp_0123456789abcdefghij0123456789abcdef"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijkl"
AWS = "AKIAABCDEFGHIJKLMNOP"
SLACK = "xoxb-1234567890-abcdefghij"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXBhcnQ"
BEARER = "abcdefghijklmnop123"
PASSWORD = "hunter2secret"
EMAIL = "alice.smith@example.com"
IP = "10.20.30.40"
PHONE = "+44 20 7946 0958"
SECRETS = [ANTHROPIC, OPENAI, GITHUB, GITHUB_PAT, AWS, SLACK, JWT, BEARER, PASSWORD, EMAIL, IP,
           "+44 20", "alice", "bob", "carol"]


# -- pii.scrub ---------------------------------------------------------------


@pytest.mark.parametrize("text,expected,kind", [
    (f"mail {EMAIL} now", "mail <EMAIL> now", "email"),
    (f"key {ANTHROPIC}", "key <SECRET>", "secret"),
    (f"key {OPENAI}", "key <SECRET>", "secret"),
    (f"key sk-{secrets.token_hex(10)}", "key <SECRET>", "secret"),
    (f"gh {GITHUB}", "gh <SECRET>", "secret"),
    ("gh gho_abcdefghijklmnopqrstuvwx", "gh <SECRET>", "secret"),
    (f"gh {GITHUB_PAT}", "gh <SECRET>", "secret"),
    (f"aws {AWS}", "aws <SECRET>", "secret"),
    (f"slack {SLACK}", "slack <SECRET>", "secret"),
    (f"jwt {JWT}", "jwt <SECRET>", "secret"),
    (f"Authorization: Bearer {BEARER}", "Authorization: Bearer <SECRET>", "secret"),
    ("api_key=abc123def456", "api_key=<SECRET>", "secret"),
    ("token: zzzzzzzz9", "token: <SECRET>", "secret"),
    (f"password={PASSWORD}", "password=<SECRET>", "secret"),
    ('{"password": "s3cr3tpw"}', '{"password": "<SECRET>"}', "secret"),
    ("export OPENAI_API_KEY=abcdefgh1234", "export OPENAI_API_KEY=<SECRET>", "secret"),
    ("postgres://app:pa55word@db.internal/x", "postgres://app:<SECRET>@db.internal/x", "secret"),
    ("open /home/alice/src/app.py", "open /home/<USER>/src/app.py", "home_path"),
    ("cd /Users/bob/work", "cd /Users/<USER>/work", "home_path"),
    (r"C:\Users\carol\proj\main.py", r"C:\Users\<USER>\proj\main.py", "home_path"),
    (f"host {IP}.", "host <IP>.", "ip"),
    ("1.2.3.4", "<IP>", "ip"),
    (f"call {PHONE}", "call <PHONE>", "phone"),
    ("call +1 (555) 123-4567", "call <PHONE>", "phone"),
])
def test_scrub_replaces_and_counts_each_kind(text: str, expected: str, kind: str) -> None:
    out, counts = scrub(text)
    assert out == expected
    assert counts == Counter({kind: 1})


def test_scrub_counts_every_replacement_in_mixed_text() -> None:
    text = (f"{EMAIL} {ANTHROPIC} {GITHUB} {AWS} {JWT} password={PASSWORD} Bearer {BEARER} "
            f"/home/alice/x {IP} {PHONE} bob@example.org")
    out, counts = scrub(text)
    assert counts == Counter({"email": 2, "secret": 6, "home_path": 1, "ip": 1, "phone": 1})
    assert not any(s in out for s in SECRETS)


@pytest.mark.parametrize("text", [
    "python 3.11.7 and numpy 1.26.4",
    "v1.2.3.4 is a version",
    "edit src/app.py and tests/test_app.py",
    "commit 9d1b5af3c2e4f60718293a4b5c6d7e8f90123456 (short 9d1b5af)",
    "serve on 127.0.0.1:8000 or 0.0.0.0",
    "token = get_token()",
    "token: Optional[str]",
    "max_tokens: 4096",
    "the password is wrong; use a Bearer token",
    "score +1.5, delta +10 20",
    "https://example.com/home/page",
    "git@github.com:org/repo.git",
    "1.2.3.4.5 and 999.1.1.1",
])
def test_scrub_keeps_ordinary_text(text: str) -> None:
    assert scrub(text) == (text, Counter())


def test_scrub_is_idempotent() -> None:
    once, _ = scrub(f"token = {ANTHROPIC}; api_key={PASSWORD}; /home/alice/x; {EMAIL}")
    assert once == "token = <SECRET>; api_key=<SECRET>; /home/<USER>/x; <EMAIL>"
    assert scrub(once) == (once, Counter())


def test_scrub_obj_walks_nested_data_keys_included() -> None:
    data = {EMAIL: [f"at {IP}", 3, None, True, {"cfg": {"api_key": f"x {AWS}"}}]}
    out, counts = scrub_obj(data)
    assert out == {"<EMAIL>": ["at <IP>", 3, None, True, {"cfg": {"api_key": "x <SECRET>"}}]}
    assert counts == Counter({"email": 1, "ip": 1, "secret": 1})
    assert data[EMAIL][0] == f"at {IP}"  # the input is not modified


# -- import_transcript --------------------------------------------------------


def write_jsonl(path: Path, messages: list[Any], *, blank_lines: bool = False) -> Path:
    sep = "\n\n" if blank_lines else "\n"
    path.write_text(sep.join(m if isinstance(m, str) else json.dumps(m) for m in messages) + "\n")
    return path


def shape(imported: ImportedTranscript) -> list[tuple[str, str, str, int, str | None, str | None]]:
    return [(i.ctx_id, i.zone.value, i.kind, i.turn, i.group, i.status)
            for i in imported.session.items]


ANTHROPIC_STYLE: list[dict[str, Any]] = [
    {"role": "system", "content": f"You are a coding agent. Owner: {EMAIL}"},
    {"role": "user", "content": f"Fix the login; my key is {ANTHROPIC}"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Reading the handler."},
        {"type": "tool_use", "id": "tu1", "name": "read",
         "input": {"path": r"C:\Users\carol\app\auth.py"}},
        {"type": "tool_use", "id": "tu2", "name": "bash", "input": {"cmd": f"ping {IP}"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "tu1",
         "content": [{"type": "text", "text": f"SECRET = '{GITHUB}'"}]},
        {"type": "tool_result", "tool_use_id": "tu2", "content": "unreachable", "is_error": True},
    ]},
    {"role": "assistant", "content": "The host is down."},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "late", "content": "orphan result"},
        {"type": "text", "text": f"Call me at {PHONE}, I am in /home/bob/."},
    ]},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                      {"type": "text", "text": f"Token {JWT} noted."}]},
]


def test_import_anthropic_blocks(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "chat.jsonl", ANTHROPIC_STYLE, blank_lines=True)
    imported = import_transcript(path, session_id="s1")
    assert shape(imported) == [
        ("s1-t0-0", "system", "system_prompt", 0, None, None),
        ("s1-t0-1", "chronicle", "user_message", 0, None, None),
        ("s1-t0-2", "chronicle", "agent_response", 0, None, None),
        ("s1-t0-3", "workspace", "tool_result", 0, "tu1", "ok"),
        ("s1-t0-4", "workspace", "tool_result", 0, "tu2", "error"),
        ("s1-t0-5", "chronicle", "agent_response", 0, None, None),
        ("s1-t0-6", "workspace", "tool_result", 0, "late", "ok"),
        ("s1-t1-0", "chronicle", "user_message", 1, None, None),
        ("s1-t1-1", "chronicle", "agent_response", 1, None, None),
    ]
    session = imported.session
    assert session.turns == 2 and session.scope_id == "organic" and session.profile == "coding"
    assert session.items[0].pinned and not session.items[1].pinned
    assert isinstance(session.items[0].zone, ContextZone)
    read, bash = session.items[3], session.items[4]
    assert (read.tool_name, bash.tool_name) == ("read", "bash")
    assert read.text == 'read({"path": "C:\\\\Users\\\\<USER>\\\\app\\\\auth.py"})\nSECRET = \'<SECRET>\''
    assert bash.text == 'bash({"cmd": "ping <IP>"})\nunreachable'
    assert session.items[7].text == "Call me at <PHONE>, I am in /home/<USER>/."
    assert imported.pii_counts == Counter({"email": 1, "secret": 3, "home_path": 2, "ip": 1,
                                           "phone": 1})
    assert imported.source == "chat.jsonl"


def test_written_session_has_no_secret_and_loads_back(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "chat.jsonl", ANTHROPIC_STYLE)
    imported = import_transcript(path)
    out = write_session(imported, tmp_path / "out" / "session.json")
    raw = out.read_text()
    leaked = [s for s in SECRETS if s in raw]
    assert leaked == []
    assert Session.model_validate(json.loads(raw)) == imported.session
    assert imported.session.session_id == "chat"  # defaults to the file's stem


def test_import_openai_tool_calls(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "list the repo"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"cmd": "ls /home/alice"})}},
            {"id": "call_2", "type": "function",
             "function": {"name": "curl", "arguments": f"https://x.io?api_key={PASSWORD}"}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "README.md\nsrc/"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "403"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "user", "content": "thanks"},
    ]
    imported = import_transcript(write_jsonl(tmp_path / "oai.jsonl", messages),
                                 session_id="o", scope_id="team", profile="research")
    assert shape(imported) == [
        ("o-t0-0", "system", "system_prompt", 0, None, None),
        ("o-t0-1", "chronicle", "user_message", 0, None, None),
        ("o-t0-2", "workspace", "tool_result", 0, "call_1", "ok"),
        ("o-t0-3", "workspace", "tool_result", 0, "call_2", "ok"),
        ("o-t0-4", "chronicle", "agent_response", 0, None, None),
        ("o-t1-0", "chronicle", "user_message", 1, None, None),
    ]
    items = imported.session.items
    assert items[2].tool_name == "bash" and items[2].text == 'bash({"cmd": "ls /home/<USER>"})\nREADME.md\nsrc/'
    assert items[3].text == "curl(https://x.io?api_key=<SECRET>)\n403"
    assert (imported.session.scope_id, imported.session.profile) == ("team", "research")
    assert imported.pii_counts == Counter({"home_path": 1, "secret": 1})


def test_tool_call_without_result_keeps_no_status(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "edit",
                                                   "input": {}}]}]
    item = import_transcript(write_jsonl(tmp_path / "cut.jsonl", messages)).session.items[-1]
    assert (item.text, item.group, item.status) == ("edit({})", "t", None)


# -- errors --------------------------------------------------------------------

GOOD = {"role": "user", "content": "hi"}
CALL = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]}


@pytest.mark.parametrize("bad,line,fragment", [
    ("{not json", 2, "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
    ('["role", "user"]', 2, "field 'role' cannot be read: the line is list"),
    ({"content": "x"}, 2, "field 'role' is missing; add \"role\": one of system, user, assistant, tool"),
    ({"role": "robot", "content": "x"}, 2,
     "field 'role' is 'robot'; expected one of system, user, assistant, tool"),
    ({"role": "user"}, 2, "field 'content' is missing"),
    ({"role": "user", "content": 42}, 2, "field 'content' is 42 (int)"),
    ({"role": "user", "content": [{"text": "no type"}]}, 2, "field 'content[0].type' is missing"),
    ({"role": "assistant", "content": [{"type": "tool_use", "name": "x"}]}, 2,
     "field 'content[0].id' is missing"),
    ({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {}}]}, 2,
     "field 'tool_calls[0].function.name' is missing"),
    ({"role": "user", "content": [{"type": "tool_result", "content": "x"}]}, 2,
     "field 'content[0].tool_use_id' is missing"),
    ({"role": "tool", "content": "x"}, 2, "field 'tool_call_id' is missing"),
    (CALL, 3, "field 'content[0].id' is 't1', already used by the call at {file}:2"),
])
def test_bad_lines_name_file_line_and_field(tmp_path: Path, bad: Any, line: int,
                                            fragment: str) -> None:
    path = tmp_path / "bad.jsonl"
    write_jsonl(path, [GOOD, CALL, bad] if line == 3 else [GOOD, bad])
    with pytest.raises(SuiteError) as info:
        import_transcript(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: ")
    assert "bad.jsonl" in message
    assert fragment.format(file=path) in message


def test_second_result_for_a_call_is_an_error(tmp_path: Path) -> None:
    result = {"role": "tool", "tool_call_id": "t1", "content": "ok"}
    path = write_jsonl(tmp_path / "dup.jsonl", [GOOD, CALL, result, result])
    with pytest.raises(SuiteError, match=re.escape(
            f"{path}:4: field 'tool_call_id' is 't1', a call that already has a result")):
        import_transcript(path)


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_transcript_is_an_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(SuiteError, match=re.escape(f"{path}:1: field 'role' not found: the file "
                                                   "has no messages")):
        import_transcript(path)


def test_missing_file_and_bad_profile_are_errors(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="nope.jsonl: file not found"):
        import_transcript(tmp_path / "nope.jsonl")
    path = write_jsonl(tmp_path / "ok.jsonl", [GOOD])
    with pytest.raises(SuiteError, match="profile is 'chat'; pass one of conversation, coding"):
        import_transcript(path, profile="chat")
