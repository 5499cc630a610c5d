"""The chat-message reader: OpenAI tool calls, Anthropic blocks, the whole-file
shapes exports use, and errors that name the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from silas_exp.data.transcripts.readers import openai
from silas_exp.errors import SuiteError

FIX = Path(__file__).parent / "fixtures"
CHAT = FIX / "openai_chat.jsonl"
MESSAGES = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "user", "content": "tests fail"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "run", "arguments": "{\"cmd\": \"pytest\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "1 failed"},
    {"role": "assistant", "content": "One test fails."},
]


def events(session) -> list[tuple]:
    return [(e.kind, e.text, e.call_id, e.tool, e.is_error) for e in session.events]


def jsonl(tmp_path: Path, *msgs, name: str = "chat.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(m) + "\n" for m in msgs))
    return path


def test_fixture_tool_calls_and_tool_messages():
    (s,) = openai.read(CHAT)
    assert (s.session_id, s.source, s.format) == ("openai_chat", "openai_chat.jsonl", "openai")
    assert events(s) == [
        ("system", "You are a helpful coding assistant with shell access.", None, None, False),
        ("user", "Why does fetch() crash on 429?", None, None, False),
        ("call", "", "call_abc1", "read_file", False),
        ("result", "delay = int(resp.headers['retry_after'])", "call_abc1", None, False),
        ("assistant", "It indexes retry_after; the header is Retry-After. I'll use headers.get "
                      "instead of indexing.", None, None, False),
        ("user", "Run the tests", None, None, False),
        ("call", "", "call_abc2", "run_command", False),
    ]
    assert s.events[2].args == '{"path": "src/httpkit/client.py"}'  # arguments kept as written
    assert s.events[3].where.endswith("openai_chat.jsonl:4")
    assert not s.quirks


def test_anthropic_blocks(tmp_path):
    p = jsonl(tmp_path,
              {"role": "user", "content": [{"type": "text", "text": "why?"},
                                           {"type": "image", "source": {"type": "base64"}}]},
              {"role": "assistant", "content": [
                  {"type": "thinking", "thinking": "hm", "signature": "x"},
                  {"type": "text", "text": "Let me look."},
                  {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.py"}},
                  {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"cmd": "ls"}}]},
              {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1"},
                  {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
                   "content": [{"type": "text", "text": "ls: denied"}]}]},
              {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "toolu_3", "content": "late"},
                  {"type": "text", "text": "and now?"}]})
    (s,) = openai.read(p)
    assert events(s) == [
        ("user", "why?\n[image]", None, None, False),
        ("assistant", "Let me look.", None, None, False),
        ("call", "", "toolu_1", "Read", False),
        ("call", "", "toolu_2", "Bash", False),
        ("result", "x = 1", "toolu_1", None, False),  # results only: no new turn
        ("result", "ls: denied", "toolu_2", None, True),
        ("result", "late", "toolu_3", None, False),  # results first, then the text's turn
        ("user", "and now?", None, None, False),
    ]
    assert s.events[2].args == {"path": "a.py"}
    assert dict(s.quirks) == {"thinking_blocks_dropped": 1}


def test_tool_role_with_anthropic_result_blocks_and_developer_role(tmp_path):
    p = jsonl(tmp_path,
              {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
              {"role": "assistant", "content": [{"type": "output_text", "text": "Calling."}],
               "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
              {"role": "tool", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                            "content": "ok"}]})
    (s,) = openai.read(p)
    assert events(s) == [("system", "Be brief.", None, None, False),
                         ("assistant", "Calling.", None, None, False),
                         ("call", "", "c1", "f", False),
                         ("result", "ok", "c1", None, False)]


def test_legacy_function_call_and_reasoning_content(tmp_path):
    p = jsonl(tmp_path,
              {"role": "user", "content": "weather?"},
              {"role": "assistant", "content": None, "reasoning_content": "think",
               "function_call": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
              {"role": "function", "name": "get_weather", "content": "4 C"})
    (s,) = openai.read(p)
    assert [(e.kind, e.call_id, e.tool, e.text) for e in s.events] == [
        ("user", None, None, "weather?"),
        ("call", "function-1", "get_weather", ""),
        ("result", "function-1", None, "4 C")]
    assert dict(s.quirks) == {"legacy_function_calls": 1, "thinking_blocks_dropped": 1}


@pytest.mark.parametrize("shape", ["object", "array", "pretty"])
def test_whole_file_shapes(tmp_path, shape):
    p = tmp_path / "export.json"
    doc = {"object": {"messages": MESSAGES, "metadata": {"split": "train"}},
           "array": MESSAGES, "pretty": {"messages": MESSAGES}}[shape]
    p.write_text(json.dumps(doc, indent=2 if shape == "pretty" else None))
    (s,) = openai.read(p)
    assert s.session_id == "export"
    assert [e.kind for e in s.events] == ["system", "user", "call", "result", "assistant"]
    assert s.events[3].where.endswith("export.json: message 4")


def test_fine_tuning_jsonl_one_conversation_a_line(tmp_path):
    p = jsonl(tmp_path, {"messages": MESSAGES}, {"messages": MESSAGES[:2]}, name="train.jsonl")
    one, two = openai.read(p)
    assert (one.session_id, two.session_id) == ("train-1", "train-2")
    assert [e.kind for e in two.events] == ["system", "user"]
    assert two.events[1].where.endswith("train.jsonl:2: message 2")
    (single,) = openai.read(jsonl(tmp_path, {"messages": MESSAGES}, name="one.jsonl"))
    assert single.session_id == "one"


# -- errors --------------------------------------------------------------------------------------

def test_bad_json_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "x"\n')
    with pytest.raises(SuiteError, match=r"bad\.jsonl:2: not valid JSON"):
        openai.read(p)


def test_bad_json_in_a_whole_file(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{\n  "messages": [\n    {"role": "user", "content": "hi"},\n  ]\n}\n')
    with pytest.raises(SuiteError, match=r"bad\.json:4: not valid JSON"):
        openai.read(p)


def test_a_line_that_is_not_an_object(tmp_path):
    p = tmp_path / "list.jsonl"
    p.write_text('{"role": "user", "content": "hi"}\n"just text"\n')
    with pytest.raises(SuiteError, match=r"list\.jsonl:2: the line is a JSON str, not an object"):
        openai.read(p)


def test_empty_file(tmp_path):
    p = tmp_path / "none.jsonl"
    p.write_text("")
    with pytest.raises(SuiteError, match=r"none\.jsonl:1: the file is empty"):
        openai.read(p)


@pytest.mark.parametrize(("msg", "where", "message"), [
    ({"content": "hi"}, "2", r"field 'role' is missing; add \"role\""),
    ({"role": "human", "content": "hi"}, "2", r"field 'role' is 'human'; expected one of"),
    ({"role": "user"}, "2", r"field 'content' is missing"),
    ({"role": "user", "content": 5}, "2", r"field 'content' is 5 \(int\)"),
    ({"role": "user", "content": [{"text": "x"}]}, "2", r"field 'content\[0\].type' is missing"),
    ({"role": "tool", "content": "ok"}, "2", r"field 'tool_call_id' is missing"),
    ({"role": "assistant", "content": "", "tool_calls": [{"id": "c"}]}, "2",
     r"field 'tool_calls\[0\].function' is missing"),
    ({"role": "user", "content": [{"type": "tool_result", "content": "x"}]}, "2",
     r"field 'content\[0\].tool_use_id' is missing"),
])
def test_fields_that_cannot_be_read_are_named(tmp_path, msg, where, message):
    p = jsonl(tmp_path, {"role": "system", "content": "s"}, msg, name="f.jsonl")
    with pytest.raises(SuiteError, match=rf"f\.jsonl:{where}: {message}"):
        openai.read(p)


def test_object_without_messages(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"conversation": []}')
    with pytest.raises(SuiteError, match=r"x\.json:1: field 'messages' is missing"):
        openai.read(p)
