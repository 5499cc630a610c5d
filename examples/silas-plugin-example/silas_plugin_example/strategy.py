"""``eviction=lru``: every turn, when the window is over the budget's eviction
threshold, evict the least recently referenced evictable items until usage
is back at ``evict_to_pct``. No scorer, no model: a cheap baseline a team
might compare two-tier eviction with."""

from __future__ import annotations

from silas_exp.context.window import Window
from silas_exp.eviction.base import StrategySettings, strategy_kind


class LruSettings(StrategySettings):  # no options of its own
    pass


class LruEviction:
    def __init__(self, settings: LruSettings, deps) -> None:
        self.budget, self.stats = deps.budget, deps.stats

    def step(self, window: Window, turn: int) -> None:
        total = self.budget.total
        if window.usage() <= self.budget.eviction_threshold_pct * total:
            return
        target = self.budget.evict_to_pct * total
        for it in sorted(window.evictable(), key=lambda i: (max(i.last_ref, i.born), i.ctx_id)):
            if window.usage() <= target:
                break
            window.evict(it.ctx_id)
            self.stats.evictions.append((turn, it.ctx_id))

    def compress(self, window: Window, turn: int) -> None:
        self.step(window, turn)


KIND = strategy_kind("lru", LruSettings, LruEviction, evicts_per_turn=True,
                     description="example plug-in: least recently referenced first")
