"""Events -> a replayable, PII-scrubbed :class:`Session`.

Mapping (the same for every format):

* ``system`` -> zone ``system``, kind ``system_prompt``, pinned;
* ``user`` -> ``chronicle`` / ``user_message``; it starts a turn (``turn``
  starts one without an item). Each agent step is a turn too: assistant text
  or a call that follows tool results is a new model call, so it starts the
  next turn (the window is assembled per model call). Items before the first
  turn are at turn 0;
* ``assistant`` -> ``chronicle`` / ``agent_response``;
* a ``call`` and its ``result`` -> one ``workspace`` / ``tool_result`` item at
  the call's turn and position: ``tool(arg=value, …)`` then the result text;
  ``group`` = the call id, ``status`` error / ok (None: no result came).

Real transcripts are messy; what the builder normalises it counts in the
session's quirks instead of rejecting the file:

* ``reused_call_ids`` — a call id seen before gets a ``#2``, ``#3`` … suffix
  (SWE-agent reuses ids across steps); results go to the latest call of that id;
* ``unanswered_calls`` — a call with no result (an interrupt, a crash);
* ``orphan_results`` — a result whose call is not in the transcript: an item of
  its own;
* ``duplicate_results`` — a second result for an answered call: appended;
* ``truncated_outputs`` — an item longer than ``max_item_chars`` keeps its head
  and tail; its token count stays that of the full text, so the window
  pressure is the real one.

Every string is scrubbed (:mod:`silas_exp.data.transcripts.pii`) before it is stored;
identities learned anywhere in the session (a name from ``git log``, a host
from a prompt) are scrubbed everywhere in it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import ValidationError

from silas_exp.context.budget import count_tokens
from silas_exp.data.transcripts.events import RawSession
from silas_exp.data.transcripts.pii import Scrubber
from silas_exp.errors import SuiteError
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import ItemKind, Profile, Session, SessionItem

MAX_ITEM_CHARS = 24_000
MAX_ARG_CHARS = 400  # one argument value shown in a call's text (file contents, patches)


@dataclass
class Draft:
    """An item under construction, with the structure truth and facts need."""

    ctx_id: str
    turn: int
    zone: ContextZone
    kind: ItemKind
    text: str = ""
    pinned: bool = False
    call_id: str | None = None
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    result: str | None = None
    status: Literal["ok", "error"] | None = None
    tokens: int | None = None
    facts: list[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        """What the agent did (a call's tool and arguments), as text."""
        if self.tool is None:
            return ""
        return f"{self.tool}({render_args(self.args)})"

    def compose(self) -> str:
        if self.kind != "tool_result" or self.tool is None or self.text:
            return self.text
        return self.action + ("" if self.result is None else "\n" + self.result)


def render_args(args: dict[str, Any]) -> str:
    """``k=v, …`` with string values as they are (so a path or command in them
    reads verbatim); long values are cut."""
    parts = []
    for k, v in args.items():
        s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        if len(s) > MAX_ARG_CHARS:
            s = s[:MAX_ARG_CHARS] + f"… [{len(s) - MAX_ARG_CHARS} chars]"
        parts.append(f"{k}={s}")
    return ", ".join(parts)


def _as_args(args: Any) -> dict[str, Any]:
    if isinstance(args, dict):
        return dict(args)
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except json.JSONDecodeError:
            return {"input": args} if args else {}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {} if args is None else {"input": args}


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    head, tail = text[: limit * 2 // 3], text[-limit // 3:]
    return f"{head}\n[… {len(text) - len(head) - len(tail)} chars cut …]\n{tail}", True


@dataclass
class _Builder:
    sid: str
    quirks: Counter[str]
    drafts: list[Draft] = field(default_factory=list)
    calls: dict[str, Draft] = field(default_factory=dict)  # call id (as given) -> latest call
    ids_seen: Counter[str] = field(default_factory=Counter)
    turn: int = -1
    per_turn: Counter[int] = field(default_factory=Counter)

    @property
    def current(self) -> int:
        return max(self.turn, 0)

    def add(self, zone: ContextZone, kind: ItemKind, **extra: Any) -> Draft:
        turn = self.current
        draft = Draft(f"{self.sid}-t{turn}-{self.per_turn[turn]}", turn, zone, kind, **extra)
        self.per_turn[turn] += 1
        self.drafts.append(draft)
        return draft

    def call(self, call_id: str | None, tool: str, args: Any) -> None:
        given = call_id or f"call-{len(self.drafts)}"
        self.ids_seen[given] += 1
        unique = given if self.ids_seen[given] == 1 else f"{given}#{self.ids_seen[given]}"
        if self.ids_seen[given] > 1:
            self.quirks["reused_call_ids"] += 1
        self.calls[given] = self.add(ContextZone.WORKSPACE, "tool_result", call_id=unique,
                                     tool=tool or "tool", args=_as_args(args))

    def result(self, call_id: str | None, text: str, is_error: bool) -> None:
        status: Literal["ok", "error"] = "error" if is_error else "ok"
        draft = self.calls.get(call_id or "")
        if draft is None:
            self.quirks["orphan_results"] += 1
            self.add(ContextZone.WORKSPACE, "tool_result", call_id=call_id, text=text,
                     result=text, status=status)
            return
        if draft.result is not None:
            self.quirks["duplicate_results"] += 1
            draft.result = f"{draft.result}\n{text}"
            draft.status = "error" if is_error or draft.status == "error" else "ok"
            return
        draft.result, draft.status = text, status


def build_drafts(raw: RawSession, sid: str | None = None) -> tuple[list[Draft], int]:
    """The session's items as drafts (not yet scrubbed; ids ``<sid>-t<turn>-<n>``)
    and its number of turns."""
    b = _Builder(sid or raw.session_id, raw.quirks)
    after_result = False  # the model is called again after tool results: a new step, a new turn
    for ev in raw.events:
        if ev.kind in ("assistant", "call") and after_result:
            b.turn += 1
        after_result = ev.kind == "result" or (after_result and ev.kind == "system")
        if ev.kind == "system":
            b.add(ContextZone.SYSTEM, "system_prompt", text=ev.text, pinned=True)
        elif ev.kind in ("user", "turn"):
            b.turn += 1
            if ev.kind == "user":
                b.add(ContextZone.CHRONICLE, "user_message", text=ev.text)
        elif ev.kind == "assistant":
            if ev.text.strip():
                b.add(ContextZone.CHRONICLE, "agent_response", text=ev.text)
        elif ev.kind == "call":
            b.call(ev.call_id, ev.tool or "tool", ev.args)
        elif ev.kind == "result":
            b.result(ev.call_id, ev.text, ev.is_error)
    unanswered = sum(1 for d in b.drafts if d.tool is not None and d.result is None)
    if unanswered:
        raw.quirks["unanswered_calls"] += unanswered
    return b.drafts, b.current + 1


def scrub_drafts(drafts: list[Draft], scrubber: Scrubber,
                 counter: Callable[[int], Callable[[int], None]] | None = None) -> None:
    """Scrub every string of every draft in place (identities learned first).

    A call is learned together with its result, so output whose meaning is the
    command that printed it (``hostname``, ``whoami``, ``git config
    user.name``) is read as such. ``counter(total)``: a progress counter over
    the characters of both passes (``total``), told after each draft."""
    learned = [(d.text, f"{d.action}\n{d.result or ''}") for d in drafts]
    total = sum(len(a) + len(b) for a, b in learned) + sum(
        len(d.text) + len(d.result or "") for d in drafts)
    tick = counter(total) if counter is not None else (lambda chars: None)

    def learning() -> Iterator[str]:
        for pair in learned:
            yield from pair
            tick(len(pair[0]) + len(pair[1]))

    scrubber.learn(learning())
    for d in drafts:
        chars = len(d.text) + len(d.result or "")
        d.text = scrubber.scrub(d.text)
        d.result = None if d.result is None else scrubber.scrub(d.result)
        d.args = scrubber.scrub_obj(d.args)
        d.tool = None if d.tool is None else scrubber.scrub(d.tool)
        d.call_id = None if d.call_id is None else scrubber.scrub(d.call_id)
        tick(chars)


def finish_drafts(drafts: list[Draft], quirks: Counter[str], max_item_chars: int = MAX_ITEM_CHARS
                  ) -> None:
    """Compose each item's text, cutting huge ones; every item gets its token
    count (of the full text, so a cut item weighs what the real one did)."""
    for d in drafts:
        full = d.compose()
        d.text, cut = _cut(full, max_item_chars)
        if cut:
            quirks["truncated_outputs"] += 1
        d.tokens = count_tokens(full) if d.tokens is None else d.tokens


def to_session(sid: str, drafts: list[Draft], turns: int, *, scope_id: str, profile: str
               ) -> Session:
    try:
        items = [SessionItem(ctx_id=d.ctx_id, turn=d.turn, zone=d.zone, kind=d.kind, text=d.text,
                             tokens=d.tokens, pinned=d.pinned, group=d.call_id, tool_name=d.tool,
                             status=d.status, facts=d.facts)
                 for d in drafts]
        return Session(session_id=sid, scope_id=scope_id, profile=cast(Profile, profile),
                       turns=turns, items=items)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SuiteError(f"session {sid!r}: field '{'.'.join(map(str, err['loc']))}' "
                         f"{err['msg']}; check the transcript around that item") from None


def drafts_of_session(session: Session) -> list[Draft]:
    """A session file in the project's own format, as drafts (for truth and probes)."""
    out = []
    for it in session.items:
        out.append(Draft(it.ctx_id, it.turn, it.zone, it.kind, text=it.text, pinned=it.pinned,
                         call_id=it.group, tool=it.tool_name, status=it.status, tokens=it.tokens,
                         facts=list(it.facts)))
    return out
