"""Replayable sessions: context items as they enter the window, turn by turn,
plus the ground truth of which items later turns need.

A session travels inside a §20.2 ``BenchmarkCase``: ``input.context`` holds
the items, ``input.config_overrides`` the profile and budget, and
``expected.value["references"]`` the ground truth. The split is deliberate:
scorers only ever receive ``Session`` (the input side); ``SessionTruth`` is
seen by the simulated main model and the metrics alone.
"""

from __future__ import annotations

import difflib
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from silas_exp.schema.eviction import ContextZone

ItemKind = Literal[
    "system_prompt",
    "user_message",
    "agent_response",
    "tool_result",
    "memory",
    "plan",
    "subscription",
    "ack",
]
Profile = Literal["conversation", "coding", "research", "support"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Silas's own ContextItem field names -> the names used here
CONTEXT_ITEM_NAMES = {"content": "text", "token_count": "tokens", "turn_number": "turn"}
_KIND_BY_ZONE = {"system": "system_prompt", "chronicle": "agent_response", "memory": "memory",
                 "workspace": "plan"}
_KIND_BY_SOURCE = {"user": "user_message", "agent": "agent_response",
                   "assistant": "agent_response", "system": "system_prompt", "memory": "memory",
                   "plan": "plan", "subscription": "subscription", "tool": "tool_result"}


KNOWN_KINDS: tuple[str, ...] = get_args(ItemKind)


def generic_kind(data: dict) -> dict:
    """Silas's item kinds are not fixed by the spec: a kind outside the eight
    is read as its zone's generic kind (chronicle → agent_response, memory →
    memory, workspace → plan, system → system_prompt), the kind as written kept
    in ``declared_kind`` (the load report counts them). A near miss of a known
    kind (``tool_reslt``) is a typo and an error with "did you mean"."""
    kind, zone = data.get("kind"), data.get("zone")
    if not isinstance(kind, str) or kind in KNOWN_KINDS or zone not in _KIND_BY_ZONE:
        return data
    near = difflib.get_close_matches(kind, KNOWN_KINDS, n=1, cutoff=0.8)
    if near:
        raise ValueError(f"item {data.get('ctx_id')!r}: kind {kind!r} is not a known kind; did "
                         f"you mean {near[0]!r}? (known: {', '.join(KNOWN_KINDS)}; any other "
                         "name is read as the zone's generic kind)")
    return {**data, "kind": _KIND_BY_ZONE[zone], "declared_kind": kind}


def from_context_item(raw: dict) -> dict:
    """Accept an item written with Silas's ContextItem names (``content``,
    ``token_count``, ``turn_number``, ``source``): rename them, and derive the
    kind from ``source`` ("user", "agent", "tool:pytest", "memory" …) or the zone."""
    if not any(k in raw for k in (*CONTEXT_ITEM_NAMES, "source")):
        return raw  # the project's own names
    data = {CONTEXT_ITEM_NAMES.get(k, k): v for k, v in raw.items() if k != "source"}
    for k in CONTEXT_ITEM_NAMES:
        if k in raw and CONTEXT_ITEM_NAMES[k] in raw:
            raise ValueError(f"item {raw.get('ctx_id')!r}: both {k!r} and "
                             f"{CONTEXT_ITEM_NAMES[k]!r} given; keep one")
    source = raw.get("source")
    if isinstance(source, str) and "kind" not in data:
        head, _, tool = source.partition(":")
        kind = _KIND_BY_SOURCE.get(head.strip().lower())
        if kind:
            data["kind"] = kind
        if head.strip().lower() == "tool" and tool and "tool_name" not in data:
            data["tool_name"] = tool.strip()
    if "kind" not in data and isinstance(data.get("zone"), str):
        data["kind"] = _KIND_BY_ZONE.get(data["zone"], data["zone"])
    data.setdefault("turn", 0)
    return data


class SessionItem(_Model):
    """One block that enters the window at ``turn``."""

    @model_validator(mode="before")
    @classmethod
    def _context_item_names(cls, data):
        return generic_kind(from_context_item(data)) if isinstance(data, dict) else data

    ctx_id: str = Field(min_length=1)
    turn: int = Field(ge=0)
    zone: ContextZone
    kind: ItemKind
    text: str = ""
    tokens: int | None = Field(default=None, ge=0)  # None: chars / 3.5
    pinned: bool = False
    group: str | None = None  # coherence group (a tool call and its result, a plan and its steps)
    tool_name: str | None = None
    status: Literal["ok", "error"] | None = None
    relevance: float | None = Field(default=None, ge=0.0, le=1.0)  # retrieval score of a memory
    completed_turn: int | None = Field(default=None, ge=0)  # workspace item done at this turn
    refreshed_turns: list[int] = Field(default_factory=list)  # subscription touched at these turns
    facts: list[str] = Field(default_factory=list)  # planted facts probes may ask about
    declared_kind: str | None = None  # a kind outside the eight, read as ``kind`` (generic_kind)


class Reference(_Model):
    """Ground truth: at ``turn`` the main model needs ``ctx_id`` with ``grade`` 0–3."""

    turn: int = Field(ge=0)
    ctx_id: str
    grade: int = Field(ge=0, le=3)


class Session(_Model):
    session_id: str
    scope_id: str
    profile: Profile
    turns: int = Field(ge=1)
    items: list[SessionItem]

    @model_validator(mode="after")
    def _check_items(self) -> Session:
        seen: set[str] = set()
        for item in self.items:
            if item.ctx_id in seen:
                raise ValueError(f"item {item.ctx_id!r}: duplicate ctx_id; every item needs its own")
            seen.add(item.ctx_id)
            if item.turn >= self.turns:
                raise ValueError(
                    f"item {item.ctx_id!r}: field 'turn' is {item.turn} but the session has "
                    f"{self.turns} turns (0..{self.turns - 1}); raise 'turns' or move the item"
                )
        return self


class SessionTruth(_Model):
    references: list[Reference] = Field(default_factory=list)

    def check_against(self, session: Session) -> None:
        """Raise ValueError naming the reference that cannot be honoured."""
        born = {it.ctx_id: it.turn for it in session.items}
        for ref in self.references:
            if ref.ctx_id not in born:
                raise ValueError(
                    f"reference to {ref.ctx_id!r} at turn {ref.turn}: no item has that ctx_id"
                )
            if ref.turn <= born[ref.ctx_id]:
                raise ValueError(
                    f"reference to {ref.ctx_id!r} at turn {ref.turn}: the item only exists from "
                    f"turn {born[ref.ctx_id]}; an item can be referenced after the turn it enters"
                )
            if ref.turn >= session.turns:
                raise ValueError(
                    f"reference to {ref.ctx_id!r}: field 'turn' is {ref.turn}, past the last turn "
                    f"{session.turns - 1}"
                )
