"""Tier 1 policies and budgets on hand-built windows."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from silas_exp.context.budget import PROFILES, TokenBudget, ZoneShares, count_tokens, zone_budgets
from silas_exp.context.policy import (
    deactivate_stale_subscriptions,
    drop_trivial_acks,
    evict_by_zone_policy,
    evict_to_total,
    mask_old_tool_results,
)
from silas_exp.context.window import LiveItem, Window
from silas_exp.schema.eviction import ContextZone as Z


def item(ctx_id, zone=Z.CHRONICLE, kind="user_message", tokens=100, born=0, **kw) -> LiveItem:
    return LiveItem(ctx_id=ctx_id, zone=zone, kind=kind, full_tokens=tokens, tokens=tokens,
                    born=born, last_ref=kw.pop("last_ref", born), **kw)


def window(*items: LiveItem) -> Window:
    w = Window()
    for it in items:
        w.add(it)
    return w


def test_token_counter_is_chars_over_3_5():
    assert count_tokens("") == 0
    assert count_tokens("a" * 7) == 2
    assert count_tokens("a" * 8) == 3  # ceil(8 / 3.5) = ceil(2.29)


def test_profile_defaults_and_allocable_budget():
    assert PROFILES["coding"].workspace == 0.40 and PROFILES["conversation"].chronicle == 0.45
    budgets = zone_budgets(PROFILES["coding"], TokenBudget(), system_tokens=20_000)
    # allocable = 180000 - min(20000, 8000) = 172000
    assert budgets[Z.WORKSPACE] == int(0.40 * 172_000) and budgets[Z.CHRONICLE] == int(0.20 * 172_000)


def test_shares_over_080_rejected():
    with pytest.raises(ValidationError, match="at most 0.80"):
        ZoneShares(chronicle=0.5, memory=0.3, workspace=0.1)


def test_budget_defaults_match_spec():
    b = TokenBudget()
    assert (b.total, b.system_max, b.eviction_threshold_pct, b.scorer_threshold_pct) == (
        180_000, 8_000, 0.80, 0.90)
    assert (b.observation_mask_after_turns, b.subscription_ttl_turns, b.max_subscription_tokens) == (
        5, 10, 2_000)


def test_masking_old_tool_results_keeps_a_placeholder():
    w = window(item("t1", kind="tool_result", tokens=900, born=0, tool_name="pytest", status="error"),
               item("t2", kind="tool_result", tokens=900, born=4))
    saved = mask_old_tool_results(w, turn=6, budget=TokenBudget())
    t1, t2 = w.get("t1"), w.get("t2")
    assert t1.masked and 0 < t1.tokens < 20 and not t2.masked
    assert saved == 900 - t1.tokens


def test_trivial_acks_dropped_after_their_turn():
    w = window(item("a1", kind="ack", tokens=5, born=1), item("a2", kind="ack", tokens=5, born=3),
               item("a3", kind="ack", tokens=40, born=1))
    assert drop_trivial_acks(w, turn=3, budget=TokenBudget()) == ["a1"]
    assert "a1" in w.evicted and "a2" in w and "a3" in w


def test_stale_subscriptions_cost_zero():
    w = window(item("s1", zone=Z.WORKSPACE, kind="subscription", tokens=500, born=0),
               item("s2", zone=Z.WORKSPACE, kind="subscription", tokens=500, born=0,
                    refreshed_turns=(8,)))
    assert deactivate_stale_subscriptions(w, turn=12, budget=TokenBudget()) == 1
    assert w.get("s1").tokens == 0 and not w.get("s1").active and w.get("s2").active


def test_zone_policies():
    chron = window(item("old", born=0), item("mid", born=3), item("new", born=5),
                   item("pin", born=0, pinned=True))
    assert evict_by_zone_policy(chron, Z.CHRONICLE, limit=200, turn=6) == ["old", "mid"]
    assert "pin" in chron
    mem = window(*(item(f"m{i}", zone=Z.MEMORY, kind="memory", relevance=r)
                   for i, r in enumerate([0.9, 0.1, 0.5])))
    assert evict_by_zone_policy(mem, Z.MEMORY, limit=100, turn=1) == ["m1", "m2"]
    ws = window(item("active", zone=Z.WORKSPACE, kind="plan", born=0, completed_turn=None),
                item("done", zone=Z.WORKSPACE, kind="plan", born=2, completed_turn=3))
    assert evict_by_zone_policy(ws, Z.WORKSPACE, limit=100, turn=4) == ["done"]


def test_system_items_never_evicted():
    w = window(item("sys", zone=Z.SYSTEM, kind="system_prompt", tokens=5000),
               item("c", tokens=100))
    evict_to_total(w, target=0, caps={Z.CHRONICLE: 1, Z.MEMORY: 1, Z.WORKSPACE: 1}, turn=1)
    assert "sys" in w and "c" not in w


def test_window_totals_follow_every_token_change():
    import copy
    import pickle
    from dataclasses import replace

    a, b = item("a", kind="tool_result", tokens=300), item("b", zone=Z.MEMORY, tokens=50)
    w = window(a, b)
    assert (w.usage(), w.zone_usage(Z.CHRONICLE), w.zone_usage(Z.MEMORY)) == (350, 300, 50)
    a.mask()
    assert w.usage() == a.tokens + 50 and w.zone_usage(Z.CHRONICLE) == a.tokens
    a.tokens = 7  # a strategy's own edit
    assert w.usage() == 57
    for twin in (copy.copy(a), replace(a), pickle.loads(pickle.dumps(a))):
        twin.tokens = 1000  # copies are outside the window
        assert w.usage() == 57
    w.evict("a")
    a.restore()
    assert w.usage() == 50 and w.zone_usage(Z.CHRONICLE) == 0
    w.retrieve("a", turn=3)
    assert w.usage() == 350 and [it.ctx_id for it in w.of_kind("tool_result")] == ["a"]
    w.add(item("a", kind="ack", tokens=5))  # the same ctx_id again replaces the item
    assert w.usage() == 55 and w.of_kind("tool_result") == [] and len(w.of_kind("ack")) == 1
    assert [it.ctx_id for it in w.evictable(Z.MEMORY)] == ["b"]
