"""Replayable sessions: context items as they enter the window, turn by turn,
plus the ground truth of which items later turns need.

A session travels inside a §20.2 ``BenchmarkCase``: ``input.context`` holds
the items, ``input.config_overrides`` the profile and budget, and
``expected.value["references"]`` the ground truth. The split is deliberate:
scorers only ever receive ``Session`` (the input side); ``SessionTruth`` is
seen by the simulated main model and the metrics alone.
"""

from __future__ import annotations

from typing import Literal

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


class SessionItem(_Model):
    """One block that enters the window at ``turn``."""

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
