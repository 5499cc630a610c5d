"""Registers the built-in eviction strategies."""

from __future__ import annotations

from silas_exp.eviction import compression  # noqa: F401  (registers compression strategies)
from silas_exp.eviction.base import StrategyDeps, register_strategy
from silas_exp.eviction.two_tier import TwoTierEviction, TwoTierSettings


@register_strategy("two_tier", TwoTierSettings, needs={"scorer", "broker"}, evicts_per_turn=True,
                   description="Silas two-tier eviction: Tier-1 heuristics, then the scorer")
def _two_tier(settings: TwoTierSettings, deps: StrategyDeps) -> TwoTierEviction:
    return TwoTierEviction(settings, deps.budget, deps.shares, deps.scorer, deps.broker, deps.stats,
                           deps.scope_id)
