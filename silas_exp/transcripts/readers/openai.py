"""Chat-message transcripts: OpenAI-style chat JSONL (one ``{"role", "content",
"tool_calls"?, "tool_call_id"?}`` per line), also a single ``{"messages":
[...]}`` object or a JSON array of messages, as evaluation and fine-tuning
exports write them. Anthropic content blocks (``text``, ``tool_use``,
``tool_result``) are accepted in ``content``; images and other blocks become
``[type]``, thinking blocks are dropped (quirk ``thinking_blocks_dropped``).
A user message holding only ``tool_result`` blocks carries results, not a
new turn. One session per file (id: the file stem)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from silas_exp.errors import SuiteError
from silas_exp.transcripts.events import Event, RawSession, ReadOptions
from silas_exp.transcripts.readers import DEFAULT_OPTIONS, jsonl_records, read_text

ROLES = ("system", "developer", "user", "assistant", "tool")
WHAT = "chat-message JSONL transcript"


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
        parts = []
        for b in blocks:
            if b["type"] in ("thinking", "redacted_thinking"):
                self.raw.quirks["thinking_blocks_dropped"] += 1
            elif b["type"] in ("text", "input_text", "output_text"):
                parts.append(str(b.get("text", "")))
            else:
                parts.append(f"[{b['type']}]")
        return "\n".join(parts)

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
        text = []
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use":
                if text:
                    self.emit("assistant", "\n".join(text))
                    text = []
                cid = self.need(b, "id", f"content[{i}].id", "a tool_use block needs an id")
                name = self.need(b, "name", f"content[{i}].name", "a tool_use block needs a name")
                self.emit("call", call_id=cid, tool=name, args=b.get("input", {}))
            elif b["type"] in ("thinking", "redacted_thinking"):
                self.raw.quirks["thinking_blocks_dropped"] += 1
            elif b["type"] == "text":
                if b.get("text"):
                    text.append(str(b["text"]))
            else:
                text.append(f"[{b['type']}]")
        if text:
            self.emit("assistant", "\n".join(text))
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


def read(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> list[RawSession]:
    text = read_text(path, WHAT)
    raw = RawSession(path.stem, path.name, "openai")
    reader = _Messages(path, raw)
    stripped = text.lstrip()
    whole = None
    if stripped.startswith("["):
        whole = "array"
    elif stripped.startswith("{") and "\n{" not in stripped.strip():
        whole = "object"
    if whole:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); pass a chat JSONL "
                             "file or one JSON object {\"messages\": [...]}") from None
        msgs = obj if isinstance(obj, list) else obj.get("messages") if "role" not in obj else [obj]
        if not isinstance(msgs, list):
            raise SuiteError(f"{path}:1: field 'messages' is missing; pass a chat JSONL file or one "
                             "JSON object {\"messages\": [...]}")
        records = [(i, m) for i, m in enumerate(msgs, 1)]
        label = "message"
    else:
        records = jsonl_records(path, text, WHAT)
        label = "line"
    for n, msg in records:
        reader.where = f"{path}:{n}" if label == "line" else f"{path}: message {n}"
        if not isinstance(msg, dict):
            raise reader.fail("role", f"cannot be read: the {label} is {type(msg).__name__}",
                              "write one {\"role\": ..., \"content\": ...} object per message")
        reader.message(msg)
    return [raw]
