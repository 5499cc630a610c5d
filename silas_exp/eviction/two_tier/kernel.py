"""The two-tier replay's turn loop, compiled with numba: the same decisions as
``silas_exp.context.replay.replay`` stepping ``TwoTierEviction`` with a
linear scorer and the simulated main model's keep-backs, on arrays.

``silas_exp.eviction.two_tier.compiled`` encodes a session into these arrays, decides
when this loop may stand in for the Python one, and decodes what it logs into
the same records (``ReplayStats``, feedback-store rows, model-call
accounting). This module holds only array code: every rule here mirrors a
Python function named in its comment, and a change to one is a change to
both (``tests/eviction/test_compiled.py`` replays both and compares every
record).

Items are numbered in arrival order. Window order is kept as an append-only
sequence of (re)insertions: an entry is live while its item is in the window
and the item's own position is that entry. Sort keys that Python builds as
tuples with a ctx_id last are a float primary and an int64 secondary
``born << 21 | rank``, ``rank`` the ctx_id's place among the session's ctx_ids
in sorted order (ctx_ids are distinct, so no two keys tie).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# zone codes (ContextZone order) and the kinds Tier 1 treats apart
SYSTEM, CHRONICLE, MEMORY, WORKSPACE = 0, 1, 2, 3
KIND_OTHER, KIND_TOOL_RESULT, KIND_ACK, KIND_SUBSCRIPTION = 0, 1, 2, 3
NOT_COMPLETED = 1 << 62
# item states
UNBORN, IN_WINDOW, EVICTED = 0, 1, 2

# integer parameters (ipar) and float parameters (fpar), by position
I_TOTAL, I_SYSTEM_MAX, I_MASK_AFTER, I_TTL, I_TRIVIAL_ACK, I_KEEPBACKS, I_HORIZON, I_FLUSH_TURN = range(8)
(F_THRESHOLD, F_CEILING, F_EVICT_TO, F_SHARE_C, F_SHARE_M, F_SHARE_W, F_CAP_FACTOR, F_RECALL,
 F_FALSE_KEEP, F_LATENCY_MEDIAN, F_LATENCY_SIGMA, F_TIMEOUT) = range(12)
# keys: the keep-back stream's, the latency stream's, key64("") (the latency's name)
K_KEEPBACK, K_LATENCY, K_EMPTY = range(3)
# counters, by position (ReplayStats fields of the same names)
(C_GUARD, C_PROPOSALS, C_SCORER_CALLS, C_AUTO, C_CEILING, C_RERETRIEVALS, C_RERETRIEVED_TOKENS,
 C_MASKED, C_TRIVIAL, C_DEACTIVATED) = range(10)
N_COUNTERS = 10

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_UNIT = 2.0 ** -53
_GRID = float(2 ** 32)


@njit(cache=True)
def mix64(z):
    """``silas_exp.llm.simulated.mix64`` on uint64."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def flush_key(key, turn):
    """``KeyedDraws._at((turn, 0))``: the first flush of ``turn``."""
    key = mix64(key + np.uint64(turn + 1) * _GAMMA)
    return mix64(key + np.uint64(1) * _GAMMA)


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
def _after(sorted_turns, turn):
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
def _grow(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[:a.shape[0]] = a
    return b


@njit(cache=True)
def _caps(zu, ipar, fpar, caps):
    """``TwoTierEviction._caps``: each evictable zone's cap at this system usage."""
    allocable = ipar[I_TOTAL] - min(zu[SYSTEM], ipar[I_SYSTEM_MAX])
    for z in range(1, 4):
        caps[z] = int(int(fpar[F_SHARE_C + z - 1] * allocable) * fpar[F_CAP_FACTOR])


@njit(cache=True)
def _live(seq, n_seq, posof, state, out):
    """The items in the window, in window order, into ``out``; their count."""
    m = 0
    for p in range(n_seq):
        i = seq[p]
        if state[i] == IN_WINDOW and posof[i] == p:
            out[m] = i
            m += 1
    return m


@njit(cache=True)
def _pool(z, turn, live, m, zone, tok, pinned, masked, active, completed, relevance, born, rank):
    """``evict_by_zone_policy``'s pool of ``zone`` sorted by ``zone_order_key``."""
    k = 0
    for a in range(m):
        i = live[a]
        if zone[i] == z and tok[i] > 0 and not pinned[i]:
            k += 1
    ids = np.empty(k, np.int64)
    primary = np.empty(k)
    secondary = np.empty(k, np.int64)
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


@njit(cache=True)
def _evict(i, turn, state, zone, tok, zu, tot, ev_turn, ev_item, cnt):
    state[i] = EVICTED
    zu[zone[i]] -= tok[i]
    tot[0] -= tok[i]
    ev_turn[cnt[0]] = turn
    ev_item[cnt[0]] = i
    cnt[0] += 1


@njit(cache=True)
def _evict_to_total(target, turn, caps, live, m, state, zone, tok, pinned, masked, active,
                    completed, relevance, born, rank, zu, tot, ev_turn, ev_item, cnt):
    """``evict_to_total``: the next policy victim from the zone furthest over its cap."""
    q1 = _pool(CHRONICLE, turn, live, m, zone, tok, pinned, masked, active, completed, relevance, born, rank)
    q2 = _pool(MEMORY, turn, live, m, zone, tok, pinned, masked, active, completed, relevance, born, rank)
    q3 = _pool(WORKSPACE, turn, live, m, zone, tok, pinned, masked, active, completed, relevance, born, rank)
    h1, h2, h3 = 0, 0, 0
    while tot[0] > target:
        best, zbest = -1.0, 0
        if h1 < q1.shape[0]:
            best, zbest = zu[CHRONICLE] / max(caps[CHRONICLE], 1), CHRONICLE
        if h2 < q2.shape[0]:
            f = zu[MEMORY] / max(caps[MEMORY], 1)
            if zbest == 0 or f > best:
                best, zbest = f, MEMORY
        if h3 < q3.shape[0]:
            f = zu[WORKSPACE] / max(caps[WORKSPACE], 1)
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
        _evict(i, turn, state, zone, tok, zu, tot, ev_turn, ev_item, cnt)


@njit(cache=True)
def replay_kernel(turns, arr_off, arr_item, need_off, need_item, refresh_off, refresh_item,
                  born, zone, kind, full, mask_tok, pinned, group, n_groups, rank, relevance,
                  completed, is_error, const_row, const_table, weights, name_key,
                  sub_off, sub_turns, fut_turn, fut_item, fut_grade, ipar, fpar, keys):
    """One case's replay. Needs and arrivals come per turn (``*_off`` offsets
    into the item lists); ``fut_*`` is every reference by turn (the need
    oracle's look-ahead). Returns the logs ``silas_exp.eviction.two_tier.compiled``
    decodes; see there for each array's meaning."""
    n = born.shape[0]
    n_needs = need_item.shape[0]
    cap = n + n_needs + 1  # insertions: arrivals and re-retrievals
    total_budget = ipar[I_TOTAL]
    threshold = fpar[F_THRESHOLD] * total_budget
    evict_to_level = fpar[F_EVICT_TO] * total_budget
    need_target = int(fpar[F_EVICT_TO] * total_budget)
    ceiling = int(fpar[F_CEILING] * total_budget)
    horizon = ipar[I_HORIZON]
    keepbacks = ipar[I_KEEPBACKS] != 0
    flush_turn = ipar[I_FLUSH_TURN]
    n_features = weights.shape[0]
    log1000 = math.log(1000.0)

    # item state
    state = np.zeros(n, np.int8)
    tok = full.copy()
    masked = np.zeros(n, np.bool_)
    active = np.ones(n, np.bool_)
    last_ref = born.copy()
    posof = np.full(n, -1, np.int64)
    seq = np.empty(cap, np.int64)
    n_seq = 0
    zu = np.zeros(4, np.int64)
    tot = np.zeros(1, np.int64)
    caps = np.zeros(4, np.int64)
    live = np.empty(n, np.int64)

    # logs
    counters = np.zeros(N_COUNTERS, np.int64)
    window_tokens = np.zeros(turns, np.int64)
    served = np.zeros(n_needs, np.bool_)
    ev_turn = np.empty(cap, np.int64)
    ev_item = np.empty(cap, np.int64)
    cnt = np.zeros(1, np.int64)
    # per Tier-2 call (at most one a turn): turn, end of its ranking, end of its
    # candidates, sent to the main model, resolved by it in time
    call_turn = np.empty(turns, np.int64)
    call_rank_end = np.empty(turns, np.int64)
    call_cand_end = np.empty(turns, np.int64)
    call_sent = np.empty(turns, np.bool_)
    call_in_time = np.empty(turns, np.bool_)
    n_calls = 0
    rank_item = np.empty(64, np.int64)
    n_rank = 0
    # per candidate: item, score, kept (after groups), answered (the main model's
    # own answer, in time or not), grade needed, and the item as it was
    c_item = np.empty(64, np.int64)
    c_score = np.empty(64)
    c_kept = np.empty(64, np.bool_)
    c_answer = np.empty(64, np.bool_)
    c_grade = np.empty(64, np.int64)
    c_tok = np.empty(64, np.int64)
    c_masked = np.empty(64, np.bool_)
    c_active = np.empty(64, np.bool_)
    c_last_ref = np.empty(64, np.int64)
    n_cand = 0

    # Tier-2 scratch
    ev = np.empty(n, np.int64)
    score = np.empty(n)
    score_int = np.empty(n, np.int64)
    best = np.empty(n, np.int64)
    nxt = np.empty(n, np.int64)
    g_first = np.full(max(n_groups, 1), -1, np.int64)
    g_last = np.full(max(n_groups, 1), -1, np.int64)
    g_kept = np.zeros(max(n_groups, 1), np.bool_)
    grade_of = np.zeros(n, np.int64)
    chosen = np.empty(n, np.int64)
    x = np.empty(n_features)

    for turn in range(turns):
        # new items
        for a in range(arr_off[turn], arr_off[turn + 1]):
            i = arr_item[a]
            state[i] = IN_WINDOW
            posof[i] = n_seq
            seq[n_seq] = i
            n_seq += 1
            zu[zone[i]] += tok[i]
            tot[0] += tok[i]
        # needs (replay)
        for a in range(need_off[turn], need_off[turn + 1]):
            i = need_item[a]
            if i < 0 or state[i] == UNBORN:
                continue
            ok = state[i] == IN_WINDOW and not masked[i] and active[i]
            served[a] = ok
            if not ok:
                if state[i] == EVICTED:  # Window.retrieve
                    state[i] = IN_WINDOW
                    posof[i] = n_seq
                    seq[n_seq] = i
                    n_seq += 1
                    tok[i] = full[i]
                    zu[zone[i]] += tok[i]
                    tot[0] += tok[i]
                else:  # LiveItem.restore
                    d = full[i] - tok[i]
                    zu[zone[i]] += d
                    tot[0] += d
                    tok[i] = full[i]
                masked[i] = False
                active[i] = True
                counters[C_RERETRIEVALS] += 1
                counters[C_RERETRIEVED_TOKENS] += full[i]
            last_ref[i] = turn
        # subscriptions refreshed this turn
        for a in range(refresh_off[turn], refresh_off[turn + 1]):
            i = refresh_item[a]
            if state[i] == IN_WINDOW:
                d = full[i] - tok[i]
                zu[zone[i]] += d
                tot[0] += d
                tok[i] = full[i]
                masked[i] = False
                active[i] = True
                last_ref[i] = turn
        # TwoTierEviction.step (or .compress on the flush turn)
        if turn != flush_turn and tot[0] > threshold:
            counters[C_GUARD] += 1
        # -- tier 1 ---------------------------------------------------------
        m = _live(seq, n_seq, posof, state, live)
        if n_seq > 2 * m + 64:  # the window order, compacted: its evicted entries dropped
            for a in range(m):
                seq[a] = live[a]
                posof[live[a]] = a
            n_seq = m
        # one pass over the window: mask_old_tool_results, drop_trivial_acks and
        # deactivate_stale_subscriptions each act on a kind of their own, so their
        # effects are those of the three loops the Python policy runs
        saved = 0
        dropped = 0
        for a in range(m):
            i = live[a]
            k = kind[i]
            if k == KIND_TOOL_RESULT:
                if not masked[i] and turn - last_ref[i] > ipar[I_MASK_AFTER]:
                    saved += tok[i] - mask_tok[i]
                    d = mask_tok[i] - tok[i]
                    zu[zone[i]] += d
                    tot[0] += d
                    tok[i] = mask_tok[i]
                    masked[i] = True
            elif k == KIND_ACK:
                if zone[i] != SYSTEM and not pinned[i] and tok[i] < ipar[I_TRIVIAL_ACK] and born[i] < turn:
                    _evict(i, turn, state, zone, tok, zu, tot, ev_turn, ev_item, cnt)
                    dropped += 1
            elif k == KIND_SUBSCRIPTION and active[i]:
                touched = last_ref[i] if last_ref[i] > born[i] else born[i]
                for b in range(sub_off[i], sub_off[i + 1]):
                    t = sub_turns[b]
                    if touched < t <= turn:
                        touched = t
                if turn - touched >= ipar[I_TTL]:
                    active[i] = False
                    zu[zone[i]] -= tok[i]
                    tot[0] -= tok[i]
                    tok[i] = 0
                    counters[C_DEACTIVATED] += 1
        if saved > 0:
            counters[C_MASKED] += 1
        counters[C_TRIVIAL] += dropped
        if dropped:
            m = _live(seq, n_seq, posof, state, live)
        _caps(zu, ipar, fpar, caps)
        for z in range(1, 4):  # evict_by_zone_policy
            if zu[z] <= caps[z]:
                continue
            pool = _pool(z, turn, live, m, zone, tok, pinned, masked, active, completed, relevance,
                         born, rank)
            for i in pool:
                if zu[z] <= caps[z]:
                    break
                _evict(i, turn, state, zone, tok, zu, tot, ev_turn, ev_item, cnt)
            m = _live(seq, n_seq, posof, state, live)

        if turn == flush_turn:
            under_pressure = tot[0] > evict_to_level
        else:
            under_pressure = tot[0] > threshold
        if under_pressure:
            # -- tier 2: the evictable items, scored (linear_scores, on_grid) --
            k = 0
            for a in range(m):
                i = live[a]
                if tok[i] > 0 and zone[i] != SYSTEM and not pinned[i]:
                    ev[k] = i
                    k += 1
            counters[C_SCORER_CALLS] += 1
            grouped = False
            for a in range(k):
                i = ev[a]
                age = turn - last_ref[i] if last_ref[i] < turn else 0
                row = const_table[const_row[i]]
                for c in range(n_features - 6):
                    x[c] = row[c]
                x[n_features - 6] = math.log1p(age)
                x[n_features - 5] = math.log1p(tok[i]) / log1000
                x[n_features - 4] = 1.0 if is_error[i] else 0.0
                x[n_features - 3] = 1.0 if masked[i] else 0.0
                x[n_features - 2] = 1.0 if completed[i] <= turn else 0.0
                x[n_features - 1] = relevance[i] - 0.5
                s = 0.0
                for c in range(n_features):
                    s += x[c] * weights[c]
                s = -min(max(s, -30.0), 30.0)
                p = 1.0 / (1.0 + math.exp(s))
                score_int[a] = int(np.rint(p * _GRID))
                score[a] = score_int[a] / _GRID
                if group[i] >= 0:
                    grouped = True
            # ranked_units: the ranking, keep-first
            key = np.empty(k, np.int64)
            for a in range(k):
                key[a] = ((np.int64(1) << 32) - score_int[a]) << 21 | rank[ev[a]]
            o = argsort2(np.zeros(k), key)
            rank_item = _grow(rank_item, n_rank + k)
            for a in range(k):
                rank_item[n_rank + a] = ev[o[a]]
            n_rank += k
            # the units, least relevant first: (best score, first member's ctx_id)
            for a in range(k):
                best[a] = score_int[a]
                nxt[a] = -1
            n_units = 0
            unit = np.empty(k, np.int64)
            if grouped:
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
            else:
                for a in range(k):
                    unit[a] = a
                n_units = k
            ukey = np.empty(n_units, np.int64)
            for u in range(n_units):
                ukey[u] = best[unit[u]] << 21 | rank[ev[unit[u]]]
            uo = argsort2(np.zeros(n_units), ukey)
            need = tot[0] - need_target
            n_chosen = 0
            for u in range(n_units):
                if need <= 0:
                    break
                a = unit[uo[u]]
                if nxt[a] < 0:
                    chosen[n_chosen] = a
                    n_chosen += 1
                    need -= tok[ev[a]]
                else:  # a group: its members by score, in window order on ties
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
                    mo = argsort2(np.zeros(mkey.shape[0]), mkey)
                    members = chosen[start:n_chosen].copy()
                    for c in range(n_chosen - start):
                        chosen[start + c] = members[mo[c]]
            counters[C_PROPOSALS] += 1
            # the candidates' logs
            c_item = _grow(c_item, n_cand + n_chosen)
            c_score = _grow(c_score, n_cand + n_chosen)
            c_kept = _grow(c_kept, n_cand + n_chosen)
            c_answer = _grow(c_answer, n_cand + n_chosen)
            c_grade = _grow(c_grade, n_cand + n_chosen)
            c_tok = _grow(c_tok, n_cand + n_chosen)
            c_masked = _grow(c_masked, n_cand + n_chosen)
            c_active = _grow(c_active, n_cand + n_chosen)
            c_last_ref = _grow(c_last_ref, n_cand + n_chosen)
            for c in range(n_chosen):
                a = chosen[c]
                i = ev[a]
                j = n_cand + c
                c_item[j] = i
                c_score[j] = score[a]
                c_kept[j] = False
                c_answer[j] = False
                c_grade[j] = 0
                c_tok[j] = tok[i]
                c_masked[j] = masked[i]
                c_active[j] = active[i]
                c_last_ref[j] = last_ref[i]
            sent = keepbacks and n_chosen > 0
            in_time = False
            if sent:
                # KeepBackBroker.resolve: the need oracle within the horizon ...
                lo = _after(fut_turn, turn)
                hi = _after(fut_turn, turn + horizon)
                for b in range(lo, hi):
                    i = fut_item[b]
                    if i >= 0 and fut_grade[b] > grade_of[i]:
                        grade_of[i] = fut_grade[b]
                # ... the simulated main model's answer (simulated_keepback) ...
                kat = flush_key(keys[K_KEEPBACK], turn)
                for c in range(n_chosen):
                    j = n_cand + c
                    i = c_item[j]
                    g = grade_of[i]
                    c_grade[j] = g
                    u = float(mix64(kat ^ name_key[i]) >> np.uint64(11)) * _UNIT
                    if g <= 0:
                        p = fpar[F_FALSE_KEEP]
                    else:
                        p = fpar[F_RECALL] * (0.5 if g == 1 else 1.0)
                    c_answer[j] = u < p
                for b in range(lo, hi):
                    i = fut_item[b]
                    if i >= 0:
                        grade_of[i] = 0
                # ... and its latency against the timeout
                bits = mix64(flush_key(keys[K_LATENCY], turn) ^ keys[K_EMPTY]) >> np.uint64(11)
                z = inv_cdf((float(bits) + 0.5) * _UNIT)
                latency = float(fpar[F_LATENCY_MEDIAN] * math.exp(fpar[F_LATENCY_SIGMA] * z))
                in_time = latency <= fpar[F_TIMEOUT]
                if not in_time:
                    counters[C_AUTO] += 1
                else:
                    # a kept-back item keeps its whole coherence group
                    for c in range(n_chosen):
                        j = n_cand + c
                        c_kept[j] = c_answer[j]
                        g = group[c_item[j]]
                        if c_answer[j] and g >= 0:
                            g_kept[g] = True
                    for c in range(n_chosen):
                        j = n_cand + c
                        g = group[c_item[j]]
                        if g >= 0 and g_kept[g]:
                            c_kept[j] = True
                    for c in range(n_chosen):
                        g = group[c_item[n_cand + c]]
                        if g >= 0:
                            g_kept[g] = False
            call_turn[n_calls] = turn
            call_rank_end[n_calls] = n_rank
            call_cand_end[n_calls] = n_cand + n_chosen
            call_sent[n_calls] = sent
            call_in_time[n_calls] = in_time
            n_calls += 1
            for c in range(n_chosen):
                j = n_cand + c
                if not c_kept[j]:
                    _evict(c_item[j], turn, state, zone, tok, zu, tot, ev_turn, ev_item, cnt)
            n_cand += n_chosen
            if tot[0] > ceiling:  # the hard ceiling: heuristics evict regardless
                counters[C_CEILING] += 1
                m = _live(seq, n_seq, posof, state, live)
                _caps(zu, ipar, fpar, caps)
                _evict_to_total(ceiling, turn, caps, live, m, state, zone, tok, pinned, masked, active,
                                completed, relevance, born, rank, zu, tot, ev_turn, ev_item, cnt)
        window_tokens[turn] = tot[0]

    m = _live(seq, n_seq, posof, state, live)
    return (counters, window_tokens, served, ev_turn[:cnt[0]], ev_item[:cnt[0]],
            call_turn[:n_calls], call_rank_end[:n_calls], call_cand_end[:n_calls],
            call_sent[:n_calls], call_in_time[:n_calls],
            rank_item[:n_rank], c_item[:n_cand], c_score[:n_cand],
            c_kept[:n_cand], c_answer[:n_cand], c_grade[:n_cand], c_tok[:n_cand],
            c_masked[:n_cand], c_active[:n_cand], c_last_ref[:n_cand], live[:m].copy(),
            masked, active)
