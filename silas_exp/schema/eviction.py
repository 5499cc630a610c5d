"""Eviction feedback loop data models (Silas spec §19.2)."""

from __future__ import annotations

from collections import namedtuple
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ContextZone(StrEnum):
    SYSTEM = "system"
    CHRONICLE = "chronicle"
    MEMORY = "memory"
    WORKSPACE = "workspace"


# each zone's text from a dict: ``zone.value`` is a property of the enum (~0.14 us
# on CPython 3.11), and a replay writes it into every candidate row and prompt line
ZONE_TEXT: dict[ContextZone, str] = {zone: zone.value for zone in ContextZone}


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


# The same four records as plain tuples, for the flush hot path (a replay builds
# hundreds a second). Their fields are the models' fields, so every reader takes
# either form. Build them only from values that already meet the models'
# constraints (the harness's own, or outside values checked where they enter:
# the scorer's relevance scores in Tier 2, the main model's reasons in the
# keep-back broker); ``to_schema`` gives the validated model.


def _tuple_of(model: type[BaseModel]) -> type[tuple]:
    return namedtuple(f"{model.__name__}Tuple", list(model.model_fields))  # type: ignore[return-value]


class CandidateRecord(_tuple_of(EvictionCandidate)):  # type: ignore[misc]
    __slots__ = ()


class ProposalRecord(_tuple_of(EvictionProposal)):  # type: ignore[misc]
    __slots__ = ()

    def to_schema(self) -> EvictionProposal:
        return EvictionProposal(**{**self._asdict(), "candidates": [c._asdict() for c in self.candidates]})


class ExclusionRecord(_tuple_of(EvictionExclusion)):  # type: ignore[misc]
    __slots__ = ()


class FeedbackRecord(_tuple_of(EvictionFeedback)):  # type: ignore[misc]
    __slots__ = ()

    def to_schema(self) -> EvictionFeedback:
        return EvictionFeedback(**{**self._asdict(), "evicted": list(self.evicted),
                                   "excluded": [e._asdict() for e in self.excluded]})
