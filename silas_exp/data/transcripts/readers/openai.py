"""Chat-message transcripts: OpenAI-style chat JSONL (one ``{"role", "content",
"tool_calls"?, "tool_call_id"?}`` per line), also a single ``{"messages":
[...]}`` object or a JSON array of messages, as evaluation and fine-tuning
exports write them. Anthropic content blocks (``text``, ``tool_use``,
``tool_result``) are accepted in ``content``; images become ``[image]``, other
blocks ``[type]``; thinking blocks and ``reasoning_content`` are dropped
(quirk ``thinking_blocks_dropped``). A user message holding only
``tool_result`` blocks carries results, not a new turn. The legacy
``function_call`` / ``role: function`` pair is a call and its result
(``legacy_function_calls``).

One session per file (id: the file stem); a fine-tuning JSONL with one
``{"messages": [...]}`` conversation per line gives one session per line
(``<stem>-1``, ``<stem>-2`` …)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from silas_exp.data.json_errors import json_hint
from silas_exp.data.transcripts.events import Event, RawSession, ReadOptions
from silas_exp.data.transcripts.readers import DEFAULT_OPTIONS, jsonl_records, read_text
from silas_exp.errors import SuiteError

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
WHAT = "chat-message JSONL transcript"
TEXT = ("text", "input_text", "output_text")
IMAGE = ("image", "image_url", "input_image")
THINKING = ("thinking", "redacted_thinking", "reasoning")


def looks_like(path: Path, head: str) -> bool:
    first = next((ln for ln in head.splitlines() if ln.strip()), "").lstrip("\ufeff ")
    return ('"role"' in head and (first.startswith("{") or first.startswith("["))) \
        or path.suffix == ".jsonl" and '"messages"' in head


def _describe(value: Any) -> str:
    return repr(value) if isinstance(value, str) else f"{value!r} ({type(value).__name__})"


class _Messages:
    def __init__(self, path: Path, raw: RawSession) -> None:
        self.path, self.raw = path, raw
        self.where = ""
        self.functions: list[str] = []  # ids given to legacy function calls not yet answered

    def fail(self, fld: str, problem: str, fix: str) -> SuiteError:
        return SuiteError(f"{self.where}: field '{fld}' {problem}; {fix}")

    def emit(self, kind: str, text: str = "", **kw: Any) -> None:
        self.raw.events.append(Event(kind, text, where=self.where, **kw))  # type: ignore[arg-type]

    def blocks(self, content: Any, fld: str = "content") -> list[dict[str, Any]]:
        if content is None:
            return []
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise self.fail(fld, f"is {_describe(content)}",
                            "expected a string or a list of blocks like {\"type\": \"text\", ...}")
        for i, block in enumerate(content):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise self.fail(f"{fld}[{i}].type", "is missing",
                                "every block needs \"type\": \"text\", \"tool_use\" or \"tool_result\"")
        return content

    def text_of(self, blocks: list[dict[str, Any]]) -> str:
        return "\n".join(t for t in (self.block_text(b) for b in blocks) if t is not None)

    def block_text(self, b: dict[str, Any]) -> str | None:
        """The text a block stands for; None for a dropped thinking block."""
        if b["type"] in THINKING:
            self.raw.quirks["thinking_blocks_dropped"] += 1
            return None
        if b["type"] in TEXT:
            return str(b.get("text", ""))
        return "[image]" if b["type"] in IMAGE else f"[{b['type']}]"

    def need(self, obj: dict[str, Any], key: str, fld: str, fix: str) -> str:
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(fld, "is missing" if value is None else f"is {_describe(value)}", fix)
        return value

    def tool_result(self, block: dict[str, Any], fld: str) -> None:
        cid = self.need(block, "tool_use_id", f"{fld}.tool_use_id",
                        "a tool_result block needs the id of its tool_use")
        self.emit("result", self.text_of(self.blocks(block.get("content"), f"{fld}.content")),
                  call_id=cid, is_error=bool(block.get("is_error")))

    def message(self, msg: dict[str, Any]) -> None:
        role = msg.get("role")
        if role is None:
            raise self.fail("role", "is missing", f"add \"role\": one of {', '.join(ROLES)}")
        if role not in ROLES:
            raise self.fail("role", f"is {_describe(role)}", f"expected one of {', '.join(ROLES)}")
        if "content" not in msg and not (role == "assistant" and msg.get("tool_calls")):
            raise self.fail("content", "is missing",
                            "add \"content\": a string or a list of blocks (it may be \"\")")
        blocks = self.blocks(msg.get("content"))
        if role in ("system", "developer"):
            self.emit("system", self.text_of(blocks))
        elif role == "user":
            for i, b in enumerate(blocks):
                if b["type"] == "tool_result":
                    self.tool_result(b, f"content[{i}]")
            rest = [b for b in blocks if b["type"] != "tool_result"]
            if rest or not blocks:
                self.emit("user", self.text_of(rest))
        elif role == "assistant":
            self.assistant(msg, blocks)
        elif role == "function":
            self.raw.quirks["legacy_function_calls"] += 1
            cid = self.functions.pop(0) if self.functions else f"function-{len(self.raw.events)}"
            self.emit("result", self.text_of(blocks), call_id=cid)
        else:
            if blocks and all(b["type"] == "tool_result" for b in blocks):
                for i, b in enumerate(blocks):
                    self.tool_result(b, f"content[{i}]")
                return
            cid = self.need(msg, "tool_call_id", "tool_call_id",
                            "a tool message needs the id of the call it answers")
            self.emit("result", self.text_of(blocks), call_id=cid,
                      is_error=bool(msg.get("is_error")))

    def assistant(self, msg: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
        if msg.get("reasoning_content"):
            self.raw.quirks["thinking_blocks_dropped"] += 1
        text = []
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use":
                if text:
                    self.emit("assistant", "\n".join(text))
                    text = []
                cid = self.need(b, "id", f"content[{i}].id", "a tool_use block needs an id")
                name = self.need(b, "name", f"content[{i}].name", "a tool_use block needs a name")
                self.emit("call", call_id=cid, tool=name, args=b.get("input", {}))
            else:
                t = self.block_text(b)
                if t:
                    text.append(t)
        if text:
            self.emit("assistant", "\n".join(text))
        if isinstance(msg.get("function_call"), dict):
            self.legacy_call(msg["function_call"])
        calls = msg.get("tool_calls") or []
        if not isinstance(calls, list):
            raise self.fail("tool_calls", f"is {_describe(calls)}",
                            "expected a list of {\"id\", \"function\": {\"name\", \"arguments\"}}")
        for i, tc in enumerate(calls):
            fn = tc.get("function") if isinstance(tc, dict) else None
            if not isinstance(fn, dict):
                raise self.fail(f"tool_calls[{i}].function", "is missing",
                                "each tool call needs \"function\": {\"name\", \"arguments\"}")
            cid = self.need(tc, "id", f"tool_calls[{i}].id", "each tool call needs an id")
            name = self.need(fn, "name", f"tool_calls[{i}].function.name",
                             "each tool call needs a name")
            self.emit("call", call_id=cid, tool=name, args=fn.get("arguments", ""))

    def legacy_call(self, fn: dict[str, Any]) -> None:
        name = self.need(fn, "name", "function_call.name", "a function call needs a name")
        cid = f"function-{len(self.raw.events)}"
        self.functions.append(cid)
        self.emit("call", call_id=cid, tool=name, args=fn.get("arguments", ""))


def _whole(path: Path, text: str) -> list[Any] | None:
    """The messages of a file that is one JSON document, or None for JSONL."""
    stripped = text.lstrip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return None  # JSONL: one document per line
        if stripped.startswith("{") and "\n" not in stripped.rstrip():
            return None  # a one-line JSONL file: its error names the line
        raise SuiteError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno}). "
                         f"{json_hint(exc)} A chat transcript is a JSONL file or one JSON object "
                         "{\"messages\": [...]}.") from None
    if isinstance(obj, list):
        return obj
    if "role" in obj:
        return [obj]
    if not isinstance(obj.get("messages"), list):
        raise SuiteError(f"{path}:1: field 'messages' is missing; pass a chat JSONL file or one "
                         "JSON object {\"messages\": [...]}")
    return obj["messages"]


def _session(path: Path, sid: str, records: list[tuple[str, Any]], label: str) -> RawSession:
    raw = RawSession(sid, path.name, "openai")
    reader = _Messages(path, raw)
    for where, msg in records:
        reader.where = where
        if not isinstance(msg, dict):
            raise reader.fail("role", f"cannot be read: the {label} is {type(msg).__name__}",
                              "write one {\"role\": ..., \"content\": ...} object per message")
        reader.message(msg)
    return raw


def read(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> list[RawSession]:
    text = read_text(path, WHAT)
    msgs = _whole(path, text)
    if msgs is not None:
        return [_session(path, path.stem, [(f"{path}: message {i}", m)
                                           for i, m in enumerate(msgs, 1)], "message")]
    lines = jsonl_records(path, text, WHAT)
    if all("messages" in obj and "role" not in obj for _, obj in lines):  # one conversation a line
        out = []
        for n, (lineno, obj) in enumerate(lines, 1):
            if not isinstance(obj["messages"], list):
                raise SuiteError(f"{path}:{lineno}: field 'messages' is "
                                 f"{type(obj['messages']).__name__}; expected a list of "
                                 "{\"role\", \"content\"} messages")
            sid = f"{path.stem}-{n}" if len(lines) > 1 else path.stem
            out.append(_session(path, sid, [(f"{path}:{lineno}: message {i}", m)
                                            for i, m in enumerate(obj["messages"], 1)], "message"))
        return out
    return [_session(path, path.stem, [(f"{path}:{n}", m) for n, m in lines], "line")]
