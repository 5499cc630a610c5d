"""Profile routing: pick a budget profile from what a scope's window holds.

Deterministic rules over token shares of the evictable zones (documented in
docs/eviction.md): file views, plans and tool output in the workspace → coding;
retrieved memories dominating → research; live subscriptions (tickets, feeds)
→ support; otherwise conversation."""

from __future__ import annotations

from collections.abc import Iterable

from silas_exp.context.budget import item_tokens
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import SessionItem


def route_profile(items: Iterable[SessionItem]) -> str:
    tokens = {z: 0 for z in ContextZone}
    subscriptions = 0
    for it in items:
        tokens[it.zone] += item_tokens(it)
        subscriptions += it.kind == "subscription"
    total = sum(v for z, v in tokens.items() if z is not ContextZone.SYSTEM) or 1
    if tokens[ContextZone.WORKSPACE] / total >= 0.30 and subscriptions == 0:
        return "coding"
    if tokens[ContextZone.MEMORY] / total >= 0.35:
        return "research"
    if subscriptions:
        return "support"
    return "conversation"
