"""Tier 2 and the main model's keep-backs on arrays, compiled with numba:
each function mirrors the Python function named in its docstring
(``context/features.py``, ``scorers/grid.py``, ``units.py``,
``strategy.TwoTierEviction.tier2``, ``feedback/flush.py``,
``llm/simulated.py``), and ``tests/eviction/test_compiled_pairs.py`` holds
each pair to the same result."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from silas_exp.eviction.two_tier.kernel_base import (
    C_AUTO,
    C_CEILING,
    C_PROPOSALS,
    C_SCORER_CALLS,
    GRID,
    SYSTEM,
    UNIT,
    after,
    argsort2,
    flush_key,
    grow,
    grow_proposal,
    inv_cdf,
    mix64,
)
from silas_exp.eviction.two_tier.kernel_tier1 import caps, evict, evict_to_total, live_items

_LOG_1000 = math.log(1000.0)


@njit(cache=True)
def evictable(w, items, m, ev):
    """``Window.evictable()``: the evictable items holding tokens, in window
    order, into ``ev``; their count."""
    k = 0
    for a in range(m):
        i = w.live[a]
        if w.tok[i] > 0 and items.zone[i] != SYSTEM and not items.pinned[i]:
            ev[k] = i
            k += 1
    return k


@njit(cache=True)
def linear_scores_on_grid(w, items, ev, k, turn, weights, x, score_int):
    """``on_grid(linear_scores(items, turn, weights))`` as grid steps
    (``score_int / 2**32`` is the score): the feature row (``feature_matrix``),
    its dot product and sigmoid, snapped to the grid."""
    n_features = weights.shape[0]
    for a in range(k):
        i = ev[a]
        age = turn - w.last_ref[i] if w.last_ref[i] < turn else 0
        row = items.const_table[items.const_row[i]]
        for c in range(n_features - 6):
            x[c] = row[c]
        x[n_features - 6] = math.log1p(age)
        x[n_features - 5] = math.log1p(w.tok[i]) / _LOG_1000
        x[n_features - 4] = 1.0 if items.is_error[i] else 0.0
        x[n_features - 3] = 1.0 if w.masked[i] else 0.0
        x[n_features - 2] = 1.0 if items.completed[i] <= turn else 0.0
        x[n_features - 1] = items.relevance[i] - 0.5
        s = 0.0
        for c in range(n_features):
            s += x[c] * weights[c]
        s = -min(max(s, -30.0), 30.0)
        p = 1.0 / (1.0 + math.exp(s))
        score_int[a] = int(np.rint(p * GRID))


@njit(cache=True)
def keep_first(ev, k, score_int, rank):
    """``keep_first(scores)``: positions in ``ev`` by descending score, ties by ctx_id."""
    key = np.empty(k, np.int64)
    for a in range(k):
        key[a] = ((np.int64(1) << 32) - score_int[a]) << 21 | rank[ev[a]]
    return argsort2(np.zeros(k), key)


@njit(cache=True)
def eviction_units(ev, k, score_int, items, nxt, g_first, g_last):
    """``eviction_units(items, scores)``: each unit (coherence group, or an item
    of its own) as the position of its first member in ``ev``, least relevant
    first (by best score, then first ctx_id); a unit's other members follow
    through ``nxt`` (-1 ends it)."""
    best = score_int[:k].copy()
    nxt[:k] = -1
    unit = np.empty(k, np.int64)
    n_units = 0
    for a in range(k):
        g = items.group[ev[a]]
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
        g = items.group[ev[a]]
        if g >= 0:
            g_first[g] = -1
            g_last[g] = -1
    ukey = np.empty(n_units, np.int64)
    for u in range(n_units):
        ukey[u] = best[unit[u]] << 21 | items.rank[ev[unit[u]]]
    return unit[:n_units][argsort2(np.zeros(n_units), ukey)]


@njit(cache=True)
def choose(w, ev, units, nxt, score_int, need, chosen):
    """``TwoTierEviction.tier2``'s proposal: whole units, least relevant first,
    until usage would reach ``evict_to_pct`` (``need`` tokens); a group's
    members by score, in window order on ties. Positions in ``ev`` into
    ``chosen``; their count."""
    n_chosen = 0
    for u in range(units.shape[0]):
        if need <= 0:
            break
        a = units[u]
        if nxt[a] < 0:
            chosen[n_chosen] = a
            n_chosen += 1
            need -= w.tok[ev[a]]
        else:
            start = n_chosen
            b = a
            while b >= 0:
                chosen[n_chosen] = b
                n_chosen += 1
                need -= w.tok[ev[b]]
                b = nxt[b]
            mkey = np.empty(n_chosen - start, np.int64)
            for c in range(start, n_chosen):
                mkey[c - start] = score_int[chosen[c]] << 21 | chosen[c]
            order = argsort2(np.zeros(mkey.shape[0]), mkey)
            members = chosen[start:n_chosen].copy()
            for c in range(n_chosen - start):
                chosen[start + c] = members[order[c]]
    return n_chosen


@njit(cache=True)
def keepback_answers(items, turns, params, turn, cands, lo, hi, grade_of):
    """``KeepBackBroker.resolve``'s ground truth (the highest grade needed
    within the horizon) and ``simulated_keepback``'s answer for candidates
    ``lo:hi`` of ``cands``: ``cands.grade`` and ``cands.answer``."""
    first = after(turns.fut_turn, turn)
    last = after(turns.fut_turn, turn + params.horizon)
    for b in range(first, last):
        i = turns.fut_item[b]
        if i >= 0 and turns.fut_grade[b] > grade_of[i]:
            grade_of[i] = turns.fut_grade[b]
    key = flush_key(params.key_keepback, turn)
    for j in range(lo, hi):
        i = cands.item[j]
        g = grade_of[i]
        cands.grade[j] = g
        u = float(mix64(key ^ items.name_key[i]) >> np.uint64(11)) * UNIT
        p = params.false_keep if g <= 0 else params.recall * (0.5 if g == 1 else 1.0)
        cands.answer[j] = u < p
    for b in range(first, last):
        i = turns.fut_item[b]
        if i >= 0:
            grade_of[i] = 0


@njit(cache=True)
def answered_in_time(params, turn):
    """``KeepBackBroker``: the simulated answer's latency (``_sim_latency``)
    within ``eviction_feedback_timeout_ms``."""
    bits = mix64(flush_key(params.key_latency, turn) ^ params.key_empty) >> np.uint64(11)
    z = inv_cdf((float(bits) + 0.5) * UNIT)
    latency = float(params.latency_median_ms * math.exp(params.latency_sigma * z))
    return latency <= params.timeout_ms


@njit(cache=True)
def keep_groups(items, cands, lo, hi, g_kept):
    """``TwoTierEviction.tier2``: a kept-back item keeps its whole coherence group."""
    for j in range(lo, hi):
        cands.kept[j] = cands.answer[j]
        g = items.group[cands.item[j]]
        if cands.answer[j] and g >= 0:
            g_kept[g] = True
    for j in range(lo, hi):
        g = items.group[cands.item[j]]
        if g >= 0 and g_kept[g]:
            cands.kept[j] = True
    for j in range(lo, hi):
        g = items.group[cands.item[j]]
        if g >= 0:
            g_kept[g] = False


@njit(cache=True)
def tier2(w, items, turns, params, turn, m, weights, scratch, rank_item, n_rank, cands, n_cand):
    """``TwoTierEviction.tier2``: scores, ranking, proposal, keep-backs,
    evictions and the hard ceiling. The ranking goes to ``rank_item`` after
    ``n_rank``, the candidates to ``cands`` after ``n_cand`` (both grown as
    needed); returns (rank_item, ranked, cands, candidates, sent to the main
    model, answered in time)."""
    ev, score_int, nxt, chosen, grade_of, g_first, g_last, g_kept, x = scratch
    k = evictable(w, items, m, ev)
    w.counters[C_SCORER_CALLS] += 1
    linear_scores_on_grid(w, items, ev, k, turn, weights, x, score_int)
    order = keep_first(ev, k, score_int, items.rank)
    rank_item = grow(rank_item, n_rank + k)
    for a in range(k):
        rank_item[n_rank + a] = ev[order[a]]
    units = eviction_units(ev, k, score_int, items, nxt, g_first, g_last)
    need = w.tot[0] - int(params.evict_to_pct * params.total)
    n_chosen = choose(w, ev, units, nxt, score_int, need, chosen)
    w.counters[C_PROPOSALS] += 1
    cands = grow_proposal(cands, n_cand + n_chosen)
    for c in range(n_chosen):
        a = chosen[c]
        i = ev[a]
        j = n_cand + c
        cands.item[j] = i
        cands.score[j] = score_int[a] / GRID
        cands.kept[j] = False
        cands.answer[j] = False
        cands.grade[j] = 0
        cands.tok[j] = w.tok[i]
        cands.masked[j] = w.masked[i]
        cands.active[j] = w.active[i]
        cands.last_ref[j] = w.last_ref[i]
    lo, hi = n_cand, n_cand + n_chosen
    sent = params.keepbacks and n_chosen > 0
    in_time = False
    if sent:
        keepback_answers(items, turns, params, turn, cands, lo, hi, grade_of)
        in_time = answered_in_time(params, turn)
        if not in_time:
            w.counters[C_AUTO] += 1
        else:
            keep_groups(items, cands, lo, hi, g_kept)
    for j in range(lo, hi):
        if not cands.kept[j]:
            evict(w, items, cands.item[j], turn)
    ceiling = int(params.ceiling_pct * params.total)
    if w.tot[0] > ceiling:  # the hard ceiling: heuristics evict regardless
        w.counters[C_CEILING] += 1
        m = live_items(w)
        caps(w, params)
        evict_to_total(w, items, ceiling, turn, m)
    return rank_item, k, cands, n_chosen, sent, in_time
