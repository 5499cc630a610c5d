"""The neutral form every transcript reader produces.

A reader turns one file into one or more :class:`RawSession` (a file may hold
several sessions: aider appends one per run; a Claude Code ``/clear`` starts a
fresh context). Each session is a flat list of :class:`Event`:

* ``system``    — a system prompt;
* ``user``      — a user message; it starts a new turn;
* ``turn``      — a new turn with no user message (one SWE-agent step);
* ``assistant`` — assistant text;
* ``call``      — a tool call: ``call_id``, ``tool``, ``args`` (dict or text);
* ``result``    — the result of call ``call_id``: ``text``, ``is_error``.

Readers report what they normalised in ``quirks`` (a count per kind, e.g.
``merged_records``, ``sidechain_records_dropped``, ``interrupts``); they raise
:class:`~silas_exp.errors.SuiteError` naming ``file:line`` only for input that
cannot be read at all. Quirks of the conversation itself (reused call ids,
calls with no result, results with no call, huge outputs) are left to the
builder, which normalises and counts them the same way for every format.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal["system", "user", "turn", "assistant", "call", "result"]
Sidechains = Literal["drop", "separate"]


@dataclass
class Event:
    kind: EventKind
    text: str = ""
    call_id: str | None = None
    tool: str | None = None
    args: Any = None
    is_error: bool = False
    where: str = ""  # "file:line" (or "file:step N") the event came from


@dataclass
class RawSession:
    session_id: str
    source: str  # the file name (no folders)
    format: str
    events: list[Event] = field(default_factory=list)
    quirks: Counter[str] = field(default_factory=Counter)
    meta: dict[str, str] = field(default_factory=dict)  # tool version, model, … (no PII)


@dataclass(frozen=True)
class ReadOptions:
    sidechains: Sidechains = "drop"  # Claude Code subagent records: dropped, or a session of their own
