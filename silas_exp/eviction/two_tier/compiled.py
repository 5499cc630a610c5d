"""Two-tier eviction replayed by the compiled turn loop.

``replay`` stands in for ``replay(session, truth, strategy.step, ...)`` when
``TwoTierEviction.replay_compiled`` finds that it can (``compiled_ineligible``:
a scorer kind declared ``linear`` -- the control and the weights variant,
hand-set or fitted weights, no state that a flush changes -- and keep-backs,
if any, from a backend kind that ``draws_in_process``). It encodes the
session into arrays, runs ``silas_exp.eviction.two_tier.kernel.replay_kernel``
and decodes its logs into the same records the Python loop leaves:

- the ``ReplayStats`` (needs, window tokens, rankings, candidates,
  evictions, counters, the final window's text, the flush log);
- the feedback store's rows, one proposal and its feedback per flush;
- the keep-back calls in the LLM client's accounting.

Anything else (another scorer or strategy, a plug-in, a real or slowed main
model, a spend cap, a call log, exploration) is replayed in Python. Decisions are the same: the tests replay both ways and
compare every record. Scores are the one place where the two can differ at
all, exactly as two machines can (``silas_exp.scorers.grid``): the compiled
dot product and ``exp`` are not OpenBLAS's and numpy's, and a score within
float noise of a grid boundary may land one grid step apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

from silas_exp.context.budget import TokenBudget, ZoneShares
from silas_exp.context.replay import ENGINE_VARIABLE, compiled_enabled  # noqa: F401 (re-exported)
from silas_exp.context.stats import Flush, NeedEvent, Ranking, ReplayStats, tuple_maker
from silas_exp.context.window import LiveItem, mask_placeholder
from silas_exp.eviction.two_tier.encode import Encoded, encoded, forget_encodings
from silas_exp.feedback.flush import (
    KEEPBACK_SCHEMA,
    SYSTEM,
    KeepBackBroker,
    keepback_message,
)
from silas_exp.feedback.store import candidate_rows, proposal_row
from silas_exp.llm.base import Usage
from silas_exp.llm.simulated import _ANSWER_JSON, _schema_chars, key64
from silas_exp.schema.session import Session, SessionTruth

enabled = compiled_enabled  # SILAS_EXP_REPLAY=python turns the compiled loop off


def _kernel():
    """The loop's module, imported on first use: numba's import costs a job
    that never replays two-tier eviction ~0.4 s. A compile of it under way in
    the background (``ahead``) is waited for, then its machine code loaded."""
    from silas_exp.eviction.two_tier import ahead, kernel

    ahead.wait()
    return kernel

# the simulated main model's answer, counted in characters without encoding it:
# the encoder's layout (keys sorted, ", " and ": " separators, ASCII escapes) is
# the empty answer, plus per kept item its ctx_id twice, its reason and the
# characters around them, plus ", " twice between items
_NOTHING_KEPT = len(_ANSWER_JSON.encode({"exclude_ctx_ids": [], "reasons": []}))
_PER_KEPT = len(_ANSWER_JSON.encode({"exclude_ctx_ids": [""], "reasons": [{"ctx_id": "", "reason": ""}]})) \
    - _NOTHING_KEPT


def answer_chars(ctx_ids: list[str], reasons: list[str]) -> int:
    """``len(json.dumps(answer, sort_keys=True))`` of the keep-back answer
    keeping ``ctx_ids`` back with ``reasons`` (``simulated_keepback``'s)."""
    if not ctx_ids:
        return _NOTHING_KEPT
    return (_NOTHING_KEPT + len(ctx_ids) * (_PER_KEPT + 4) - 4
            + 2 * sum(map(len, map(encode_basestring_ascii, ctx_ids))) - 4 * len(ctx_ids)
            + sum(map(len, map(encode_basestring_ascii, reasons))) - 2 * len(reasons))


def warm_up() -> None:
    """Load the compiled loop's machine code (from numba's cache, or compiled on
    a machine's first run, ~40 s of CPU) by replaying a two-item session: a launcher
    that forks its workers after this hands them the loaded code, instead of
    every worker loading (or compiling) it again."""
    from silas_exp.context.budget import PROFILES
    from silas_exp.scorers.heuristic import HeuristicWeights

    if not enabled():
        return
    session = Session(session_id="warm-up", scope_id="warm-up", profile="coding", turns=2, items=[
        {"ctx_id": "a", "turn": 0, "zone": "chronicle", "kind": "user_message", "tokens": 50},
        {"ctx_id": "b", "turn": 1, "zone": "workspace", "kind": "plan", "tokens": 50}])
    budget = TokenBudget(total=60)
    loop = Loop(keepbacks=False, zone_cap_factor=1.25, budget=budget, shares=PROFILES["coding"],
                weights=HeuristicWeights().vector(), broker=None, scope_id="warm-up",
                scorer_model="heuristic")
    replay(session, SessionTruth(), budget, ReplayStats(), None, loop)
    forget_encodings()
    from silas_exp.scorers.prompt_inprocess import warm_up as prompt_warm_up

    prompt_warm_up()  # the prompt scorer's in-process answers, which the loop's pauses ask for


@dataclass(frozen=True)
class Loop:
    """What the loop takes from a ``TwoTierEviction``: its settings, budget and
    shares, its scorer's weights (and model id, for the feedback rows), and its
    keep-back broker (None without keep-backs). How Tier 2 scores:

    - ``LINEAR`` (default): ``weights``, fixed;
    - ``ONLINE``: ``weights`` refitted as ``OnlineScorer.observe`` refits them:
      ``online`` is the scorer (its ``settings`` and ``refit``);
    - ``EXTERNAL``: ``scores(items, tok, masked, active, last_ref, turn)`` of the
      evictable items (indices into the session's items, and their state) in
      grid steps, from Python: a scorer whose work is not the loop's."""

    keepbacks: bool
    zone_cap_factor: float
    budget: TokenBudget
    shares: ZoneShares
    weights: np.ndarray
    broker: KeepBackBroker | None
    scope_id: str
    scorer_model: str
    scoring: int = 0  # records.LINEAR
    online: Any = None
    scores: Callable[..., np.ndarray] | None = None


def replay(session: Session, truth: SessionTruth, budget: TokenBudget, stats: ReplayStats,
           flush_turn: int | None, loop: Loop,
           before_step: Callable[[int], None] | None = None) -> bool:
    """``replay(session, truth, step, budget, stats)`` where ``step`` is the
    strategy's ``step`` (its ``compress`` at ``flush_turn``), through the
    compiled loop: True, or False (nothing replayed, nothing recorded) when the
    session is not one the loop takes (a group named like an item, too many
    items or turns) or ``stats`` holds a replay already.

    ``before_step(turn)`` is called for every turn, each before the scorer
    changes: an ``ONLINE`` scorer's turns up to a refit just before it, and
    every turn after the last refit (or, for a scorer that never changes,
    every turn) once the loop is done."""
    if stats.turns or stats.needs:
        return False
    enc = encoded(session, truth, budget)
    if enc.groups_named_like_items or not enc.fits:
        return False
    if loop.scoring == _kernel().EXTERNAL and loop.scores is None:
        return False
    out, counted = _run(enc, params(loop, flush_turn, enc.n_groups), loop, before_step)
    _decode(enc, out, loop, budget, stats, counted)
    return True


def _run(enc: Encoded, p, loop: Loop, before_step: Callable[[int], None] | None):
    """The loop on ``enc``, its pauses answered (the scores of an ``EXTERNAL``
    scorer, an ``ONLINE`` scorer's refits), ``before_step`` called for each
    turn before the scorer is next asked or changes; its ``ReplayLog`` and
    the Tier-2 calls whose keep-backs are counted already. An ``EXTERNAL``
    scorer's calls are counted as it answers them: the keep-back calls before
    each are counted first, so the accounting adds them up in the Python
    loop's order."""
    K = _kernel()
    items, n = enc.item_arrays, len(enc.ids)
    weights = np.array(loop.weights, dtype=float)  # the loop's own: a refit writes into it
    st = K.new_state(items, enc.turn_arrays, len(weights))
    ev, w = st.scratch[0], st.w
    ext_scores = np.empty(n if loop.scoring == K.EXTERNAL else 0, np.int64)
    online = loop.online if loop.scoring == K.ONLINE else None
    size = online.settings.window if online is not None else 1
    ring_x = np.empty((size, len(weights)))
    ring_y = np.empty(size)
    io = np.zeros(16, np.int64)
    if online is not None:
        io[6], io[7] = online.settings.update_every, online.settings.min_records
    called = 0  # turns before_step was called for
    counted = 0  # Tier-2 calls whose keep-backs are counted
    broker = loop.broker if loop.scoring == K.EXTERNAL else None

    def count_keepbacks() -> int:
        if broker is None:
            return counted
        broker.llm.accounting.record_usages("keepback", broker.main.model_id,
                                            keepback_usages(enc, K.replay_log(st, io), counted))
        return int(io[12])

    def up_to(turn: int) -> int:
        if before_step is not None:
            for t in range(called, turn):
                before_step(t)
        return max(called, turn)

    while True:
        K.replay_kernel(items, enc.turn_arrays, p, weights, st, ext_scores, ring_x, ring_y, io)
        code, turn = io[0], int(io[1])
        if code == K.SCORES:  # before_step(turn) comes before the turn's step
            counted = count_keepbacks()
            called = up_to(turn + 1)
            rows = ev[:int(io[2])]
            ext_scores[:len(rows)] = loop.scores(rows, w.tok[rows], w.masked[rows], w.active[rows],
                                                 w.last_ref[rows], turn)
        elif code == K.REFIT:
            called = up_to(turn + 1)
            held, slot = int(io[3]), int(io[4])
            order = np.arange(slot - held, slot) % size  # oldest first, as the scorer's deque
            online.refit(ring_x[order], ring_y[order])
            weights[:] = online.weights
        else:
            counted = count_keepbacks()
            up_to(enc.turns)
            if online is not None:  # the scorer's window as the Python loop leaves it
                held, slot = int(io[3]), int(io[4])
                order = np.arange(slot - held, slot) % size
                online.restore(ring_x[order], ring_y[order], int(io[5]))
            return K.replay_log(st, io), counted


def params(loop: Loop, flush_turn: int | None, n_groups: int):
    """The kernel's ``Params`` of ``loop``."""
    b, shares, broker = loop.budget, loop.shares, loop.broker
    main = broker.s if loop.keepbacks else None
    keys = [np.uint64(0)] * 3
    if main is not None:
        keys = [np.uint64(key64(f"{broker.llm.backend.seed}/{broker.namespace}/keepback")),
                np.uint64(key64(f"{broker.seed}/{broker.namespace}/keepback.latency")),
                np.uint64(key64(""))]
    from silas_exp.eviction.two_tier.records import Params

    return Params(
        total=int(b.total), system_max=int(b.system_max), mask_after=int(b.observation_mask_after_turns),
        ttl=int(b.subscription_ttl_turns), trivial_ack=int(b.trivial_ack_tokens),
        keepbacks=bool(loop.keepbacks), horizon=int(main.horizon) if main else 0,
        flush_turn=-1 if flush_turn is None else int(flush_turn), n_groups=int(n_groups),
        threshold_pct=float(b.eviction_threshold_pct), ceiling_pct=float(b.scorer_threshold_pct),
        evict_to_pct=float(b.evict_to_pct),
        shares=np.array([shares.chronicle, shares.memory, shares.workspace], dtype=float),
        cap_factor=float(loop.zone_cap_factor), recall=float(main.recall) if main else 0.0,
        false_keep=float(main.false_keep) if main else 0.0,
        latency_median_ms=float(main.latency_median_ms) if main else 0.0,
        latency_sigma=float(main.latency_sigma) if main else 0.0,
        timeout_ms=float(main.eviction_feedback_timeout_ms) if main else 0.0,
        key_keepback=keys[0], key_latency=keys[1], key_empty=keys[2], scoring=int(loop.scoring))


def _decode(enc: Encoded, out, loop: Loop, budget: TokenBudget, stats: ReplayStats,
            counted: int = 0) -> None:
    served, call_turn, call_cand_end, call_in_time = out.served, out.call_turn, out.call_cand_end, out.call_in_time
    c = out.candidates
    c_item, c_score, c_kept, c_answer = c.item, c.score, c.kept, c.answer
    masked, active = out.masked, out.active
    ids, items = enc.ids, enc.items
    st = stats
    need_event = tuple_maker(NeedEvent)
    st.needs += map(need_event, zip(*enc.needs, served.tolist(), strict=True))
    st.window_tokens += out.window_tokens.tolist()
    st.evictions += list(zip(out.ev_turn.tolist(), map(ids.__getitem__, out.ev_item.tolist()), strict=True))
    from silas_exp.eviction.two_tier.records import COUNTERS

    for name, value in zip(COUNTERS, out.counters.tolist(), strict=True):
        setattr(st, name, value)
    cand_items = c_item.tolist()
    cand_ids = list(map(ids.__getitem__, cand_items))
    scores = c_score.tolist()
    kept = c_kept.tolist()
    turns_of = np.repeat(call_turn, np.diff(call_cand_end, prepend=0)).tolist()
    st.candidate_scores += scores
    st.candidate_excluded += kept
    st.candidate_turns += turns_of
    st.candidate_ids += cand_ids
    ranked = list(map(ids.__getitem__, out.rank_item.tolist()))
    rank_ends = out.call_rank_end.tolist()
    starts = [0, *rank_ends][:-1]
    call_turns = call_turn.tolist()
    st.rankings += [Ranking(t, tuple(ranked[lo:hi]))
                    for t, lo, hi in zip(call_turns, starts, rank_ends, strict=True)]
    st.turns = enc.turns
    retained = []
    for i in out.final.tolist():
        if not active[i]:
            continue
        it = items[i]
        retained.append(mask_placeholder(it.tool_name, it.status, enc.full[i]) if masked[i] else it.text)
    st.retained = [text for text in retained if text]
    cand_ends = call_cand_end.tolist()
    cand_starts = [0, *cand_ends][:-1]
    answer, in_time = c_answer.tolist(), call_in_time.tolist()
    if st.flush_log is not None:
        toks, mks, acts, refs = c.tok.tolist(), c.masked.tolist(), c.active.tolist(), c.last_ref.tolist()
        cap = budget.max_subscription_tokens
        for t, lo, hi, ok in zip(call_turns, cand_starts, cand_ends, in_time, strict=True):
            shots = []
            for j in range(lo, hi):
                shot = LiveItem.from_session(items[cand_items[j]], cap)
                shot._tokens, shot.masked, shot.active, shot.last_ref = toks[j], mks[j], acts[j], refs[j]
                shots.append(shot)
            st.flush_log.append(Flush(t, tuple(shots), tuple(ok and answer[j] for j in range(lo, hi))))
    if loop.keepbacks and out.call_sent.any():
        _record_flushes(enc, loop, out, counted)


def _sent(out, first: int = 0):
    """The flushes sent to the main model from Tier-2 call ``first`` on (a
    proposal's number is its call's), each one's first candidate and count."""
    calls = np.flatnonzero(out.call_sent[first:]) + first
    starts = np.concatenate(([0], out.call_cand_end[:-1]))[calls]
    return calls, starts, out.call_cand_end[calls] - starts


def keepback_usages(enc: Encoded, out, first: int = 0) -> list[Usage]:
    """The usage of each keep-back call from Tier-2 call ``first`` on, in call
    order (what the simulated backend counts of ``KeepBackBroker.resolve``'s
    request and ``simulated_keepback``'s answer): prompt characters (system,
    message, schema) and answer characters."""
    calls, starts, counts = _sent(out, first)
    if not len(calls):
        return []
    rows = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    c = out.candidates
    item, answered = c.item[rows], c.answer[rows]
    ids = enc.ids
    fixed_chars = len(SYSTEM) + len(keepback_message("", [])) + _schema_chars(KEEPBACK_SCHEMA)
    in_chars = (np.add.reduceat(enc.line_chars(item)[item], np.cumsum(counts) - counts)
                + fixed_chars + counts - 1).tolist()
    reasons = np.where(c.grade[rows] > 0, "still needed", "may need").tolist()
    said_rows = np.flatnonzero(answered).tolist()
    said_ids = list(map(ids.__getitem__, item[said_rows].tolist()))
    bounds = np.searchsorted(said_rows, np.cumsum(counts)).tolist()
    usages, lo = [], 0
    for chars, hi in zip(in_chars, bounds, strict=True):
        out_chars = answer_chars(said_ids[lo:hi], [reasons[j] for j in said_rows[lo:hi]]) \
            if hi > lo else _NOTHING_KEPT
        usages.append(Usage(input_tokens=math.ceil(chars / 3.5), output_tokens=math.ceil(out_chars / 3.5)))
        lo = hi
    return usages


def _record_flushes(enc: Encoded, loop: Loop, out, counted: int = 0) -> None:
    """Each flush the main model saw: its proposal and feedback as the store's
    rows, its call in the client's accounting (what ``KeepBackBroker.resolve``,
    ``feedback_record`` and the simulated backend leave), made column-wise;
    the calls before Tier-2 call ``counted`` are counted already."""
    call_turn, call_in_time = out.call_turn, out.call_in_time
    c = out.candidates
    c_item, c_score, c_answer, c_grade = c.item, c.score, c.answer, c.grade
    c_tok, c_masked, c_last_ref = c.tok, c.masked, c.last_ref
    broker = loop.broker
    scope, scorer_model = loop.scope_id, loop.scorer_model
    calls, _, counts = _sent(out)
    starts = np.concatenate(([0], out.call_cand_end[:-1]))[calls]
    rows = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    call_of_row = np.repeat(calls, counts)
    turn = call_turn[call_of_row]
    item = c_item[rows]
    answered = c_answer[rows]
    kept = answered & call_in_time[call_of_row]  # the main model's keep-backs, in time
    ids = enc.ids
    cand_ids = list(map(ids.__getitem__, item.tolist()))
    scores = c_score[rows].tolist()
    reasons = np.where(c_grade[rows] > 0, "still needed", "may need").tolist()
    bounds = np.cumsum(counts).tolist()
    answered_l, kept_l = answered.tolist(), kept.tolist()
    proposals: list[tuple] = []
    pids: list[str] = []
    lo = 0
    for number, t, hi, in_time in zip(calls.tolist(), call_turn[calls].tolist(), bounds,
                                      call_in_time[calls].tolist(), strict=True):
        said = [j for j in range(lo, hi) if answered_l[j]]
        pid = f"{scope}:{t}:{number}"
        pids.append(pid)
        if in_time:
            proposals.append(proposal_row(pid, scope, t, scorer_model, datetime.now(UTC), "llm",
                                          [cand_ids[j] for j in range(lo, hi) if not kept_l[j]],
                                          [(cand_ids[j], scores[j], reasons[j]) for j in said]))
        else:  # no answer in time: every candidate evicted
            proposals.append(proposal_row(pid, scope, t, scorer_model, datetime.now(UTC), "auto",
                                          cand_ids[lo:hi], ()))
        lo = hi
    broker.llm.accounting.record_usages("keepback", broker.main.model_id,
                                        keepback_usages(enc, out, counted))
    col = enc.columns
    broker.store.record_rows(proposals, candidate_rows(
        np.repeat(np.array(pids, dtype=object), counts).tolist(),
        (np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)).tolist(),
        cand_ids, col["zone"][item].tolist(), col["kind"][item].tolist(), scores,
        np.maximum(turn - c_last_ref[rows], 0).tolist(), c_tok[rows].tolist(),
        col["status"][item].tolist(), c_masked[rows].tolist(),
        (enc.item_arrays.completed[item] <= turn).tolist(), col["relevance"][item].tolist(), kept_l))
