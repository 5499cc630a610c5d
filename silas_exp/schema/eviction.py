"""Eviction feedback loop data models (Silas spec §19.2)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ContextZone(StrEnum):
    SYSTEM = "system"
    CHRONICLE = "chronicle"
    MEMORY = "memory"
    WORKSPACE = "workspace"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvictionCandidate(_Model):
    """A single chunk proposed for eviction."""

    ctx_id: str
    zone: ContextZone
    relevance_score: float = Field(ge=0.0, le=1.0)
    age_turns: int = Field(ge=0)
    token_count: int = Field(ge=0)


class EvictionProposal(_Model):
    """A batch of chunks proposed for eviction by the scorer, ranked (first = evict first)."""

    proposal_id: str
    scope_id: str
    turn_number: int
    proposed_at: datetime
    scorer_model: str
    candidates: list[EvictionCandidate]


class EvictionExclusion(_Model):
    """A single keep-back: the scorer wanted to evict, but it was overridden."""

    ctx_id: str
    relevance_score: float
    exclude_reason: str | None = None


class EvictionFeedback(_Model):
    """Recorded when an eviction proposal is resolved."""

    proposal_id: str
    scope_id: str
    resolved_at: datetime
    resolved_by: Literal["llm", "user", "auto"]
    evicted: list[str]
    excluded: list[EvictionExclusion]
