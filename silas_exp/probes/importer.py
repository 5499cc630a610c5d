"""Import organic transcripts (chat-message JSONL: one ``{"role", "content"}``
per line; Anthropic content blocks or OpenAI ``tool_calls``) as replayable
sessions, PII-scrubbed before anything is stored. Probes for them are written
by hand (a ``probe_plan``, docs/probes.md)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from silas_exp.errors import SuiteError
from silas_exp.probes.pii import scrub
from silas_exp.schema.session import Session

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class ImportedTranscript:
    session: Session
    pii_counts: Counter[str]
    source: str


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(b.get("text", b.get("content", ""))) if isinstance(b, dict) else str(b)
                         for b in content)
    return "" if content is None else json.dumps(content)


def import_transcript(path: Path, *, session_id: str | None = None, scope_id: str = "organic",
                      profile: str = "coding") -> ImportedTranscript:
    path = Path(path)
    sid = session_id or path.stem
    counts: Counter[str] = Counter()
    items: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    turn, seen_user, n = 0, False, 0

    def add(zone: str, kind: str, text: str, **extra: Any) -> None:
        nonlocal n
        clean, c = scrub(text)
        counts.update(c)
        items.append({"ctx_id": f"{sid}-t{turn}-{n}", "turn": turn, "zone": zone, "kind": kind,
                      "text": clean, **extra})
        n += 1

    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else None
    if lines is None:
        raise SuiteError(f"{path}: file not found; give the path of a JSONL transcript.")
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path.name}:{lineno}"
        try:
            msg = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{where}: not valid JSON ({exc.msg}); one message object per line.") from None
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ROLES:
            raise SuiteError(f"{where}: field 'role' is {role!r}; expected one of {', '.join(ROLES)}.")
        if "content" not in msg and not msg.get("tool_calls"):
            raise SuiteError(f"{where}: field 'content' is missing; every message needs content.")
        content = msg.get("content")
        if role == "user" and isinstance(content, list) and all(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            role = "tool"  # Anthropic style: tool results travel in a user message
        if role == "user":
            turn += seen_user
            seen_user = True
            add("chronicle", "user_message", _text(content))
        elif role == "system":
            add("system", "system_prompt", _text(content), pinned=True)
        elif role == "assistant":
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
            for b in blocks:
                if b.get("type") == "tool_use":
                    calls[b["id"]] = {"name": b.get("name"), "input": b.get("input")}
                elif b.get("type") == "text" and b.get("text"):
                    add("chronicle", "agent_response", b["text"])
            for tc in msg.get("tool_calls") or []:
                fn = tc.get("function", {})
                calls[tc.get("id", "")] = {"name": fn.get("name"), "input": fn.get("arguments")}
        else:
            blocks = content if isinstance(content, list) else [
                {"type": "tool_result", "tool_use_id": msg.get("tool_call_id"), "content": content}]
            for b in blocks:
                call = calls.get(b.get("tool_use_id") or "", {})
                head = f"{call.get('name') or 'tool'}({_text(call.get('input'))})\n" if call else ""
                add("workspace", "tool_result", head + _text(b.get("content")),
                    tool_name=call.get("name"), group=b.get("tool_use_id"),
                    status="error" if b.get("is_error") else "ok")
    if not items:
        raise SuiteError(f"{path}: no messages; the transcript is empty.")
    try:
        session = Session(session_id=sid, scope_id=scope_id, profile=profile, turns=turn + 1,
                          items=items)
    except ValidationError as exc:
        raise SuiteError(f"{path}: {exc.errors()[0]['msg']}") from None
    return ImportedTranscript(session, +counts, path.name)


def write_session(imported: ImportedTranscript, out: Path) -> Path:
    out.write_text(json.dumps({"session": imported.session.model_dump(mode="json"),
                               "truth": {"references": []},
                               "pii": dict(imported.pii_counts), "source": imported.source}, indent=1))
    return out
