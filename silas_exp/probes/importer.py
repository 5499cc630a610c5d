"""Import real chat transcripts as replayable sessions, PII-scrubbed before
anything is stored.

Input is the common chat-message JSONL form: one JSON object per line with
``role`` (system, user, assistant, tool) and ``content`` (a string or a list
of blocks: ``text``, ``tool_use``, ``tool_result``). OpenAI-style
``tool_calls`` on assistant messages and ``role: tool`` answers with
``tool_call_id`` are accepted too. Blank lines are skipped.

Mapping to :class:`~silas_exp.schema.session.SessionItem`:

* system -> zone ``system``, kind ``system_prompt``, pinned;
* user text -> ``chronicle`` / ``user_message``; each one starts a turn
  (turn 0 is the first user message; earlier items are at turn 0). A user
  message holding only ``tool_result`` blocks (Anthropic style) does not;
* assistant text -> ``chronicle`` / ``agent_response``;
* a tool call and its result -> one ``workspace`` / ``tool_result`` item
  ``name(arguments)`` + result text, ``group`` = the call id, ``tool_name``,
  ``status`` ``error`` when ``is_error`` (``ok`` otherwise, None while no
  result came). The item sits at the turn and position of the call.

Block types other than these (images, thinking) are skipped in assistant
messages and shown as ``[<type>]`` elsewhere. Item ids are
``<session_id>-t<turn>-<n>``, n counting from 0 within the turn. Probes for
imported sessions are written by hand (a ``probe_plan``, docs/probes.md).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args

from pydantic import ValidationError

from silas_exp.errors import SuiteError
from silas_exp.probes.pii import scrub, scrub_obj
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import ItemKind, Profile, Session, SessionItem

ROLES = ("system", "user", "assistant", "tool")
_PROFILES: tuple[str, ...] = get_args(Profile)


@dataclass(frozen=True)
class ImportedTranscript:
    """A scrubbed session, the PII replacements made per kind, and the source file name."""

    session: Session
    pii_counts: Counter[str]
    source: str


@dataclass
class _Draft:
    """An item under construction; its text is scrubbed when the session is built."""

    ctx_id: str
    turn: int
    zone: ContextZone
    kind: ItemKind
    text: str
    pinned: bool = False
    group: str | None = None
    tool_name: str | None = None
    status: Literal["ok", "error"] | None = None
    answered: bool = False  # a tool call whose result has been seen


def _describe(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})" if not isinstance(value, str) else repr(value)


@dataclass
class _Reader:
    """Turns messages into drafts, one line at a time; ``where`` is ``file:line``."""

    sid: str
    drafts: list[_Draft] = field(default_factory=list)
    calls: dict[str, tuple[_Draft, str]] = field(default_factory=dict)  # call id -> draft, where
    counts: Counter[str] = field(default_factory=Counter)
    turn: int = -1  # -1 until the first user message
    per_turn: Counter[int] = field(default_factory=Counter)
    where: str = ""

    # -- helpers -----------------------------------------------------------

    def fail(self, fld: str, problem: str, fix: str) -> SuiteError:
        return SuiteError(f"{self.where}: field '{fld}' {problem}; {fix}")

    @property
    def current(self) -> int:
        return max(self.turn, 0)

    def add(self, zone: ContextZone, kind: ItemKind, text: str, **extra: Any) -> _Draft:
        turn = self.current
        draft = _Draft(f"{self.sid}-t{turn}-{self.per_turn[turn]}", turn, zone, kind, text, **extra)
        self.per_turn[turn] += 1
        self.drafts.append(draft)
        return draft

    def blocks(self, content: Any, fld: str = "content") -> list[dict[str, Any]]:
        """Normalise ``content`` to a list of typed blocks."""
        if content is None:
            return []
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise self.fail(fld, f"is {_describe(content)}",
                            "expected a string or a list of blocks like {\"type\": \"text\", \"text\": ...}")
        for i, block in enumerate(content):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise self.fail(f"{fld}[{i}].type", "is missing",
                                "every block needs \"type\": \"text\", \"tool_use\" or \"tool_result\"")
        return content

    def text_of(self, content: Any, fld: str) -> str:
        """Plain text of a user/system/tool content: text blocks joined, others as ``[type]``."""
        parts = [b.get("text", "") if b["type"] == "text" else f"[{b['type']}]"
                 for b in self.blocks(content, fld)]
        return "\n".join(p for p in parts if isinstance(p, str))

    def arguments(self, value: Any) -> str:
        """Tool-call arguments as scrubbed text; JSON strings are parsed so escapes do not hide PII."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return value
        clean, c = scrub_obj(value)
        self.counts.update(c)
        return json.dumps(clean, ensure_ascii=False)

    def required_str(self, obj: dict[str, Any], key: str, fld: str, fix: str) -> str:
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(fld, "is missing" if value is None else f"is {_describe(value)}", fix)
        return value

    # -- tool calls --------------------------------------------------------

    def call(self, call_id: str, name: str, arguments: Any, fld: str) -> None:
        if call_id in self.calls:
            raise self.fail(fld, f"is {call_id!r}, already used by the call at {self.calls[call_id][1]}",
                            "give every tool call its own id")
        draft = self.add(ContextZone.WORKSPACE, "tool_result", f"{name}({self.arguments(arguments)})",
                         group=call_id, tool_name=name)
        self.calls[call_id] = (draft, self.where)

    def result(self, call_id: str, text: str, is_error: bool, fld: str,
               name: str | None = None) -> None:
        status: Literal["ok", "error"] = "error" if is_error else "ok"
        if call_id not in self.calls:  # a result whose call is not in the transcript
            draft = self.add(ContextZone.WORKSPACE, "tool_result", text, group=call_id,
                             tool_name=name, status=status, answered=True)
            self.calls[call_id] = (draft, self.where)
            return
        draft, _ = self.calls[call_id]
        if draft.answered:
            raise self.fail(fld, f"is {call_id!r}, a call that already has a result",
                            "send one result per tool call")
        draft.text, draft.status, draft.answered = f"{draft.text}\n{text}", status, True

    def tool_result_block(self, block: dict[str, Any], fld: str) -> None:
        call_id = self.required_str(block, "tool_use_id", f"{fld}.tool_use_id",
                                    "a tool_result block needs the id of its tool_use")
        text = self.text_of(block.get("content"), f"{fld}.content")
        self.result(call_id, text, bool(block.get("is_error")), f"{fld}.tool_use_id")

    # -- roles -------------------------------------------------------------

    def system(self, msg: dict[str, Any]) -> None:
        self.add(ContextZone.SYSTEM, "system_prompt", self.text_of(msg["content"], "content"),
                 pinned=True)

    def user(self, msg: dict[str, Any]) -> None:
        blocks = self.blocks(msg["content"])
        for i, block in enumerate(blocks):
            if block["type"] == "tool_result":
                self.tool_result_block(block, f"content[{i}]")
        rest = [b for b in blocks if b["type"] != "tool_result"]
        if blocks and not rest:
            return  # only tool results: the same turn goes on
        self.turn += 1
        self.add(ContextZone.CHRONICLE, "user_message", self.text_of(rest, "content"))

    def assistant(self, msg: dict[str, Any]) -> None:
        for i, block in enumerate(self.blocks(msg.get("content"))):
            fld = f"content[{i}]"
            if block["type"] == "text" and block.get("text"):
                self.add(ContextZone.CHRONICLE, "agent_response", str(block["text"]))
            elif block["type"] == "tool_use":
                call_id = self.required_str(block, "id", f"{fld}.id", "a tool_use block needs an id")
                name = self.required_str(block, "name", f"{fld}.name", "a tool_use block needs a name")
                self.call(call_id, name, block.get("input", {}), f"{fld}.id")
        tool_calls = msg.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            raise self.fail("tool_calls", f"is {_describe(tool_calls)}",
                            "expected a list of {\"id\", \"function\": {\"name\", \"arguments\"}}")
        for i, tc in enumerate(tool_calls):
            fld = f"tool_calls[{i}]"
            fn = tc.get("function") if isinstance(tc, dict) else None
            if not isinstance(fn, dict):
                raise self.fail(f"{fld}.function", "is missing",
                                "each tool call needs \"function\": {\"name\", \"arguments\"}")
            call_id = self.required_str(tc, "id", f"{fld}.id", "each tool call needs an id")
            name = self.required_str(fn, "name", f"{fld}.function.name", "each tool call needs a name")
            self.call(call_id, name, fn.get("arguments", ""), f"{fld}.id")

    def tool(self, msg: dict[str, Any]) -> None:
        blocks = self.blocks(msg["content"])
        if blocks and all(b["type"] == "tool_result" for b in blocks):
            for i, block in enumerate(blocks):
                self.tool_result_block(block, f"content[{i}]")
            return
        call_id = self.required_str(msg, "tool_call_id", "tool_call_id",
                                    "a tool message needs the id of the call it answers")
        name = msg.get("name") if isinstance(msg.get("name"), str) else None
        self.result(call_id, self.text_of(blocks, "content"), bool(msg.get("is_error")),
                    "tool_call_id", name)

    def message(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            raise self.fail("role", f"cannot be read: the line is {type(msg).__name__}, not an object",
                            "write one {\"role\": ..., \"content\": ...} object per line")
        role = msg.get("role")
        if role is None:
            raise self.fail("role", "is missing", f"add \"role\": one of {', '.join(ROLES)}")
        if role not in ROLES:
            raise self.fail("role", f"is {_describe(role)}", f"expected one of {', '.join(ROLES)}")
        if "content" not in msg and not (role == "assistant" and msg.get("tool_calls")):
            raise self.fail("content", "is missing",
                            "add \"content\": a string or a list of blocks (it may be \"\")")
        getattr(self, role)(msg)


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SuiteError(f"{path}: file not found; pass the path of a chat-message JSONL transcript") from None
    except IsADirectoryError:
        raise SuiteError(f"{path}: is a folder; pass the path of a JSONL transcript file") from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 text (byte {exc.start}); re-export the transcript as UTF-8") from None
    # split on newlines only: str.splitlines() would also break inside strings at U+2028 etc.
    return [line.rstrip("\r") for line in text.split("\n")]


def import_transcript(path: Path, *, session_id: str | None = None, scope_id: str = "organic",
                      profile: str = "coding") -> ImportedTranscript:
    """Read a chat-message JSONL transcript into a PII-scrubbed :class:`Session`.

    ``session_id`` defaults to the file's stem. Raises :class:`SuiteError`
    naming ``file:line`` and the field for bad JSON, a missing or unknown
    ``role``, missing ``content``, malformed blocks, or a file with no messages.
    """
    path = Path(path)
    if profile not in _PROFILES:
        raise SuiteError(f"{path}: profile is {profile!r}; pass one of {', '.join(_PROFILES)}")
    counts: Counter[str] = Counter()
    sid, c1 = scrub(session_id or path.stem)
    source, c2 = scrub(path.name)
    counts.update(c1 + c2)
    reader = _Reader(sid)
    lines = _read_lines(path)
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        reader.where = f"{path}:{lineno}"
        try:
            msg = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{reader.where}: not valid JSON ({exc.msg} at column {exc.colno}); "
                             "write one {\"role\": ..., \"content\": ...} object per line") from None
        reader.message(msg)
    counts.update(reader.counts)  # PII found in tool-call arguments
    if not reader.drafts:
        raise SuiteError(f"{path}:1: field 'role' not found: the file has no messages; "
                         "write one {\"role\": ..., \"content\": ...} object per line")
    return ImportedTranscript(_build(reader, scope_id, profile, counts), counts, source)


def _clean(value: str | None, counts: Counter[str]) -> str | None:
    if value is None:
        return None
    text, c = scrub(value)
    counts.update(c)
    return text


def _build(reader: _Reader, scope_id: str, profile: str, counts: Counter[str]) -> Session:
    """Scrub every draft's strings (adding to ``counts``) and validate the session."""
    try:
        items = [SessionItem(ctx_id=d.ctx_id, turn=d.turn, zone=d.zone, kind=d.kind,
                             text=_clean(d.text, counts) or "", pinned=d.pinned,
                             group=_clean(d.group, counts), tool_name=_clean(d.tool_name, counts),
                             status=d.status)
                 for d in reader.drafts]
        return Session(session_id=reader.sid, scope_id=scope_id, profile=cast(Profile, profile),
                       turns=reader.current + 1, items=items)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SuiteError(f"session {reader.sid!r}: field '{'.'.join(map(str, err['loc']))}' "
                         f"{err['msg']}; check the transcript around that item") from None


def write_session(imported: ImportedTranscript, out: Path) -> Path:
    """Write the scrubbed session as JSON (``model_dump(mode='json')``) and return ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(imported.session.model_dump(mode="json"), indent=1,
                              ensure_ascii=False) + "\n", encoding="utf-8")
    return out
