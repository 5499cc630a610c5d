"""The codes and records of the compiled two-tier loop (``kernel.py``),
plain Python: named tuples of arrays and scalars that numba passes whole.

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
- ``Proposal``: Tier-2 candidates as they were when proposed;
- ``ReplayLog``: what the loop returns for ``compiled.py`` to decode.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# zone codes (ContextZone order) and the kinds Tier 1 treats apart
SYSTEM, CHRONICLE, MEMORY, WORKSPACE = 0, 1, 2, 3
KIND_OTHER, KIND_TOOL_RESULT, KIND_ACK, KIND_SUBSCRIPTION = 0, 1, 2, 3
NOT_COMPLETED = 1 << 62
# item states
UNBORN, IN_WINDOW, EVICTED = 0, 1, 2
# how Tier 2 scores (Params.scoring): linear weights, refitted online (OnlineScorer),
# or scores from Python at a pause; why the loop yields (io[0])
LINEAR, ONLINE, EXTERNAL = 0, 1, 2
END, SCORES, REFIT = 0, 1, 2
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
    scoring: int  # LINEAR, ONLINE or EXTERNAL


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


class LoopState(NamedTuple):
    """What a replay keeps between the calls of a loop that pauses (``replay_kernel``):
    the window, the per-turn and per-call logs, the rankings and candidates
    (room for all of them: ``new_state``) and Tier 2's scratch arrays."""

    w: WindowState
    window_tokens: np.ndarray
    served: np.ndarray
    call_turn: np.ndarray
    call_rank_end: np.ndarray
    call_cand_end: np.ndarray
    call_sent: np.ndarray
    call_in_time: np.ndarray
    rank_item: np.ndarray
    cands: Proposal
    scratch: tuple
