"""A strategy of one's own on ``StrategyBase`` fills the statistics the
metrics read: guard triggers (context.guard_trigger_rate) and evictions."""

from __future__ import annotations

from types import SimpleNamespace

from silas_exp.context.budget import TokenBudget
from silas_exp.context.replay import NeedOracle, replay
from silas_exp.context.stats import ReplayStats
from silas_exp.data.suites.loader import load_suite, session_case
from silas_exp.eviction.base import StrategyBase, StrategySettings
from silas_exp.metrics.context import case_metrics
from tests.conftest import REPO


class OldestFirst(StrategyBase):
    def evict(self, window, turn):
        self.tier1(window, turn)
        target = self.budget.evict_to_pct * self.budget.total
        for it in sorted(window.evictable(), key=lambda i: (i.born, i.ctx_id)):
            if window.usage() <= target:
                break
            self.remove(window, it.ctx_id, turn)


def test_a_strategy_on_the_base_fills_guard_triggers_and_evictions():
    loaded = load_suite(REPO / "suites" / "smoke")
    sc = session_case(loaded, loaded.eval_cases[0], TokenBudget())
    stats = ReplayStats()
    strategy = OldestFirst(StrategySettings(name="oldest"), SimpleNamespace(budget=sc.budget,
                                                                            stats=stats))
    replay(sc.session, sc.truth, strategy.step, sc.budget, stats)
    metrics = case_metrics(stats, NeedOracle(sc.truth), 20)
    assert stats.guard_triggers > 0 and metrics["context.guard_trigger_rate"] > 0
    assert stats.evictions and all(t >= 0 for t, _ in stats.evictions)
    assert len(set(stats.evictions)) == len(stats.evictions)  # each recorded once
