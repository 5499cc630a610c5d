"""Raw per-case observations the replay collects; metrics are computed from
these afterwards (silas_exp.metrics), never inside the replay loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple


def tuple_maker(cls: type) -> partial:
    """A maker of ``cls`` (a named tuple) from a tuple of its fields: what
    ``cls._make`` does, without its Python frame and length check per call
    (the callers build the tuple with every field themselves)."""
    return partial(tuple.__new__, cls)


class NeedEvent(NamedTuple):
    """The main model needed ``ctx_id`` at ``turn`` (a tuple: a replay makes
    one per need, and a frozen dataclass costs twice as much to build)."""

    turn: int
    ctx_id: str
    grade: int
    served: bool  # present, unmasked and active in the window when needed


@dataclass(frozen=True)
class Ranking:
    """The scorer's keep-first ranking of the evictable items at one Tier-2 call."""

    turn: int
    ranked: tuple[str, ...]


@dataclass(frozen=True)
class Flush:
    """One Tier-2 proposal as presented: the candidates (copies of the items as
    they were at ``turn``) and which of them the main model kept back."""

    turn: int
    items: tuple  # tuple[LiveItem, ...]
    kept: tuple[bool, ...]


@dataclass
class ReplayStats:
    needs: list[NeedEvent] = field(default_factory=list)
    window_tokens: list[int] = field(default_factory=list)
    rankings: list[Ranking] = field(default_factory=list)
    # one entry per presented candidate: scorer relevance, kept back?, turn, ctx_id
    candidate_scores: list[float] = field(default_factory=list)
    candidate_excluded: list[bool] = field(default_factory=list)
    candidate_turns: list[int] = field(default_factory=list)
    candidate_ids: list[str] = field(default_factory=list)
    evictions: list[tuple[int, str]] = field(default_factory=list)  # (turn, ctx_id) all tiers
    guard_triggers: int = 0
    proposals: int = 0
    scorer_calls: int = 0
    scorer_failures: int = 0
    fallbacks: int = 0
    breaker_opens: int = 0
    auto_resolved: int = 0
    hard_ceiling_overrides: int = 0
    re_retrievals: int = 0
    re_retrieved_tokens: int = 0
    masked: int = 0
    trivial_dropped: int = 0
    subscriptions_deactivated: int = 0
    turns: int = 0
    retained: list[str] = field(default_factory=list)  # visible text of the final window
    flush_log: list[Flush] | None = None  # set to [] to record every Tier-2 proposal
