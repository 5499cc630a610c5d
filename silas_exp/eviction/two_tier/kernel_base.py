"""What the compiled two-tier loop is made of besides its rules: the codes
and records it works on, and the primitives it shares (the simulated model's
keyed draws, the inverse normal CDF, one sort), compiled with numba.

Records are named tuples of arrays and scalars (numba passes them whole):

- ``Items``: per item (in arrival order) what the session fixes: turn born,
  zone and kind codes, tokens, masked tokens, pinned, group, ctx_id rank,
  relevance, completion turn, error status, feature-table row, name key, and
  a subscription's refresh turns (flat, with offsets);
- ``Turns``: per turn, as offsets into flat lists, the items that arrive,
  the needs replayed and the subscriptions refreshed; and every reference
  by turn (the need oracle's look-ahead);
- ``Params``: the budget, shares and strategy settings, the main model's
  keep-back settings and the keys of its draws;
- ``WindowState``: what a replay changes (the window order, each item's
  state, tokens, masked, active, last reference; zone and total usage; the
  counters and the evictions);
- ``Proposal``: one Tier-2 call's candidates as they were when proposed;
- ``ReplayLog``: what the loop returns for ``compiled.py`` to decode.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

# zone codes (ContextZone order) and the kinds Tier 1 treats apart
SYSTEM, CHRONICLE, MEMORY, WORKSPACE = 0, 1, 2, 3
KIND_OTHER, KIND_TOOL_RESULT, KIND_ACK, KIND_SUBSCRIPTION = 0, 1, 2, 3
NOT_COMPLETED = 1 << 62
# item states
UNBORN, IN_WINDOW, EVICTED = 0, 1, 2
# counters, by position (ReplayStats fields of the same names)
(C_GUARD, C_PROPOSALS, C_SCORER_CALLS, C_AUTO, C_CEILING, C_RERETRIEVALS, C_RERETRIEVED_TOKENS,
 C_MASKED, C_TRIVIAL, C_DEACTIVATED) = range(10)
N_COUNTERS = 10
COUNTERS = ("guard_triggers", "proposals", "scorer_calls", "auto_resolved", "hard_ceiling_overrides",
            "re_retrievals", "re_retrieved_tokens", "masked", "trivial_dropped",
            "subscriptions_deactivated")


class Items(NamedTuple):
    born: np.ndarray
    zone: np.ndarray
    kind: np.ndarray
    full: np.ndarray
    mask_tok: np.ndarray
    pinned: np.ndarray
    group: np.ndarray
    rank: np.ndarray
    relevance: np.ndarray
    completed: np.ndarray
    is_error: np.ndarray
    const_row: np.ndarray
    const_table: np.ndarray
    name_key: np.ndarray
    sub_off: np.ndarray
    sub_turns: np.ndarray


class Turns(NamedTuple):
    arr_off: np.ndarray
    arr_item: np.ndarray
    need_off: np.ndarray
    need_item: np.ndarray
    refresh_off: np.ndarray
    refresh_item: np.ndarray
    fut_turn: np.ndarray
    fut_item: np.ndarray
    fut_grade: np.ndarray


class Params(NamedTuple):
    total: int
    system_max: int
    mask_after: int
    ttl: int
    trivial_ack: int
    keepbacks: bool
    horizon: int
    flush_turn: int  # -1: none
    n_groups: int
    threshold_pct: float
    ceiling_pct: float
    evict_to_pct: float
    shares: np.ndarray  # chronicle, memory, workspace
    cap_factor: float
    recall: float
    false_keep: float
    latency_median_ms: float
    latency_sigma: float
    timeout_ms: float
    key_keepback: np.uint64
    key_latency: np.uint64
    key_empty: np.uint64  # key64(""): the latency draw's name


class WindowState(NamedTuple):
    state: np.ndarray
    tok: np.ndarray
    masked: np.ndarray
    active: np.ndarray
    last_ref: np.ndarray
    posof: np.ndarray
    seq: np.ndarray
    n_seq: np.ndarray  # one value: the window order's length
    zu: np.ndarray  # usage per zone
    tot: np.ndarray  # one value: total usage
    caps: np.ndarray
    live: np.ndarray
    counters: np.ndarray
    ev_turn: np.ndarray
    ev_item: np.ndarray
    n_ev: np.ndarray  # one value


class Proposal(NamedTuple):
    item: np.ndarray
    score: np.ndarray
    kept: np.ndarray  # kept back, after groups
    answer: np.ndarray  # the main model's own answer, in time or not
    grade: np.ndarray  # the grade needed within the horizon
    tok: np.ndarray
    masked: np.ndarray
    active: np.ndarray
    last_ref: np.ndarray


class ReplayLog(NamedTuple):
    counters: np.ndarray
    window_tokens: np.ndarray
    served: np.ndarray
    ev_turn: np.ndarray
    ev_item: np.ndarray
    call_turn: np.ndarray
    call_rank_end: np.ndarray
    call_cand_end: np.ndarray
    call_sent: np.ndarray
    call_in_time: np.ndarray
    rank_item: np.ndarray
    candidates: Proposal
    final: np.ndarray
    masked: np.ndarray
    active: np.ndarray


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


