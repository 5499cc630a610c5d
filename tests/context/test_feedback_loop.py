"""Tier 2, the flush protocol, the feedback store, the circuit breaker and the
simulated scorer model's response to calibration guidance."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from pydantic import ValidationError

from silas_exp.context.budget import TokenBudget, ZoneShares
from silas_exp.context.stats import ReplayStats
from silas_exp.context.window import LiveItem, Window
from silas_exp.eviction.two_tier import TwoTierEviction, TwoTierSettings
from silas_exp.feedback.flush import KeepBackBroker, KeepbackConfig, MainModel
from silas_exp.feedback.store import FeedbackStore
from silas_exp.llm import LLMSettings, build_client
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.schema.eviction import ContextZone as Z
from silas_exp.scorers.base import ScorerUnavailable
from silas_exp.scorers.heuristic import HeuristicWeights, LinearScorer
from silas_exp.scorers.prompt import parse_guidance, simulated_scorer

CHRONICLE_ONLY = ZoneShares(chronicle=0.8, memory=0.0, workspace=0.0)  # Tier-1 caps never bind


def _window(n=40, tokens=500) -> Window:
    w = Window()
    for i in range(n):
        w.add(LiveItem(ctx_id=f"c{i:02d}", zone=Z.CHRONICLE, kind="user_message",
                       full_tokens=tokens, tokens=tokens, born=i // 4, last_ref=i // 4,
                       group=f"g{i // 2}", snippet=f"item {i}"))
    return w


class FailingScorer:
    name, model_id = "failing", "x"
    calls = 0

    def score(self, items, turn):
        self.calls += 1
        raise ScorerUnavailable("timeout")

    def observe(self, items, excluded, turn):
        return None


def _broker(store, needed=frozenset(), recall=1.0, latency_median_ms=10.0, timeout_ms=2000.0):
    llm = build_client(LLMSettings(cache_mode="off"), seed=3, cache_dir=None)
    settings = MainModel("claude-sonnet-4-5", "simulated", KeepbackConfig(
        recall=recall, false_keep=0.0, latency_median_ms=latency_median_ms, latency_sigma=0.0,
        eviction_feedback_timeout_ms=timeout_ms))
    return KeepBackBroker(settings, llm, store, "ns", 3,
                          lambda cid, turn, h: 3 if cid in needed else 0)


def test_tier2_proposes_lowest_groups_and_keepbacks_hold_whole_groups(tmp_path):
    store = FeedbackStore(tmp_path / "fb.sqlite")
    stats = ReplayStats()
    budget = TokenBudget(total=20_000)  # 40 x 500 = 20000 > 0.8 x 20000
    weights = HeuristicWeights().vector()
    s = TwoTierEviction(TwoTierSettings(zone_cap_factor=2.0), budget, CHRONICLE_ONLY,
                        LinearScorer("h", weights), _broker(store, needed={"c00"}), stats, "scope")
    w = _window()
    s.step(w, turn=10)
    assert stats.guard_triggers == 1 and stats.proposals == 1
    assert w.usage() <= budget.scorer_threshold_pct * budget.total
    # c00 was needed: kept back, and with it its coherence group partner c01
    assert "c00" in w and "c01" in w
    assert store.count() == 1
    # committed per proposal: a second connection sees it before close
    other = sqlite3.connect(tmp_path / "fb.sqlite")
    (by,) = other.execute("SELECT resolved_by FROM eviction_feedback").fetchone()
    assert by == "llm"
    assert other.execute("SELECT SUM(excluded) FROM eviction_candidates").fetchone()[0] >= 1


def test_late_main_model_resolves_auto_and_evicts_everything(tmp_path):
    store = FeedbackStore()
    stats = ReplayStats()
    s = TwoTierEviction(TwoTierSettings(zone_cap_factor=2.0), TokenBudget(total=20_000),
                        CHRONICLE_ONLY, LinearScorer("h", HeuristicWeights().vector()),
                        _broker(store, needed={"c00"}, latency_median_ms=5000.0), stats, "scope")
    w = _window()
    s.step(w, turn=10)
    assert stats.auto_resolved == 1 and store.resolved_by_counts() == {"auto": 1}
    assert not any(stats.candidate_excluded)


def test_breaker_opens_after_three_failures_and_falls_back(tmp_path):
    stats = ReplayStats()
    scorer = FailingScorer()
    budget = TokenBudget(total=20_000)
    s = TwoTierEviction(TwoTierSettings(zone_cap_factor=2.0, breaker_cooldown_turns=5), budget,
                        CHRONICLE_ONLY, scorer, None, stats, "scope")
    for turn in range(10, 16):
        w = _window()
        s.step(w, turn)
        # aggressive fallback evicts deeper than the normal target
        assert w.usage() <= (budget.evict_to_pct - 0.10) * budget.total
    assert scorer.calls == 3  # breaker open after the third failure: no more calls in cooldown
    assert stats.breaker_opens == 1 and stats.fallbacks == 6 and stats.scorer_failures == 3


def test_simulated_scorer_follows_guidance_lines():
    lines = [
        "c1 | chronicle | user_message | age=12 | tokens=120 | ok | - | fix parser",
        "m1 | memory | memory | age=12 | tokens=120 | ok | rel=0.50 | note",
    ]
    guidance = "- zone=chronicle: kept back in 40% of proposals (overall 10%); score these higher"
    assert parse_guidance(guidance) == {("zone", "chronicle"): 1.8}

    def scores(text):
        req = LLMRequest(task="scorer", model="m", messages=(Message("user", text),))
        out = simulated_scorer(req, np.random.default_rng(0))
        return {s["ctx_id"]: s["relevance"] for s in out["scores"]}

    plain = scores("\n".join(lines))
    guided = scores(guidance + "\n" + "\n".join(lines))
    assert guided["c1"] > plain["c1"] + 0.2  # +1.8 logit on the chronicle item
    assert abs(guided["m1"] - plain["m1"]) < 1e-9  # other zones untouched (same noise draw order)


def test_exclusion_rates_counted_in_the_store_equal_those_of_its_rows():
    from silas_exp.feedback.calibration import exclusion_rates, stored_exclusion_rates

    store = FeedbackStore()
    for scope, needed in (("s1", {"c00"}), ("s2", {"c03", "c05"})):
        s = TwoTierEviction(TwoTierSettings(zone_cap_factor=2.0), TokenBudget(total=20_000),
                            CHRONICLE_ONLY, LinearScorer("h", HeuristicWeights().vector()),
                            _broker(store, needed=needed), ReplayStats(), scope)
        s.step(_window(), turn=10)
    rates = stored_exclusion_rates(store)
    assert rates == exclusion_rates(store.dataset())
    assert rates.overall.n == len(store.dataset()) and set(rates.by_scope) == {"s1", "s2"}
    assert 0 < rates.overall.rate < 1


class FixedScorer:
    """Scores every item with one value, whatever it is."""

    name, model_id = "fixed", "x"

    def __init__(self, value):
        self.value = value

    def score(self, items, turn):
        return {it.ctx_id: self.value for it in items}

    def observe(self, items, excluded, turn):
        return None


def test_without_keepbacks_scores_are_still_checked_and_nothing_is_stored():
    """With ``keepbacks=false`` no proposal reaches the main model, so none is
    built; a scorer's score outside [0, 1] is refused all the same."""
    budget = TokenBudget(total=20_000)
    store = FeedbackStore()
    stats = ReplayStats()
    s = TwoTierEviction(TwoTierSettings(zone_cap_factor=2.0, keepbacks=False), budget, CHRONICLE_ONLY,
                        FixedScorer(0.5), _broker(store, needed={"c00"}), stats, "scope")
    w = _window()
    s.step(w, turn=10)
    assert stats.proposals == 1 and stats.auto_resolved == 0 and store.count() == 0
    assert "c00" not in w  # needed, but no main model was asked to keep it
    assert w.usage() <= budget.evict_to_pct * budget.total
    for bad in (1.5, -0.1, float("nan")):
        s = TwoTierEviction(TwoTierSettings(zone_cap_factor=2.0, keepbacks=False), budget,
                            CHRONICLE_ONLY, FixedScorer(bad), _broker(FeedbackStore()), ReplayStats(),
                            "scope")
        with pytest.raises(ValidationError, match="EvictionCandidate"):
            s.step(_window(), turn=10)
