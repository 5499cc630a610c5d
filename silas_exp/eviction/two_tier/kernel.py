"""The two-tier replay's turn loop, compiled with numba: the same decisions as
``silas_exp.context.replay.replay`` stepping ``TwoTierEviction`` with a
linear scorer and the simulated main model's keep-backs, on arrays.

``compiled.py`` encodes a session into the records of ``records.py``, runs
``replay_kernel`` and decodes the ``ReplayLog`` it returns into the records
the Python loop leaves (``ReplayStats``, feedback-store rows, model-call
accounting). Each function here mirrors the Python function its docstring
names (``context/replay.py``, ``context/window.py``, ``context/policy.py``,
``context/features.py``, ``scorers/grid.py``, ``units.py``, ``strategy.py``,
``feedback/flush.py``, ``llm/simulated.py``); a change to one is a change to
both. ``tests/eviction/test_compiled_pairs.py`` holds each pair to the same
result, ``tests/context/test_compiled_replay.py`` whole replays.

One module, on purpose: numba's on-disk cache (``cache=True``) is
invalidated when a function's own file changes, not when a function it calls
changes in another file, so the loop and everything it calls live in this
file. (The records in ``records.py`` are types: a change there changes the
loop's signature, which recompiles it.)

Window order is kept as an append-only sequence of (re)insertions: an entry
is live while its item is in the window and the item's own position is that
entry. Sort keys that Python builds as tuples with a ctx_id last are a float
primary and an int64 secondary ``born << 21 | rank``, ``rank`` the ctx_id's
place among the session's ctx_ids in sorted order (no two keys tie).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from silas_exp import jit
from silas_exp.eviction.two_tier.records import (
    C_AUTO,
    C_CEILING,
    C_DEACTIVATED,
    C_GUARD,
    C_MASKED,
    C_PROPOSALS,
    C_RERETRIEVALS,
    C_RERETRIEVED_TOKENS,
    C_SCORER_CALLS,
    C_TRIVIAL,
    CHRONICLE,
    END,
    EVICTED,
    EXTERNAL,
    IN_WINDOW,
    KIND_ACK,
    KIND_SUBSCRIPTION,
    KIND_TOOL_RESULT,
    MEMORY,
    N_COUNTERS,
    ONLINE,
    REFIT,
    SCORES,
    SYSTEM,
    UNBORN,
    WORKSPACE,
    LoopState,
    Proposal,
    ReplayLog,
    WindowState,
)

jit.install()  # numba's cache of these functions: one folder per version of the code (silas_exp/jit.py)

# -- primitives: the simulated model's keyed draws, the normal quantile, one sort --

GAMMA = np.uint64(0x9E3779B97F4A7C15)
UNIT = 2.0 ** -53
GRID = float(2 ** 32)


@njit(cache=True)
def mix64(z):
    """``silas_exp.llm.simulated.mix64`` on uint64."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def flush_key(key, turn):
    """``KeyedDraws._at((turn, 0))``: the first flush of ``turn``."""
    key = mix64(key + np.uint64(turn + 1) * GAMMA)
    return mix64(key + np.uint64(1) * GAMMA)


@njit(cache=True)
def inv_cdf(p):
    """``statistics.NormalDist().inv_cdf(p)`` (Wichura's AS241), the same
    operations in the same order."""
    q = p - 0.5
    if math.fabs(q) <= 0.425:
        r = 0.180625 - q * q
        num = (((((((2.5090809287301226727e+3 * r +
                     3.3430575583588128105e+4) * r +
                     6.7265770927008700853e+4) * r +
                     4.5921953931549871457e+4) * r +
                     1.3731693765509461125e+4) * r +
                     1.9715909503065514427e+3) * r +
                     1.3314166789178437745e+2) * r +
                     3.3871328727963666080e+0) * q
        den = (((((((5.2264952788528545610e+3 * r +
                     2.8729085735721942674e+4) * r +
                     3.9307895800092710610e+4) * r +
                     2.1213794301586595867e+4) * r +
                     5.3941960214247511077e+3) * r +
                     6.8718700749205790830e+2) * r +
                     4.2313330701600911252e+1) * r +
                     1.0)
        x = num / den
        return 0.0 + (x * 1.0)
    r = p if q <= 0.0 else 1.0 - p
    r = math.sqrt(-math.log(r))
    if r <= 5.0:
        r = r - 1.6
        num = (((((((7.74545014278341407640e-4 * r +
                     2.27238449892691845833e-2) * r +
                     2.41780725177450611770e-1) * r +
                     1.27045825245236838258e+0) * r +
                     3.64784832476320460504e+0) * r +
                     5.76949722146069140550e+0) * r +
                     4.63033784615654529590e+0) * r +
                     1.42343711074968357734e+0)
        den = (((((((1.05075007164441684324e-9 * r +
                     5.47593808499534494600e-4) * r +
                     1.51986665636164571966e-2) * r +
                     1.48103976427480074590e-1) * r +
                     6.89767334985100004550e-1) * r +
                     1.67638483018380384940e+0) * r +
                     2.05319162663775882187e+0) * r +
                     1.0)
    else:
        r = r - 5.0
        num = (((((((2.01033439929228813265e-7 * r +
                     2.71155556874348757815e-5) * r +
                     1.24266094738807843860e-3) * r +
                     2.65321895265761230930e-2) * r +
                     2.96560571828504891230e-1) * r +
                     1.78482653991729133580e+0) * r +
                     5.46378491116411436990e+0) * r +
                     6.65790464350110377720e+0)
        den = (((((((2.04426310338993978564e-15 * r +
                     1.42151175831644588870e-7) * r +
                     1.84631831751005468180e-5) * r +
                     7.86869131145613259100e-4) * r +
                     1.48753612908506148525e-2) * r +
                     1.36929880922735805310e-1) * r +
                     5.99832206555887937690e-1) * r +
                     1.0)
    x = num / den
    if q < 0.0:
        x = -x
    return 0.0 + (x * 1.0)


@njit(cache=True)
def argsort2(primary, secondary):
    """Positions that order (primary, secondary) pairs ascending: a bottom-up
    merge sort. numba's own argsort costs seconds to compile for each kind and
    type; this one sort serves every order the loop needs."""
    n = primary.shape[0]
    a = np.arange(n)
    tmp = np.empty(n, np.int64)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                x, y = a[i], a[j]
                if primary[y] < primary[x] or (primary[y] == primary[x] and secondary[y] < secondary[x]):
                    tmp[k] = y
                    j += 1
                else:
                    tmp[k] = x
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = a[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = a[j]
                j += 1
                k += 1
            lo = hi
        a, tmp = tmp, a
        width *= 2
    return a


@njit(cache=True)
def after(sorted_turns, turn):
    """``bisect_right(sorted_turns, turn)``."""
    lo, hi = 0, sorted_turns.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if turn < sorted_turns[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def grow(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[:a.shape[0]] = a
    return b


# -- records --------------------------------------------------------------------

@njit(cache=True)
def new_window(full, born, capacity):
    """A window with no item yet, for ``capacity`` (re)insertions."""
    n = full.shape[0]
    return WindowState(np.zeros(n, np.int8), full.copy(), np.zeros(n, np.bool_), np.ones(n, np.bool_),
                       born.copy(), np.full(n, -1, np.int64), np.empty(capacity, np.int64),
                       np.zeros(1, np.int64), np.zeros(4, np.int64), np.zeros(1, np.int64),
                       np.zeros(4, np.int64), np.empty(n, np.int64), np.zeros(N_COUNTERS, np.int64),
                       np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.zeros(1, np.int64))


@njit(cache=True)
def new_proposal(size):
    return Proposal(np.empty(size, np.int64), np.empty(size), np.empty(size, np.bool_),
                    np.empty(size, np.bool_), np.empty(size, np.int64), np.empty(size, np.int64),
                    np.empty(size, np.bool_), np.empty(size, np.bool_), np.empty(size, np.int64))


@njit(cache=True)
def grow_proposal(p, need):
    """``p`` with room for ``need`` candidates (its arrays grown, the values kept)."""
    return Proposal(grow(p.item, need), grow(p.score, need), grow(p.kept, need), grow(p.answer, need),
                    grow(p.grade, need), grow(p.tok, need), grow(p.masked, need), grow(p.active, need),
                    grow(p.last_ref, need))


@njit(cache=True)
def head(p, n):
    """The first ``n`` candidates of ``p``."""
    return Proposal(p.item[:n], p.score[:n], p.kept[:n], p.answer[:n], p.grade[:n], p.tok[:n],
                    p.masked[:n], p.active[:n], p.last_ref[:n])


# -- the window and Tier 1 ---------------------------------------------------------

@njit(cache=True, inline="always")
def add(w, items, i):
    """``Window.add``: ``i`` at the end of the window order, its tokens counted."""
    w.state[i] = IN_WINDOW
    w.posof[i] = w.n_seq[0]
    w.seq[w.n_seq[0]] = i
    w.n_seq[0] += 1
    w.zu[items.zone[i]] += w.tok[i]
    w.tot[0] += w.tok[i]


@njit(cache=True, inline="always")
def set_tokens(w, items, i, tokens):
    """``LiveItem.tokens = tokens`` on an item in the window (its totals follow)."""
    d = tokens - w.tok[i]
    w.zu[items.zone[i]] += d
    w.tot[0] += d
    w.tok[i] = tokens


@njit(cache=True, inline="always")
def restore(w, items, i):
    """``LiveItem.restore``: full tokens, unmasked, active."""
    set_tokens(w, items, i, items.full[i])
    w.masked[i] = False
    w.active[i] = True


@njit(cache=True, inline="always")
def retrieve(w, items, i):
    """``Window.retrieve`` (less ``last_ref``, set by the caller): back from memory, restored."""
    w.tok[i] = items.full[i]
    w.masked[i] = False
    w.active[i] = True
    add(w, items, i)


@njit(cache=True, inline="always")
def evict(w, items, i, turn):
    """``Window.evict``, logged as ``(turn, ctx_id)`` (``stats.evictions``)."""
    w.state[i] = EVICTED
    w.zu[items.zone[i]] -= w.tok[i]
    w.tot[0] -= w.tok[i]
    w.ev_turn[w.n_ev[0]] = turn
    w.ev_item[w.n_ev[0]] = i
    w.n_ev[0] += 1


@njit(cache=True, inline="always")
def live_items(w):
    """``list(window)``: the items in the window, in window order, into
    ``w.live``; their count."""
    seq, state, posof, live = w.seq, w.state, w.posof, w.live  # bound once: no look-up per item
    m = 0
    for p in range(w.n_seq[0]):
        i = seq[p]
        if state[i] == IN_WINDOW and posof[i] == p:
            live[m] = i
            m += 1
    return m


@njit(cache=True, inline="always")
def mask_old_tool_result(i, turn, mask_after, masked, last_ref, mask_tok, zone, tok, zu, tot):
    """``mask_old_tool_results`` for one tool result: the tokens it saves.
    (The per-item rules take their arrays one by one: a record's array read
    inside the window loop costs a reference count each time.)"""
    if masked[i] or turn - last_ref[i] <= mask_after:
        return 0
    saved = tok[i] - mask_tok[i]
    d = mask_tok[i] - tok[i]  # LiveItem.mask: its tokens set, the totals follow
    zu[zone[i]] += d
    tot[0] += d
    tok[i] = mask_tok[i]
    masked[i] = True
    return saved


@njit(cache=True, inline="always")
def drop_trivial_ack(i, turn, trivial_ack, zone, pinned, born, tok):
    """``drop_trivial_acks`` for one acknowledgement: whether it is dropped
    (the caller evicts it)."""
    return zone[i] != SYSTEM and not pinned[i] and tok[i] < trivial_ack and born[i] < turn


@njit(cache=True, inline="always")
def deactivate_stale_subscription(i, turn, ttl, active, last_ref, born, sub_off, sub_turns):
    """``deactivate_stale_subscriptions`` for one subscription: whether it stops
    (the caller sets it inactive with no tokens)."""
    if not active[i]:
        return False
    touched = last_ref[i] if last_ref[i] > born[i] else born[i]
    for b in range(sub_off[i], sub_off[i + 1]):
        t = sub_turns[b]
        if touched < t <= turn:
            touched = t
    return turn - touched >= ttl


@njit(cache=True, inline="always")
def caps(w, params):
    """``TwoTierEviction._caps``: each evictable zone's cap at this system usage."""
    allocable = params.total - min(w.zu[SYSTEM], params.system_max)
    for z in range(1, 4):
        w.caps[z] = int(int(params.shares[z - 1] * allocable) * params.cap_factor)


@njit(cache=True, inline="always")
def zone_pool(w, items, z, turn, m):
    """``window.evictable(zone)`` sorted by ``zone_order_key(zone, turn)``."""
    live, zone, tok, pinned = w.live, items.zone, w.tok, items.pinned
    k = 0
    for a in range(m):
        i = live[a]
        if zone[i] == z and tok[i] > 0 and not pinned[i]:
            k += 1
    ids = np.empty(k, np.int64)
    primary = np.empty(k)
    secondary = np.empty(k, np.int64)
    masked, active, relevance, completed, born, rank = (w.masked, w.active, items.relevance,
                                                        items.completed, items.born, items.rank)
    k = 0
    for a in range(m):
        i = live[a]
        if zone[i] == z and tok[i] > 0 and not pinned[i]:
            ids[k] = i
            if z == CHRONICLE:  # (not masked, born, ctx_id)
                primary[k] = 0.0 if masked[i] else 1.0
            elif z == MEMORY:  # (relevance or 0.5, born, ctx_id)
                primary[k] = relevance[i]
            else:  # (not completed, active, born, ctx_id)
                primary[k] = (0.0 if completed[i] <= turn else 2.0) + (1.0 if active[i] else 0.0)
            secondary[k] = (born[i] << 21) | rank[i]
            k += 1
    return ids[argsort2(primary, secondary)]


@njit(cache=True, inline="always")
def evict_by_zone_policy(w, items, z, turn, m):
    """``evict_by_zone_policy(window, zone, cap, turn)`` with the zone's cap in
    ``w.caps``: the number of items evicted."""
    zu, cap = w.zu, w.caps[z]
    if zu[z] <= cap:
        return 0
    evicted = 0
    for i in zone_pool(w, items, z, turn, m):
        if zu[z] <= cap:
            break
        evict(w, items, i, turn)
        evicted += 1
    return evicted


@njit(cache=True, inline="always")
def evict_to_total(w, items, target, turn, m):
    """``evict_to_total``: the next policy victim from the zone furthest over its cap."""
    q1 = zone_pool(w, items, CHRONICLE, turn, m)
    q2 = zone_pool(w, items, MEMORY, turn, m)
    q3 = zone_pool(w, items, WORKSPACE, turn, m)
    h1, h2, h3 = 0, 0, 0
    zu, zcaps, tot = w.zu, w.caps, w.tot
    while tot[0] > target:
        best, zbest = -1.0, 0
        if h1 < q1.shape[0]:
            best, zbest = zu[CHRONICLE] / max(zcaps[CHRONICLE], 1), CHRONICLE
        if h2 < q2.shape[0]:
            f = zu[MEMORY] / max(zcaps[MEMORY], 1)
            if zbest == 0 or f > best:
                best, zbest = f, MEMORY
        if h3 < q3.shape[0]:
            f = zu[WORKSPACE] / max(zcaps[WORKSPACE], 1)
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


@njit(cache=True, inline="always")
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
    deactivated = 0
    live, kind, zone, pinned, born = w.live, items.kind, items.zone, items.pinned, items.born
    tok, zu, tot, masked, active, last_ref = w.tok, w.zu, w.tot, w.masked, w.active, w.last_ref
    mask_tok, sub_off, sub_turns = items.mask_tok, items.sub_off, items.sub_turns
    mask_after, trivial_ack, ttl = params.mask_after, params.trivial_ack, params.ttl
    for a in range(m):
        i = live[a]
        k = kind[i]
        if k == KIND_TOOL_RESULT:
            saved += mask_old_tool_result(i, turn, mask_after, masked, last_ref, mask_tok, zone, tok, zu, tot)
        elif k == KIND_ACK:
            if drop_trivial_ack(i, turn, trivial_ack, zone, pinned, born, tok):
                evict(w, items, i, turn)
                dropped += 1
        elif k == KIND_SUBSCRIPTION:
            if deactivate_stale_subscription(i, turn, ttl, active, last_ref, born, sub_off, sub_turns):
                active[i] = False
                zu[zone[i]] -= tok[i]
                tot[0] -= tok[i]
                tok[i] = 0
                deactivated += 1
    w.counters[C_DEACTIVATED] += deactivated
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


# -- Tier 2 and the keep-backs --------------------------------------------------------

_LOG_1000 = math.log(1000.0)


@njit(cache=True, inline="always")
def evictable(w, items, m, ev):
    """``Window.evictable()``: the evictable items holding tokens, in window
    order, into ``ev``; their count."""
    live, tok, zone, pinned = w.live, w.tok, items.zone, items.pinned
    k = 0
    for a in range(m):
        i = live[a]
        if tok[i] > 0 and zone[i] != SYSTEM and not pinned[i]:
            ev[k] = i
            k += 1
    return k


@njit(cache=True, inline="always")
def feature_row(x, i, turn, last_ref, tok, masked, items):
    """``feature_matrix``'s row of item ``i`` at ``turn`` (its last reference,
    tokens and masked as given) into ``x``."""
    n_features = x.shape[0]
    age = turn - last_ref if last_ref < turn else 0
    row = items.const_table[items.const_row[i]]
    for c in range(n_features - 6):
        x[c] = row[c]
    x[n_features - 6] = math.log1p(age)
    x[n_features - 5] = math.log1p(tok) / _LOG_1000
    x[n_features - 4] = 1.0 if items.is_error[i] else 0.0
    x[n_features - 3] = 1.0 if masked else 0.0
    x[n_features - 2] = 1.0 if items.completed[i] <= turn else 0.0
    x[n_features - 1] = items.relevance[i] - 0.5


@njit(cache=True, inline="always")
def linear_scores_on_grid(w, items, ev, k, turn, weights, x, score_int):
    """``on_grid(linear_scores(items, turn, weights))`` as grid steps
    (``score_int / 2**32`` is the score): the feature row (``feature_matrix``),
    its dot product and sigmoid, snapped to the grid."""
    n_features = weights.shape[0]
    last_ref, tok, masked = w.last_ref, w.tok, w.masked
    for a in range(k):
        i = ev[a]
        feature_row(x, i, turn, last_ref[i], tok[i], masked[i], items)
        s = 0.0
        for c in range(n_features):
            s += x[c] * weights[c]
        s = -min(max(s, -30.0), 30.0)
        p = 1.0 / (1.0 + math.exp(s))
        score_int[a] = int(np.rint(p * GRID))


@njit(cache=True, inline="always")
def keep_first(ev, k, score_int, rank):
    """``keep_first(scores)``: positions in ``ev`` by descending score, ties by ctx_id."""
    key = np.empty(k, np.int64)
    for a in range(k):
        key[a] = ((np.int64(1) << 32) - score_int[a]) << 21 | rank[ev[a]]
    return argsort2(np.zeros(k), key)


@njit(cache=True, inline="always")
def eviction_units(ev, k, score_int, items, nxt, g_first, g_last):
    """``eviction_units(items, scores)``: each unit (coherence group, or an item
    of its own) as the position of its first member in ``ev``, least relevant
    first (by best score, then first ctx_id); a unit's other members follow
    through ``nxt`` (-1 ends it)."""
    best = score_int[:k].copy()
    nxt[:k] = -1
    unit = np.empty(k, np.int64)
    n_units = 0
    group, rank = items.group, items.rank
    for a in range(k):
        g = group[ev[a]]
        if g < 0:
            unit[n_units] = a
            n_units += 1
        elif g_first[g] < 0:
            g_first[g] = a
            g_last[g] = a
            unit[n_units] = a
            n_units += 1
        else:
            f = g_first[g]
            nxt[g_last[g]] = a
            g_last[g] = a
            if score_int[a] > best[f]:
                best[f] = score_int[a]
    for a in range(k):
        g = group[ev[a]]
        if g >= 0:
            g_first[g] = -1
            g_last[g] = -1
    ukey = np.empty(n_units, np.int64)
    for u in range(n_units):
        ukey[u] = best[unit[u]] << 21 | rank[ev[unit[u]]]
    return unit[:n_units][argsort2(np.zeros(n_units), ukey)]


@njit(cache=True, inline="always")
def choose(w, ev, units, nxt, score_int, need, chosen):
    """``TwoTierEviction.tier2``'s proposal: whole units, least relevant first,
    until usage would reach ``evict_to_pct`` (``need`` tokens); a group's
    members by score, in window order on ties. Positions in ``ev`` into
    ``chosen``; their count."""
    tok = w.tok
    n_chosen = 0
    for u in range(units.shape[0]):
        if need <= 0:
            break
        a = units[u]
        if nxt[a] < 0:
            chosen[n_chosen] = a
            n_chosen += 1
            need -= tok[ev[a]]
        else:
            start = n_chosen
            b = a
            while b >= 0:
                chosen[n_chosen] = b
                n_chosen += 1
                need -= tok[ev[b]]
                b = nxt[b]
            mkey = np.empty(n_chosen - start, np.int64)
            for c in range(start, n_chosen):
                mkey[c - start] = score_int[chosen[c]] << 21 | chosen[c]
            order = argsort2(np.zeros(mkey.shape[0]), mkey)
            members = chosen[start:n_chosen].copy()
            for c in range(n_chosen - start):
                chosen[start + c] = members[order[c]]
    return n_chosen


@njit(cache=True, inline="always")
def keepback_answers(items, turns, params, turn, cands, lo, hi, grade_of):
    """``KeepBackBroker.resolve``'s ground truth (the highest grade needed
    within the horizon) and ``simulated_keepback``'s answer for candidates
    ``lo:hi`` of ``cands``: ``cands.grade`` and ``cands.answer``."""
    fut_turn, fut_item, fut_grade = turns.fut_turn, turns.fut_item, turns.fut_grade
    item, grade, answer, name_key = cands.item, cands.grade, cands.answer, items.name_key
    first = after(fut_turn, turn)
    last = after(fut_turn, turn + params.horizon)
    for b in range(first, last):
        i = fut_item[b]
        if i >= 0 and fut_grade[b] > grade_of[i]:
            grade_of[i] = fut_grade[b]
    key = flush_key(params.key_keepback, turn)
    false_keep, recall = params.false_keep, params.recall
    for j in range(lo, hi):
        i = item[j]
        g = grade_of[i]
        grade[j] = g
        u = float(mix64(key ^ name_key[i]) >> np.uint64(11)) * UNIT
        p = false_keep if g <= 0 else recall * (0.5 if g == 1 else 1.0)
        answer[j] = u < p
    for b in range(first, last):
        i = fut_item[b]
        if i >= 0:
            grade_of[i] = 0


@njit(cache=True, inline="always")
def answered_in_time(params, turn):
    """``KeepBackBroker``: the simulated answer's latency (``_sim_latency``)
    within ``eviction_feedback_timeout_ms``."""
    bits = mix64(flush_key(params.key_latency, turn) ^ params.key_empty) >> np.uint64(11)
    z = inv_cdf((float(bits) + 0.5) * UNIT)
    latency = float(params.latency_median_ms * math.exp(params.latency_sigma * z))
    return latency <= params.timeout_ms


@njit(cache=True, inline="always")
def keep_groups(items, cands, lo, hi, g_kept):
    """``TwoTierEviction.tier2``: a kept-back item keeps its whole coherence group."""
    kept, answer, item, group = cands.kept, cands.answer, cands.item, items.group
    for j in range(lo, hi):
        kept[j] = answer[j]
        g = group[item[j]]
        if answer[j] and g >= 0:
            g_kept[g] = True
    for j in range(lo, hi):
        g = group[item[j]]
        if g >= 0 and g_kept[g]:
            kept[j] = True
    for j in range(lo, hi):
        g = group[item[j]]
        if g >= 0:
            g_kept[g] = False


@njit(cache=True, inline="always")
def tier2(w, items, turns, params, turn, m, weights, scratch, rank_item, n_rank, cands, n_cand):
    """``TwoTierEviction.tier2`` with a linear scorer: its items scored
    (``tier2_items``, ``linear_scores_on_grid``), then ``tier2_decide``."""
    ev, score_int = scratch[0], scratch[1]
    k = tier2_items(w, items, m, ev)
    linear_scores_on_grid(w, items, ev, k, turn, weights, scratch[8], score_int)
    return tier2_decide(w, items, turns, params, turn, k, scratch, rank_item, n_rank, cands, n_cand)


@njit(cache=True, inline="always")
def tier2_items(w, items, m, ev):
    """``TwoTierEviction.tier2``'s items and ``_score``'s count of the call:
    the evictable items into ``ev``; their count."""
    k = evictable(w, items, m, ev)
    w.counters[C_SCORER_CALLS] += 1
    return k


@njit(cache=True, inline="always")
def tier2_decide(w, items, turns, params, turn, k, scratch, rank_item, n_rank, cands, n_cand):
    """``TwoTierEviction.tier2`` once the ``k`` items in ``scratch``'s ``ev``
    are scored (``score_int``): ranking, proposal, keep-backs, evictions and
    the hard ceiling. The ranking goes to ``rank_item`` after ``n_rank``, the
    candidates to ``cands`` after ``n_cand`` (both grown as needed); returns
    (rank_item, ranked, cands, candidates, sent to the main model, answered
    in time)."""
    ev, score_int, nxt, chosen, grade_of, g_first, g_last, g_kept, _ = scratch
    order = keep_first(ev, k, score_int, items.rank)
    rank_item = grow(rank_item, n_rank + k)
    for a in range(k):
        rank_item[n_rank + a] = ev[order[a]]
    units = eviction_units(ev, k, score_int, items, nxt, g_first, g_last)
    need = w.tot[0] - int(params.evict_to_pct * params.total)
    n_chosen = choose(w, ev, units, nxt, score_int, need, chosen)
    w.counters[C_PROPOSALS] += 1
    cands = grow_proposal(cands, n_cand + n_chosen)
    lo, hi = n_cand, n_cand + n_chosen
    cands.item[lo:hi] = ev[chosen[:n_chosen]]  # the candidates as they are now
    cands.score[lo:hi] = score_int[chosen[:n_chosen]] / GRID
    cands.kept[lo:hi] = False
    cands.answer[lo:hi] = False
    cands.grade[lo:hi] = 0
    picked = cands.item[lo:hi]
    cands.tok[lo:hi] = w.tok[picked]
    cands.masked[lo:hi] = w.masked[picked]
    cands.active[lo:hi] = w.active[picked]
    cands.last_ref[lo:hi] = w.last_ref[picked]
    sent = params.keepbacks and n_chosen > 0
    in_time = False
    if sent:
        keepback_answers(items, turns, params, turn, cands, lo, hi, grade_of)
        in_time = answered_in_time(params, turn)
        if not in_time:
            w.counters[C_AUTO] += 1
        else:
            keep_groups(items, cands, lo, hi, g_kept)
    kept, item = cands.kept, cands.item
    for j in range(lo, hi):
        if not kept[j]:
            evict(w, items, item[j], turn)
    ceiling = int(params.ceiling_pct * params.total)
    if w.tot[0] > ceiling:  # the hard ceiling: heuristics evict regardless
        w.counters[C_CEILING] += 1
        m = live_items(w)
        caps(w, params)
        evict_to_total(w, items, ceiling, turn, m)
    return rank_item, k, cands, n_chosen, sent, in_time


@njit(cache=True, inline="always")
def observe(items, cands, lo, hi, turn, ring_x, ring_y, ring):
    """``OnlineScorer.observe``: each candidate's feature row (as proposed) and
    whether it was kept back, appended to the rolling window (``ring_x``,
    ``ring_y``: the oldest overwritten once full; ``ring``: rows held, next
    slot, observations); True when a refit is due (every ``update_every``
    observations, once ``min_records`` rows are held: ``ring[3]``, ``ring[4]``)."""
    size = ring_y.shape[0]
    for j in range(lo, hi):
        slot = ring[1]
        feature_row(ring_x[slot], cands.item[j], turn, cands.last_ref[j], cands.tok[j],
                    cands.masked[j], items)
        ring_y[slot] = 1.0 if cands.kept[j] else 0.0
        ring[1] = (slot + 1) % size
        if ring[0] < size:
            ring[0] += 1
    ring[2] += 1
    return ring[2] % ring[3] == 0 and ring[0] >= ring[4]


# -- the replay -------------------------------------------------------------------

@njit(cache=True, inline="always")
def arrive(w, items, turns, turn):
    """``replay``: the turn's new items enter the window."""
    for a in range(turns.arr_off[turn], turns.arr_off[turn + 1]):
        add(w, items, turns.arr_item[a])


@njit(cache=True, inline="always")
def serve_needs(w, items, turns, turn, served):
    """``replay``: the turn's needs, each served if its item is in the window,
    unmasked and active, else retrieved from memory or restored (a re-retrieval)."""
    need_item, state, masked, active, last_ref = turns.need_item, w.state, w.masked, w.active, w.last_ref
    for a in range(turns.need_off[turn], turns.need_off[turn + 1]):
        i = need_item[a]
        if i < 0 or state[i] == UNBORN:
            continue
        ok = state[i] == IN_WINDOW and not masked[i] and active[i]
        served[a] = ok
        if not ok:
            if state[i] == EVICTED:
                retrieve(w, items, i)
            else:
                restore(w, items, i)
            w.counters[C_RERETRIEVALS] += 1
            w.counters[C_RERETRIEVED_TOKENS] += items.full[i]
        last_ref[i] = turn


@njit(cache=True, inline="always")
def refresh_subscriptions(w, items, turns, turn):
    """``replay``: the subscriptions refreshed this turn reactivate."""
    for a in range(turns.refresh_off[turn], turns.refresh_off[turn + 1]):
        i = turns.refresh_item[a]
        if w.state[i] == IN_WINDOW:
            restore(w, items, i)
            w.last_ref[i] = turn


@njit(cache=True)
def new_state(items, turns, n_features):
    """A replay's ``LoopState`` before its first turn: room for every arrival
    and re-retrieval, and for Tier 2's rankings and candidates at every turn."""
    n = items.born.shape[0]
    n_turns = turns.arr_off.shape[0] - 1
    n_needs = turns.need_item.shape[0]
    room = max(n_turns * n, 1)  # at most one Tier-2 call a turn, each ranking at most every item
    groups = n + 1
    return LoopState(new_window(items.full, items.born, n + n_needs + 1), np.zeros(n_turns, np.int64),
                     np.zeros(n_needs, np.bool_), np.empty(n_turns, np.int64),
                     np.empty(n_turns, np.int64), np.empty(n_turns, np.int64),
                     np.empty(n_turns, np.bool_), np.empty(n_turns, np.bool_),
                     np.empty(room, np.int64), new_proposal(room),
                     (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
                      np.empty(n, np.int64), np.zeros(n, np.int64), np.full(groups, -1, np.int64),
                      np.full(groups, -1, np.int64), np.zeros(groups, np.bool_), np.empty(n_features)))


@njit(cache=True)
def replay_kernel(items, turns, params, weights, st, ext_scores, ring_x, ring_y, io):
    """``replay(session, truth, strategy.step, budget, stats)``: one case's
    replay on arrays, in ``st`` (``new_state``), from the turn ``io[8]`` on.
    It returns at the end (``io[0] == END``; the counts of rankings,
    candidates and Tier-2 calls in ``io[10:13]``) or where the scorer's work
    is not the loop's, with ``io[0]`` saying why; called again, it goes on:

    - ``SCORES`` (``params.scoring == EXTERNAL``: a scorer whose scores come
      from Python): Tier 2 at turn ``io[1]`` needs the scores of the ``io[2]``
      items in ``st.scratch[0]`` as grid steps in ``ext_scores``
      (``TwoTierEviction._score``);
    - ``REFIT`` (``params.scoring == ONLINE``: ``OnlineScorer``): after turn
      ``io[1]``, the rolling window (``ring_x``, ``ring_y``; ``io[3:8]``: rows
      held, next slot, observations, ``update_every``, ``min_records``) is due
      a refit, written into ``weights`` before the loop goes on.

    ``step`` (``TwoTierEviction.step``, ``.compress`` at the flush turn) is
    written out in the turn loop: Tier 1, then Tier 2 when usage is over the
    threshold (over ``evict_to_pct`` at the flush turn)."""
    w, scratch = st.w, st.scratch
    ev, score_int = scratch[0], scratch[1]
    rank_item, cands = st.rank_item, st.cands
    n_turns = turns.arr_off.shape[0] - 1
    n_rank, n_cand, n_calls = io[10], io[11], io[12]
    ring = io[3:8]
    threshold = params.threshold_pct * params.total
    turn = io[8]
    while turn < n_turns:
        scored = io[9] == 1  # back with the scores of this turn's Tier 2
        io[9] = 0
        tier2 = scored
        if scored:
            k = io[2]
            score_int[:k] = ext_scores[:k]
        else:
            arrive(w, items, turns, turn)
            serve_needs(w, items, turns, turn, st.served)
            refresh_subscriptions(w, items, turns, turn)
            flush = turn == params.flush_turn
            if not flush and w.tot[0] > threshold:  # the budget guard: this turn is under pressure
                w.counters[C_GUARD] += 1
            m = tier1(w, items, params, turn)
            if w.tot[0] > (params.evict_to_pct * params.total if flush else threshold):
                tier2 = True
                k = tier2_items(w, items, m, ev)
                if params.scoring == EXTERNAL:
                    io[0], io[1], io[2], io[8], io[9] = SCORES, turn, k, turn, 1
                    io[10], io[11], io[12] = n_rank, n_cand, n_calls
                    return
                linear_scores_on_grid(w, items, ev, k, turn, weights, scratch[8], score_int)
        refit = False
        if tier2:
            rank_item, k, cands, n_chosen, sent, in_time = tier2_decide(
                w, items, turns, params, turn, k, scratch, rank_item, n_rank, cands, n_cand)
            if params.scoring == ONLINE:
                refit = observe(items, cands, n_cand, n_cand + n_chosen, turn, ring_x, ring_y, ring)
            n_rank += k
            n_cand += n_chosen
            st.call_turn[n_calls] = turn
            st.call_rank_end[n_calls] = n_rank
            st.call_cand_end[n_calls] = n_cand
            st.call_sent[n_calls] = sent
            st.call_in_time[n_calls] = in_time
            n_calls += 1
        st.window_tokens[turn] = w.tot[0]
        turn += 1
        if refit:
            io[0], io[1], io[8] = REFIT, turn - 1, turn
            io[10], io[11], io[12] = n_rank, n_cand, n_calls
            return
    io[0], io[8] = END, turn
    io[10], io[11], io[12] = n_rank, n_cand, n_calls


@njit(cache=True)
def replay_log(st, io):
    """The ``ReplayLog`` of a replay ``replay_kernel`` ended."""
    w = st.w
    m = live_items(w)
    n_ev, n_calls = w.n_ev[0], io[12]
    return ReplayLog(w.counters, st.window_tokens, st.served, w.ev_turn[:n_ev], w.ev_item[:n_ev],
                     st.call_turn[:n_calls], st.call_rank_end[:n_calls], st.call_cand_end[:n_calls],
                     st.call_sent[:n_calls], st.call_in_time[:n_calls], st.rank_item[:io[10]],
                     head(st.cands, io[11]), w.live[:m].copy(), w.masked, w.active)
