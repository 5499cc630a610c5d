"""Token budget defaults, profiles and zone budgets (Silas context manager).

Interpretation (documented in docs/eviction.md): zone shares divide the
allocable budget (total − min(system tokens, system_max)); they sum to at
most 0.80, the rest is headroom. The *guard* fires when total usage exceeds
``eviction_threshold_pct × total``; eviction then brings usage down to
``evict_to_pct × total``. ``scorer_threshold_pct`` is the hard ceiling: above
it, keep-backs are overridden and heuristics evict regardless.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import SessionItem

CHARS_PER_TOKEN = 3.5


def count_tokens(text: str) -> int:
    """Heuristic token count used by Silas: characters / 3.5, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def tokens_of_chars(chars: int) -> int:
    """``count_tokens`` of a text of ``chars`` characters."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def item_tokens(item: SessionItem) -> int:
    """A session item's tokens: as given, else counted from its text
    (``LiveItem.from_session`` reads the same inline: change both together)."""
    return item.tokens if item.tokens is not None else count_tokens(item.text)


class TokenBudget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    total: int = Field(default=180_000, gt=0)
    system_max: int = Field(default=8_000, ge=0)
    eviction_threshold_pct: float = Field(default=0.80, gt=0, le=1)
    scorer_threshold_pct: float = Field(default=0.90, gt=0, le=1)
    evict_to_pct: float = Field(default=0.70, gt=0, le=1)
    observation_mask_after_turns: int = Field(default=5, ge=0)
    subscription_ttl_turns: int = Field(default=10, ge=1)
    max_subscription_tokens: int = Field(default=2_000, ge=0)
    trivial_ack_tokens: int = Field(default=20, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> TokenBudget:
        if not self.evict_to_pct <= self.eviction_threshold_pct <= self.scorer_threshold_pct:
            raise ValueError(
                "budget thresholds must satisfy evict_to_pct <= eviction_threshold_pct <= "
                f"scorer_threshold_pct, got {self.evict_to_pct} / {self.eviction_threshold_pct} / "
                f"{self.scorer_threshold_pct}"
            )
        return self


class ZoneShares(BaseModel):
    """Shares of the allocable budget for the three evictable zones."""

    model_config = ConfigDict(extra="forbid")

    chronicle: float = Field(ge=0.0, le=1.0)
    memory: float = Field(ge=0.0, le=1.0)
    workspace: float = Field(ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sum(self) -> ZoneShares:
        total = self.chronicle + self.memory + self.workspace
        if total > 0.80 + 1e-9:
            raise ValueError(
                f"profile shares chronicle+memory+workspace sum to {total:.2f}; they must sum to "
                "at most 0.80 (the rest is headroom) — lower one of them"
            )
        return self

    def of(self, zone: ContextZone) -> float:
        return getattr(self, zone.value)


PROFILES: dict[str, ZoneShares] = {
    "conversation": ZoneShares(chronicle=0.45, memory=0.20, workspace=0.15),
    "coding": ZoneShares(chronicle=0.20, memory=0.20, workspace=0.40),
    "research": ZoneShares(chronicle=0.20, memory=0.40, workspace=0.20),
    "support": ZoneShares(chronicle=0.40, memory=0.25, workspace=0.15),
}

EVICTABLE_ZONES = (ContextZone.CHRONICLE, ContextZone.MEMORY, ContextZone.WORKSPACE)


def zone_budgets(shares: ZoneShares, budget: TokenBudget, system_tokens: int) -> dict[ContextZone, int]:
    """Token budget per evictable zone: share × (total − min(system, system_max))."""
    allocable = budget.total - min(system_tokens, budget.system_max)
    return {z: int(shares.of(z) * allocable) for z in EVICTABLE_ZONES}
