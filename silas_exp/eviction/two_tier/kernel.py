"""The two-tier replay's turn loop, compiled with numba: the same decisions as
``silas_exp.context.replay.replay`` stepping ``TwoTierEviction`` with a
linear scorer and the simulated main model's keep-backs, on arrays.

``compiled.py`` encodes a session into the records of ``kernel_base.py``,
runs ``replay_kernel`` and decodes the ``ReplayLog`` it returns into the
records the Python loop leaves (``ReplayStats``, feedback-store rows,
model-call accounting). The rules live in ``kernel_tier1.py`` and
``kernel_tier2.py``, each function beside the name of the Python function it
mirrors; a change to one is a change to both
(``tests/eviction/test_compiled_pairs.py`` holds each pair to the same
result, ``tests/context/test_compiled_replay.py`` whole replays).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from silas_exp.eviction.two_tier.kernel_base import (
    C_GUARD,
    C_RERETRIEVALS,
    C_RERETRIEVED_TOKENS,
    EVICTED,
    IN_WINDOW,
    UNBORN,
    ReplayLog,
    head,
    new_proposal,
    new_window,
)
from silas_exp.eviction.two_tier.kernel_tier1 import add, live_items, restore, retrieve, tier1
from silas_exp.eviction.two_tier.kernel_tier2 import tier2


@njit(cache=True)
def arrive(w, items, turns, turn):
    """``replay``: the turn's new items enter the window."""
    for a in range(turns.arr_off[turn], turns.arr_off[turn + 1]):
        add(w, items, turns.arr_item[a])


@njit(cache=True)
def serve_needs(w, items, turns, turn, served):
    """``replay``: the turn's needs, each served if its item is in the window,
    unmasked and active, else retrieved from memory or restored (a re-retrieval)."""
    for a in range(turns.need_off[turn], turns.need_off[turn + 1]):
        i = turns.need_item[a]
        if i < 0 or w.state[i] == UNBORN:
            continue
        ok = w.state[i] == IN_WINDOW and not w.masked[i] and w.active[i]
        served[a] = ok
        if not ok:
            if w.state[i] == EVICTED:
                retrieve(w, items, i)
            else:
                restore(w, items, i)
            w.counters[C_RERETRIEVALS] += 1
            w.counters[C_RERETRIEVED_TOKENS] += items.full[i]
        w.last_ref[i] = turn


@njit(cache=True)
def refresh_subscriptions(w, items, turns, turn):
    """``replay``: the subscriptions refreshed this turn reactivate."""
    for a in range(turns.refresh_off[turn], turns.refresh_off[turn + 1]):
        i = turns.refresh_item[a]
        if w.state[i] == IN_WINDOW:
            restore(w, items, i)
            w.last_ref[i] = turn


@njit(cache=True)
def step(w, items, turns, params, turn, weights, scratch, rank_item, n_rank, cands, n_cand):
    """``TwoTierEviction.step`` (``.compress`` at the flush turn): Tier 1, then
    Tier 2 when usage is over the threshold (over ``evict_to_pct`` at the flush
    turn). Returns ``tier2``'s values, with ``k`` -1 when Tier 2 did not run."""
    threshold = params.threshold_pct * params.total
    flush = turn == params.flush_turn
    if not flush and w.tot[0] > threshold:  # the budget guard: this turn is under pressure
        w.counters[C_GUARD] += 1
    m = tier1(w, items, params, turn)
    if w.tot[0] > (params.evict_to_pct * params.total if flush else threshold):
        return tier2(w, items, turns, params, turn, m, weights, scratch, rank_item, n_rank, cands,
                     n_cand)
    return rank_item, -1, cands, 0, False, False


@njit(cache=True)
def replay_kernel(items, turns, params, weights):
    """``replay(session, truth, strategy.step, budget, stats)``: one case's
    replay on arrays. Returns its ``ReplayLog``."""
    n = items.born.shape[0]
    n_turns = turns.arr_off.shape[0] - 1
    n_needs = turns.need_item.shape[0]
    w = new_window(items.full, items.born, n + n_needs + 1)  # insertions: arrivals, re-retrievals
    window_tokens = np.zeros(n_turns, np.int64)
    served = np.zeros(n_needs, np.bool_)
    # per Tier-2 call (at most one a turn): turn, end of its ranking, end of its
    # candidates, sent to the main model, resolved by it in time
    call_turn = np.empty(n_turns, np.int64)
    call_rank_end = np.empty(n_turns, np.int64)
    call_cand_end = np.empty(n_turns, np.int64)
    call_sent = np.empty(n_turns, np.bool_)
    call_in_time = np.empty(n_turns, np.bool_)
    n_calls = 0
    rank_item = np.empty(64, np.int64)
    n_rank = 0
    cands = new_proposal(64)
    n_cand = 0
    groups = max(params.n_groups, 1)
    scratch = (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
               np.empty(n, np.int64), np.zeros(n, np.int64), np.full(groups, -1, np.int64),
               np.full(groups, -1, np.int64), np.zeros(groups, np.bool_), np.empty(weights.shape[0]))
    for turn in range(n_turns):
        arrive(w, items, turns, turn)
        serve_needs(w, items, turns, turn, served)
        refresh_subscriptions(w, items, turns, turn)
        rank_item, k, cands, n_chosen, sent, in_time = step(
            w, items, turns, params, turn, weights, scratch, rank_item, n_rank, cands, n_cand)
        if k >= 0:
            n_rank += k
            n_cand += n_chosen
            call_turn[n_calls] = turn
            call_rank_end[n_calls] = n_rank
            call_cand_end[n_calls] = n_cand
            call_sent[n_calls] = sent
            call_in_time[n_calls] = in_time
            n_calls += 1
        window_tokens[turn] = w.tot[0]
    m = live_items(w)
    n_ev = w.n_ev[0]
    return ReplayLog(w.counters, window_tokens, served, w.ev_turn[:n_ev], w.ev_item[:n_ev],
                     call_turn[:n_calls], call_rank_end[:n_calls], call_cand_end[:n_calls],
                     call_sent[:n_calls], call_in_time[:n_calls], rank_item[:n_rank],
                     head(cands, n_cand), w.live[:m].copy(), w.masked, w.active)

