"""The window and Tier 1 on arrays, compiled with numba: each function
mirrors the Python function named in its docstring (``context/window.py``,
``context/policy.py``, ``strategy.TwoTierEviction``), and
``tests/eviction/test_compiled_pairs.py`` holds each pair to the same result.

Window order is kept as an append-only sequence of (re)insertions: an entry
is live while its item is in the window and the item's own position is that
entry. Sort keys that Python builds as tuples with a ctx_id last are a float
primary and an int64 secondary ``born << 21 | rank``, ``rank`` the ctx_id's
place among the session's ctx_ids in sorted order (no two keys tie)."""

from __future__ import annotations

import numpy as np
from numba import njit

from silas_exp.eviction.two_tier.kernel_base import (
    C_DEACTIVATED,
    C_MASKED,
    C_TRIVIAL,
    CHRONICLE,
    EVICTED,
    IN_WINDOW,
    KIND_ACK,
    KIND_SUBSCRIPTION,
    KIND_TOOL_RESULT,
    MEMORY,
    SYSTEM,
    WORKSPACE,
    argsort2,
)


@njit(cache=True)
def add(w, items, i):
    """``Window.add``: ``i`` at the end of the window order, its tokens counted."""
    w.state[i] = IN_WINDOW
    w.posof[i] = w.n_seq[0]
    w.seq[w.n_seq[0]] = i
    w.n_seq[0] += 1
    w.zu[items.zone[i]] += w.tok[i]
    w.tot[0] += w.tok[i]


@njit(cache=True)
def set_tokens(w, items, i, tokens):
    """``LiveItem.tokens = tokens`` on an item in the window (its totals follow)."""
    d = tokens - w.tok[i]
    w.zu[items.zone[i]] += d
    w.tot[0] += d
    w.tok[i] = tokens


@njit(cache=True)
def restore(w, items, i):
    """``LiveItem.restore``: full tokens, unmasked, active."""
    set_tokens(w, items, i, items.full[i])
    w.masked[i] = False
    w.active[i] = True


@njit(cache=True)
def retrieve(w, items, i):
    """``Window.retrieve`` (less ``last_ref``, set by the caller): back from memory, restored."""
    w.tok[i] = items.full[i]
    w.masked[i] = False
    w.active[i] = True
    add(w, items, i)


@njit(cache=True)
def evict(w, items, i, turn):
    """``Window.evict``, logged as ``(turn, ctx_id)`` (``stats.evictions``)."""
    w.state[i] = EVICTED
    w.zu[items.zone[i]] -= w.tok[i]
    w.tot[0] -= w.tok[i]
    w.ev_turn[w.n_ev[0]] = turn
    w.ev_item[w.n_ev[0]] = i
    w.n_ev[0] += 1


@njit(cache=True)
def live_items(w):
    """``list(window)``: the items in the window, in window order, into
    ``w.live``; their count."""
    m = 0
    for p in range(w.n_seq[0]):
        i = w.seq[p]
        if w.state[i] == IN_WINDOW and w.posof[i] == p:
            w.live[m] = i
            m += 1
    return m


@njit(cache=True)
def mask_old_tool_result(w, items, params, i, turn):
    """``mask_old_tool_results`` for one tool result: the tokens it saves."""
    if w.masked[i] or turn - w.last_ref[i] <= params.mask_after:
        return 0
    saved = w.tok[i] - items.mask_tok[i]
    set_tokens(w, items, i, items.mask_tok[i])  # LiveItem.mask
    w.masked[i] = True
    return saved


@njit(cache=True)
def drop_trivial_ack(w, items, params, i, turn):
    """``drop_trivial_acks`` for one acknowledgement: whether it is dropped."""
    if items.zone[i] != SYSTEM and not items.pinned[i] and w.tok[i] < params.trivial_ack \
            and items.born[i] < turn:
        evict(w, items, i, turn)
        return True
    return False


@njit(cache=True)
def deactivate_stale_subscription(w, items, params, i, turn):
    """``deactivate_stale_subscriptions`` for one subscription: whether it stops."""
    if not w.active[i]:
        return False
    touched = w.last_ref[i] if w.last_ref[i] > items.born[i] else items.born[i]
    for b in range(items.sub_off[i], items.sub_off[i + 1]):
        t = items.sub_turns[b]
        if touched < t <= turn:
            touched = t
    if turn - touched >= params.ttl:
        w.active[i] = False
        set_tokens(w, items, i, 0)
        return True
    return False


@njit(cache=True)
def caps(w, params):
    """``TwoTierEviction._caps``: each evictable zone's cap at this system usage."""
    allocable = params.total - min(w.zu[SYSTEM], params.system_max)
    for z in range(1, 4):
        w.caps[z] = int(int(params.shares[z - 1] * allocable) * params.cap_factor)


@njit(cache=True)
def zone_pool(w, items, z, turn, m):
    """``window.evictable(zone)`` sorted by ``zone_order_key(zone, turn)``."""
    k = 0
    for a in range(m):
        i = w.live[a]
        if items.zone[i] == z and w.tok[i] > 0 and not items.pinned[i]:
            k += 1
    ids = np.empty(k, np.int64)
    primary = np.empty(k)
    secondary = np.empty(k, np.int64)
    k = 0
    for a in range(m):
        i = w.live[a]
        if items.zone[i] == z and w.tok[i] > 0 and not items.pinned[i]:
            ids[k] = i
            if z == CHRONICLE:  # (not masked, born, ctx_id)
                primary[k] = 0.0 if w.masked[i] else 1.0
            elif z == MEMORY:  # (relevance or 0.5, born, ctx_id)
                primary[k] = items.relevance[i]
            else:  # (not completed, active, born, ctx_id)
                primary[k] = (0.0 if items.completed[i] <= turn else 2.0) + (1.0 if w.active[i] else 0.0)
            secondary[k] = (items.born[i] << 21) | items.rank[i]
            k += 1
    return ids[argsort2(primary, secondary)]


@njit(cache=True)
def evict_by_zone_policy(w, items, z, turn, m):
    """``evict_by_zone_policy(window, zone, cap, turn)`` with the zone's cap in
    ``w.caps``: the number of items evicted."""
    if w.zu[z] <= w.caps[z]:
        return 0
    evicted = 0
    for i in zone_pool(w, items, z, turn, m):
        if w.zu[z] <= w.caps[z]:
            break
        evict(w, items, i, turn)
        evicted += 1
    return evicted


@njit(cache=True)
def evict_to_total(w, items, target, turn, m):
    """``evict_to_total``: the next policy victim from the zone furthest over its cap."""
    q1 = zone_pool(w, items, CHRONICLE, turn, m)
    q2 = zone_pool(w, items, MEMORY, turn, m)
    q3 = zone_pool(w, items, WORKSPACE, turn, m)
    h1, h2, h3 = 0, 0, 0
    while w.tot[0] > target:
        best, zbest = -1.0, 0
        if h1 < q1.shape[0]:
            best, zbest = w.zu[CHRONICLE] / max(w.caps[CHRONICLE], 1), CHRONICLE
        if h2 < q2.shape[0]:
            f = w.zu[MEMORY] / max(w.caps[MEMORY], 1)
            if zbest == 0 or f > best:
                best, zbest = f, MEMORY
        if h3 < q3.shape[0]:
            f = w.zu[WORKSPACE] / max(w.caps[WORKSPACE], 1)
            if zbest == 0 or f > best:
                best, zbest = f, WORKSPACE
        if zbest == 0:
            break
        if zbest == CHRONICLE:
            i = q1[h1]
            h1 += 1
        elif zbest == MEMORY:
            i = q2[h2]
            h2 += 1
        else:
            i = q3[h3]
            h3 += 1
        evict(w, items, i, turn)


@njit(cache=True)
def tier1(w, items, params, turn):
    """``TwoTierEviction.tier1``: the live items' count after it. One pass over
    the window: mask_old_tool_results, drop_trivial_acks and
    deactivate_stale_subscriptions each act on a kind of their own, so their
    effects are those of the three loops the Python strategy runs."""
    m = live_items(w)
    if w.n_seq[0] > 2 * m + 64:  # the window order, compacted: its evicted entries dropped
        for a in range(m):
            w.seq[a] = w.live[a]
            w.posof[w.live[a]] = a
        w.n_seq[0] = m
    saved = 0
    dropped = 0
    for a in range(m):
        i = w.live[a]
        k = items.kind[i]
        if k == KIND_TOOL_RESULT:
            saved += mask_old_tool_result(w, items, params, i, turn)
        elif k == KIND_ACK:
            dropped += drop_trivial_ack(w, items, params, i, turn)
        elif k == KIND_SUBSCRIPTION:
            w.counters[C_DEACTIVATED] += deactivate_stale_subscription(w, items, params, i, turn)
    if saved > 0:
        w.counters[C_MASKED] += 1
    w.counters[C_TRIVIAL] += dropped
    if dropped:
        m = live_items(w)
    caps(w, params)
    for z in range(1, 4):
        if evict_by_zone_policy(w, items, z, turn, m):
            m = live_items(w)
    return m
