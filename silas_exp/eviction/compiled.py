"""Two-tier eviction replayed by the compiled turn loop.

``replay_two_tier`` stands in for ``replay(session, truth, strategy.step, ...)``
when the strategy is the built-in two-tier one with a linear scorer (the
control and the weights variant: hand-set or fitted weights, no state that a
flush changes) and the keep-backs, if any, come from the simulated main model
answering inline. It encodes the session into arrays, runs
``silas_exp.context.kernel.replay_kernel`` and decodes its logs into the same
records the Python loop leaves:

- the ``ReplayStats`` (needs, window tokens, rankings, candidates,
  evictions, counters, the final window's text, the flush log);
- the feedback store's rows, one proposal and its feedback per flush;
- the keep-back calls in the LLM client's accounting.

Anything else (another scorer or strategy, a plug-in, a real or slowed main
model, a spend cap, a call log, exploration) returns ``None`` and the caller
replays in Python. Decisions are the same: the tests replay both ways and
compare every record. Scores are the one place where the two can differ at
all, exactly as two machines can (``silas_exp.scorers.grid``): the compiled
dot product and ``exp`` are not OpenBLAS's and numpy's, and a score within
float noise of a grid boundary may land one grid step apart.
"""

from __future__ import annotations

import math
import os
import weakref
from datetime import UTC, datetime

import numpy as np

from silas_exp.context.budget import TokenBudget, count_tokens
from silas_exp.context.features import _CONSTANT_ROW, _CONSTANT_TABLE, FEATURES
from silas_exp.context.stats import Flush, NeedEvent, Ranking, ReplayStats, tuple_maker
from silas_exp.context.window import MASK_TEMPLATE, LiveItem, one_line
from silas_exp.eviction.two_tier import TwoTierEviction
from silas_exp.feedback.flush import (
    KEEPBACK_SCHEMA,
    SYSTEM,
    KeepBackBroker,
    feedback_record,
    keepback_line,
    keepback_message,
)
from silas_exp.feedback.store import CandidateState, DiscardingStore, FeedbackStore
from silas_exp.llm import calls
from silas_exp.llm.base import Usage
from silas_exp.llm.simulated import _ANSWER_JSON, SimulatedBackend, _schema_chars, key64
from silas_exp.schema.eviction import CandidateRecord, ContextZone, ProposalRecord
from silas_exp.schema.session import Session, SessionTruth
from silas_exp.scorers.base import CheckedScorer
from silas_exp.scorers.heuristic import LinearScorer

ENGINE_VARIABLE = "SILAS_EXP_REPLAY"  # "python": every replay in Python (default: auto)


def enabled() -> bool:
    """Whether replays may take the compiled loop (``SILAS_EXP_REPLAY=python`` turns it off)."""
    return os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() != "python"


def _kernel():
    """The kernel module, imported on first use: numba's import costs a job
    that never replays two-tier eviction ~0.4 s."""
    from silas_exp.context import kernel

    return kernel
# what the simulated main model answers when it keeps nothing back, and its reasons
_NOTHING_KEPT = _ANSWER_JSON.encode({"exclude_ctx_ids": [], "reasons": []})
# a prompt line's characters besides its ctx_id and snippet (a score in [0, 1] is 4 characters)
_LINE_CHARS = len(keepback_line("", 0.0, ""))


def ineligible(strategy) -> str | None:
    """Why the compiled loop cannot replay ``strategy`` (None: it can)."""
    if type(strategy) is not TwoTierEviction:
        return "not the built-in two-tier strategy"
    if strategy.s.explore_rate > 0:
        return "exploration draws from the strategy's own generator"
    scorer = strategy.scorer
    inner = scorer.inner if isinstance(scorer, CheckedScorer) else scorer
    if type(inner) is not LinearScorer:
        return f"scorer {type(inner).__name__} is not a stateless linear scorer"
    w = np.asarray(inner.weights, dtype=float)
    if w.shape != (len(FEATURES),) or not np.all(np.isfinite(w)):
        return "scorer weights are not one finite weight per feature"
    if strategy.s.keepbacks:
        broker = strategy.broker
        if type(broker) is not KeepBackBroker or broker.s.backend != "simulated":
            return "keep-backs from a main model that is not the simulated one"
        llm = broker.llm
        backend = getattr(llm, "backend", None)
        if type(backend) is not SimulatedBackend or backend.latency_ms:
            return "keep-back answers from a backend that is not the inline simulated one"
        if llm.settings.max_usd is not None or llm.cache is not None or llm.ledger is not None:
            return "a spend cap or response cache sees every call"
        if calls.active():
            return "a call log records every call"
        if type(broker.store) not in (FeedbackStore, DiscardingStore):
            return "a feedback store of another kind"
        if broker._last_flush != (-1, 0):
            return "a broker that has resolved flushes already"
    return None


class _Encoded:
    """The arrays of one session that do not depend on the run's settings,
    built column by column (a comprehension per field: the encoding is the
    compiled replay's main cost in Python)."""

    def __init__(self, session: Session, truth: SessionTruth, max_subscription_tokens: int) -> None:
        K = _kernel()
        zone_code = {ContextZone.SYSTEM: K.SYSTEM, ContextZone.CHRONICLE: K.CHRONICLE,
                     ContextZone.MEMORY: K.MEMORY, ContextZone.WORKSPACE: K.WORKSPACE}
        kind_code = {"tool_result": K.KIND_TOOL_RESULT, "ack": K.KIND_ACK,
                     "subscription": K.KIND_SUBSCRIPTION}
        items = sorted(session.items, key=lambda it: it.turn)  # arrival order (stable)
        self.items = items
        n, turns = len(items), session.turns
        src = [it.__dict__ for it in items]  # pydantic keeps the fields there
        self.ids = ids = [d["ctx_id"] for d in src]
        self.index = index = dict(zip(ids, range(n), strict=True))
        kinds = [d["kind"] for d in src]
        zones = [d["zone"] for d in src]
        statuses = [d["status"] for d in src]
        # LiveItem.from_session's tokens: given, else counted; a subscription's capped
        full = [count_tokens(d["text"]) if d["tokens"] is None else d["tokens"] for d in src]
        full = [min(t, max_subscription_tokens) if k == "subscription" else t
                for t, k in zip(full, kinds, strict=True)]
        self.full = full
        # a tool result's tokens once masked (LiveItem.mask); only tool results are masked
        mask_tok = [count_tokens(MASK_TEMPLATE.format(tool=d["tool_name"] or "tool",
                                                      status=d["status"] or "ok", tokens=t))
                    if k == "tool_result" else 0 for d, t, k in zip(src, full, kinds, strict=True)]
        groups: dict[str, int] = {}
        group = [groups.setdefault(g, len(groups)) if (g := d["group"]) else -1 for d in src]
        ranks = dict(zip(sorted(ids), range(n), strict=True))
        relevance = [d["relevance"] for d in src]
        completed = [d["completed_turn"] for d in src]
        a = self.a = {
            "born": np.array([d["turn"] for d in src], dtype=np.int64),
            "zone": np.array([zone_code[z] for z in zones], dtype=np.int64),
            "kind": np.array([kind_code.get(k, K.KIND_OTHER) for k in kinds], dtype=np.int64),
            "full": np.array(full, dtype=np.int64),
            "mask_tok": np.array(mask_tok, dtype=np.int64),
            "pinned": np.array([d["pinned"] for d in src], dtype=np.bool_),
            "group": np.array(group, dtype=np.int64),
            "rank": np.array([ranks[c] for c in ids], dtype=np.int64),
            "relevance": np.array([0.5 if r is None else r for r in relevance], dtype=float),
            "completed": np.array([K.NOT_COMPLETED if c is None else c for c in completed],
                                  dtype=np.int64),
            "is_error": np.array([st == "error" for st in statuses], dtype=np.bool_),
            "const_row": np.array([_CONSTANT_ROW[z][k] for z, k in zip(zones, kinds, strict=True)],
                                  dtype=np.int64),
            "name_key": np.array([key64(c) for c in ids], dtype=np.uint64),
            "const_table": np.ascontiguousarray(_CONSTANT_TABLE),
        }
        self.groups_named_like_items = any(g in index for g in groups)
        self.n_groups = len(groups)
        # a subscription's refresh turns (flat, with offsets), and the subscriptions
        # each turn refreshes, in session order (the Python loop's dict order)
        refreshed = [d["refreshed_turns"] for d in src]
        a["sub_off"] = np.cumsum([0, *map(len, refreshed)]).astype(np.int64)
        a["sub_turns"] = np.array([t for ts in refreshed for t in ts], dtype=np.int64)
        refresh: dict[int, dict[int, None]] = {}
        for it in session.items:
            if it.kind == "subscription":
                for t in it.refreshed_turns:
                    refresh.setdefault(t, {})[index[it.ctx_id]] = None
        flat = [(t, i) for t in sorted(refresh) if 0 <= t < turns for i in refresh[t]]
        a["refresh_off"] = np.searchsorted(np.array([t for t, _ in flat], dtype=np.int64),
                                           np.arange(turns + 1)).astype(np.int64)
        a["refresh_item"] = np.array([i for _, i in flat], dtype=np.int64)
        # arrivals, and the needs of each turn in the truth's order, as offsets
        a["arr_off"] = np.searchsorted(a["born"], np.arange(turns + 1)).astype(np.int64)
        a["arr_item"] = np.arange(n, dtype=np.int64)
        refs = [(r.turn, r.ctx_id, r.grade) for r in truth.references]
        self.needs = now = sorted([r for r in refs if r[0] < turns], key=lambda r: r[0])
        a["need_off"] = np.searchsorted(np.array([t for t, _, _ in now], dtype=np.int64),
                                        np.arange(turns + 1)).astype(np.int64)
        a["need_item"] = np.array([index.get(c, -1) for _, c, _ in now], dtype=np.int64)
        # every reference by turn: the need oracle's look-ahead
        fut = sorted(refs, key=lambda r: r[0])
        a["fut_turn"] = np.array([t for t, _, _ in fut], dtype=np.int64)
        a["fut_item"] = np.array([index.get(c, -1) for _, c, _ in fut], dtype=np.int64)
        a["fut_grade"] = np.array([g for _, _, g in fut], dtype=np.int64)
        self.turns = turns
        self.fits = n < (1 << 21) and turns < (1 << 20)
        self._line_chars: dict[int, int] = {}

    def line_chars(self, i: int) -> int:
        """The characters of item ``i``'s line in a keep-back prompt (``keepback_line``)."""
        chars = self._line_chars.get(i)
        if chars is None:
            it = self.items[i]
            chars = self._line_chars[i] = len(it.ctx_id) + _LINE_CHARS + len(one_line(it.text[:160]))
        return chars


# encodings kept per session object while it lives (a session is replayed by
# the control and every variant of every repeat), by id: pydantic models are
# not hashable; the weak references tell a live entry from a reused id
_ENCODED: dict[int, tuple] = {}


def _encoded(session: Session, truth: SessionTruth, budget: TokenBudget) -> _Encoded:
    cap = budget.max_subscription_tokens
    held = _ENCODED.get(id(session))
    if held is not None and held[0]() is session and held[1]() is truth and held[2] == cap:
        return held[3]
    enc = _Encoded(session, truth, cap)
    if len(_ENCODED) >= 256:  # drop the entries of sessions gone
        for k in [k for k, v in _ENCODED.items() if v[0]() is None]:
            del _ENCODED[k]
    _ENCODED[id(session)] = (weakref.ref(session), weakref.ref(truth), cap, enc)
    return enc


def forget_encodings() -> None:
    """Drop every kept session encoding (a benchmark's pass starts cold)."""
    _ENCODED.clear()


def replay_two_tier(session: Session, truth: SessionTruth, strategy: TwoTierEviction,
                    budget: TokenBudget, stats: ReplayStats, flush_turn: int | None = None
                    ) -> ReplayStats | None:
    """``replay(session, truth, step, budget, stats)`` where ``step`` is
    ``strategy.step`` (``strategy.compress`` at ``flush_turn``), through the
    compiled loop; None (nothing replayed, nothing recorded) when it cannot
    stand in (``ineligible``)."""
    if not enabled() or ineligible(strategy) is not None or stats.turns or stats.needs:
        return None
    enc = _encoded(session, truth, budget)
    if enc.groups_named_like_items or not enc.fits:
        return None
    s, b, shares = strategy.s, strategy.budget, strategy.shares
    broker = strategy.broker
    main = broker.s if s.keepbacks else None
    ipar = np.array([b.total, b.system_max, b.observation_mask_after_turns, b.subscription_ttl_turns,
                     b.trivial_ack_tokens, int(s.keepbacks), main.horizon if main else 0,
                     -1 if flush_turn is None else flush_turn], dtype=np.int64)
    fpar = np.array([b.eviction_threshold_pct, b.scorer_threshold_pct, b.evict_to_pct,
                     shares.chronicle, shares.memory, shares.workspace, s.zone_cap_factor,
                     main.recall if main else 0.0, main.false_keep if main else 0.0,
                     main.latency_median_ms if main else 0.0, main.latency_sigma if main else 0.0,
                     main.timeout_ms if main else 0.0])
    keys = np.zeros(3, dtype=np.uint64)
    if main is not None:
        keys[:] = [key64(f"{broker.llm.backend.seed}/{broker.namespace}/keepback"),
                   key64(f"{broker.seed}/{broker.namespace}/keepback.latency"), key64("")]
    scorer = strategy.scorer
    weights = np.ascontiguousarray(np.asarray(
        (scorer.inner if isinstance(scorer, CheckedScorer) else scorer).weights, dtype=float))
    a = enc.a
    out = _kernel().replay_kernel(
        enc.turns, a["arr_off"], a["arr_item"], a["need_off"], a["need_item"], a["refresh_off"],
        a["refresh_item"], a["born"], a["zone"], a["kind"], a["full"], a["mask_tok"], a["pinned"],
        a["group"], enc.n_groups, a["rank"], a["relevance"], a["completed"], a["is_error"],
        a["const_row"], a["const_table"], weights, a["name_key"], a["sub_off"],
        a["sub_turns"], a["fut_turn"], a["fut_item"], a["fut_grade"], ipar, fpar, keys)
    _decode(enc, out, strategy, budget, stats)
    return stats


def _decode(enc: _Encoded, out, strategy: TwoTierEviction, budget: TokenBudget,
            stats: ReplayStats) -> None:
    (counters, window_tokens, served, ev_turn, ev_item, call_turn, call_rank_end, call_cand_end,
     call_sent, call_in_time, call_latency, rank_item, c_item, c_score, c_kept,
     c_answer, c_grade, c_tok, c_masked, c_active, c_last_ref, final, tok, masked, active,
     last_ref) = out
    ids, items = enc.ids, enc.items
    st = stats
    need_event = tuple_maker(NeedEvent)
    st.needs += [need_event((t, cid, g, bool(ok)))
                 for (t, cid, g), ok in zip(enc.needs, served.tolist(), strict=True)]
    st.window_tokens += window_tokens.tolist()
    st.evictions += list(zip(ev_turn.tolist(), map(ids.__getitem__, ev_item.tolist()), strict=True))
    (st.guard_triggers, st.proposals, st.scorer_calls, st.auto_resolved, st.hard_ceiling_overrides,
     st.re_retrievals, st.re_retrieved_tokens, st.masked, st.trivial_dropped,
     st.subscriptions_deactivated) = counters.tolist()
    cand_ids = list(map(ids.__getitem__, c_item.tolist()))
    scores = c_score.tolist()
    kept = c_kept.tolist()
    turns_of = np.repeat(call_turn, np.diff(call_cand_end, prepend=0)).tolist()
    st.candidate_scores += scores
    st.candidate_excluded += kept
    st.candidate_turns += turns_of
    st.candidate_ids += cand_ids
    ranked = list(map(ids.__getitem__, rank_item.tolist()))
    rank_ends = call_rank_end.tolist()
    starts = [0, *rank_ends[:-1]]
    call_turns = call_turn.tolist()
    st.rankings += [Ranking(t, tuple(ranked[lo:hi]))
                    for t, lo, hi in zip(call_turns, starts, rank_ends, strict=True)]
    st.turns = enc.turns
    retained = []
    for i in final.tolist():
        if not active[i]:
            continue
        it = items[i]
        retained.append(MASK_TEMPLATE.format(tool=it.tool_name or "tool", status=it.status or "ok",
                                             tokens=enc.full[i]) if masked[i] else it.text)
    st.retained = [text for text in retained if text]
    cand_ends = call_cand_end.tolist()
    cand_starts = [0, *cand_ends[:-1]]
    answer, in_time = c_answer.tolist(), call_in_time.tolist()
    if st.flush_log is not None:
        toks, mks, acts, refs = c_tok.tolist(), c_masked.tolist(), c_active.tolist(), c_last_ref.tolist()
        cap = budget.max_subscription_tokens
        for t, lo, hi, ok in zip(call_turns, cand_starts, cand_ends, in_time, strict=True):
            shots = []
            for j in range(lo, hi):
                shot = LiveItem.from_session(items[c_item[j]], cap)
                shot._tokens, shot.masked, shot.active, shot.last_ref = toks[j], mks[j], acts[j], refs[j]
                shots.append(shot)
            st.flush_log.append(Flush(t, tuple(shots), tuple(ok and answer[j] for j in range(lo, hi))))
    if strategy.s.keepbacks:
        _record_flushes(enc, strategy, call_turns, cand_starts, cand_ends, call_sent.tolist(), in_time,
                        cand_ids, scores, answer, c_grade.tolist(), c_item.tolist(),
                        c_tok.tolist(), c_masked.tolist(), c_last_ref.tolist())


def _record_flushes(enc, strategy, call_turns, cand_starts, cand_ends, sent, in_time,
                    cand_ids, scores, answer, grades, c_items, toks, mks, refs) -> None:
    """Each flush the main model saw: its proposal and feedback into the store,
    its call into the client's accounting (as ``KeepBackBroker.resolve`` and
    the simulated backend leave them)."""
    broker = strategy.broker
    store, accounting, model = broker.store, broker.llm.accounting, broker.s.model_id
    scope, scorer_model = strategy.scope_id, strategy.scorer.model_id
    fixed_chars = (len(SYSTEM) + len(keepback_message("", []))
                   + _schema_chars(KEEPBACK_SCHEMA))
    make_record, make_state = tuple_maker(CandidateRecord), tuple_maker(CandidateState)
    nothing_tokens = math.ceil(len(_NOTHING_KEPT) / 3.5)
    items, line_chars = enc.items, enc.line_chars
    for number, (t, lo, hi) in enumerate(zip(call_turns, cand_starts, cand_ends, strict=True)):
        if not sent[number]:
            continue
        kept_ids = [cand_ids[j] for j in range(lo, hi) if answer[j]]
        if kept_ids:
            data = {"exclude_ctx_ids": kept_ids,
                    "reasons": [{"ctx_id": cand_ids[j], "reason": "still needed" if grades[j] > 0
                                 else "may need"} for j in range(lo, hi) if answer[j]]}
            out_tokens = math.ceil(len(_ANSWER_JSON.encode(data)) / 3.5)
        else:
            data, out_tokens = None, nothing_tokens
        k = hi - lo
        accounting.record_usage("keepback", model, Usage(
            input_tokens=math.ceil((fixed_chars + sum(map(line_chars, c_items[lo:hi])) + k - 1) / 3.5),
            output_tokens=out_tokens))
        chosen = [items[c_items[j]] for j in range(lo, hi)]
        records = tuple([make_record((cand_ids[j], items[c_items[j]].zone, scores[j],
                                      t - refs[j] if refs[j] < t else 0, toks[j]))
                         for j in range(lo, hi)])
        proposal = ProposalRecord(f"{scope}:{t}:{number}", scope, t, datetime.now(UTC), scorer_model,
                                  records)
        if in_time[number]:
            reasons = {r["ctx_id"]: r["reason"] for r in data["reasons"]} if data else {}
            feedback = feedback_record(proposal, "llm", {cid: reasons.get(cid) for cid in kept_ids})
        else:
            feedback = feedback_record(proposal, "auto", {})
        states = [make_state((it.kind, it.status, mks[j],
                              it.completed_turn is not None and it.completed_turn <= t, it.relevance))
                  for it, j in zip(chosen, range(lo, hi), strict=True)]
        store.record(proposal, feedback, states)
