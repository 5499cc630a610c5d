"""Tier 1 of Silas eviction: cheap heuristics that need no model.

All functions mutate the window in place and return what they removed so the
caller can count it. Zone policies: chronicle oldest first (masked tool
results before anything else), memory lowest retrieval relevance first,
workspace completed before active; system and pinned items are never evicted.
"""

from __future__ import annotations

from collections.abc import Callable

from silas_exp.context.budget import TokenBudget
from silas_exp.context.window import LiveItem, Window
from silas_exp.schema.eviction import ContextZone


def mask_old_tool_results(window: Window, turn: int, budget: TokenBudget) -> int:
    """Replace tool results unused for more than N turns by a short placeholder."""
    saved = 0
    after = budget.observation_mask_after_turns  # >= 0, so age > after is turn - last_ref > after
    for it in window.kind_view("tool_result"):
        if not it.masked and turn - it.last_ref > after:
            before = it.tokens
            it.mask()
            saved += before - it.tokens
    return saved


def drop_trivial_acks(window: Window, turn: int, budget: TokenBudget) -> list[str]:
    """Evict acknowledgements under ``trivial_ack_tokens`` once their turn is over."""
    dropped = [
        it.ctx_id for it in window.kind_view("ack")
        if it.evictable and it.tokens < budget.trivial_ack_tokens and it.born < turn
    ]
    for ctx_id in dropped:
        window.evict(ctx_id)
    return dropped


def deactivate_stale_subscriptions(window: Window, turn: int, budget: TokenBudget) -> int:
    """A subscription untouched for ``subscription_ttl_turns`` stops costing tokens."""
    count = 0
    for it in window.kind_view("subscription"):
        if not it.active:
            continue
        # the latest of its birth, last reference and refreshes up to now
        touched = it.last_ref if it.last_ref > it.born else it.born
        for t in it.refreshed_turns:
            if touched < t <= turn:
                touched = t
        if turn - touched >= budget.subscription_ttl_turns:
            it.active, it.tokens = False, 0
            count += 1
    return count


def zone_order_key(zone: ContextZone, turn: int) -> Callable[[LiveItem], tuple]:
    """Sort key: first element evicted first under the zone's policy."""
    if zone is ContextZone.CHRONICLE:
        return lambda it: (not it.masked, it.born, it.ctx_id)
    if zone is ContextZone.MEMORY:
        return lambda it: (it.relevance if it.relevance is not None else 0.5, it.born, it.ctx_id)
    return lambda it: (not it.completed(turn), it.active, it.born, it.ctx_id)


def evict_by_zone_policy(
    window: Window, zone: ContextZone, limit: int, turn: int, protect: frozenset[str] = frozenset()
) -> list[str]:
    """Evict from ``zone`` in policy order until its usage is at most ``limit``."""
    evicted: list[str] = []
    usage = window.zone_usage(zone)
    if usage <= limit:
        return evicted
    pool = window.evictable(zone)
    if protect:
        pool = [it for it in pool if it.ctx_id not in protect]
    pool.sort(key=zone_order_key(zone, turn))
    for it in pool:
        if usage <= limit:
            break
        usage -= it.tokens
        window.evict(it.ctx_id)
        evicted.append(it.ctx_id)
    return evicted


def evict_to_total(
    window: Window, target: int, caps: dict[ContextZone, int], turn: int,
    protect: frozenset[str] = frozenset(),
) -> list[str]:
    """Heuristic eviction of the whole window down to ``target`` tokens: always
    take the next policy victim from the zone furthest over its cap."""
    evicted: list[str] = []
    queues = {
        z: sorted(
            (it for it in window.evictable(z) if it.ctx_id not in protect),
            key=zone_order_key(z, turn),
        )
        for z in caps
    }
    usage = window.usage()
    while usage > target:
        live = [z for z, q in queues.items() if q]
        if not live:
            break
        zone = max(live, key=lambda z: window.zone_usage(z) / max(caps[z], 1))
        it = queues[zone].pop(0)
        usage -= it.tokens
        window.evict(it.ctx_id)
        evicted.append(it.ctx_id)
    return evicted
