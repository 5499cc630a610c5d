"""``eviction=lru``: every turn, when the window is over the budget's eviction
threshold, evict the least recently referenced evictable items until usage
is back at ``evict_to_pct``. No scorer, no model: a cheap baseline a team
might compare two-tier eviction with. It replaces Tier 1 and Tier 2 both;
``StrategyBase`` counts the guard triggers and records each eviction."""

from __future__ import annotations

from silas_exp.context.window import Window
from silas_exp.eviction.base import StrategyBase, StrategySettings, strategy_kind


class LruSettings(StrategySettings):  # no options of its own
    pass


class LruEviction(StrategyBase):
    def evict(self, window: Window, turn: int) -> None:
        target = self.budget.evict_to_pct * self.budget.total
        for it in sorted(window.evictable(), key=lambda i: (max(i.last_ref, i.born), i.ctx_id)):
            if window.usage() <= target:
                break
            self.remove(window, it.ctx_id, turn)


KIND = strategy_kind("lru", LruSettings, LruEviction, evicts_per_turn=True,
                     description="example plug-in: least recently referenced first")
