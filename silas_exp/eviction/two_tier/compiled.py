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

import functools
import math
import operator
import os
import weakref
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import repeat
from json.encoder import encode_basestring_ascii

import numpy as np

from silas_exp.context.budget import TokenBudget, ZoneShares, count_tokens, tokens_of_chars
from silas_exp.context.features import _CONSTANT_ROW, _CONSTANT_TABLE
from silas_exp.context.stats import Flush, NeedEvent, Ranking, ReplayStats, tuple_maker
from silas_exp.context.window import MASK_TEMPLATE, LiveItem, mask_placeholder, one_line
from silas_exp.feedback.flush import (
    KEEPBACK_SCHEMA,
    SYSTEM,
    KeepBackBroker,
    keepback_line,
    keepback_message,
)
from silas_exp.feedback.store import candidate_rows, proposal_row
from silas_exp.llm.base import Usage
from silas_exp.llm.simulated import _ANSWER_JSON, _schema_chars, key64
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import KNOWN_KINDS, Session, SessionTruth

ENGINE_VARIABLE = "SILAS_EXP_REPLAY"  # "python": every replay in Python (default: auto)


def enabled() -> bool:
    """Whether replays may take the compiled loop (``SILAS_EXP_REPLAY=python`` turns it off)."""
    return os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() != "python"


def _kernel():
    """The records and codes of the kernel (``kernel_base``), imported on first
    use: numba's import costs a job that never replays two-tier eviction ~0.4 s."""
    from silas_exp.eviction.two_tier import kernel_base

    return kernel_base


def _replay_kernel():
    from silas_exp.eviction.two_tier.kernel import replay_kernel

    return replay_kernel

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
# a prompt line's characters besides its ctx_id and snippet (a score in [0, 1] is 4 characters)
_LINE_CHARS = len(keepback_line("", 0.0, ""))


# a session item's fields, in one call; a reference's
_ITEM_FIELDS = operator.itemgetter("turn", "ctx_id", "kind", "zone", "tokens", "text", "tool_name", "status",
                                   "group", "relevance", "completed_turn", "pinned", "refreshed_turns")
_REFERENCE_FIELDS = operator.attrgetter("turn", "ctx_id", "grade")


def _or_nan(x: float | None) -> float:
    return math.nan if x is None else x


def _ints(values) -> np.ndarray:
    """``np.array(values, dtype=np.int64)`` without numpy's type discovery per value."""
    return np.fromiter(values, np.int64, len(values))


@functools.cache
def _item_codes(K) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(zone text, kind) -> (the feature table's row, the kernel's zone and kind
    codes); by the zone's text: an enum member's hash is a Python-level call."""
    zone_code = {ContextZone.SYSTEM: K.SYSTEM, ContextZone.CHRONICLE: K.CHRONICLE,
                 ContextZone.MEMORY: K.MEMORY, ContextZone.WORKSPACE: K.WORKSPACE}
    kind_code = {"tool_result": K.KIND_TOOL_RESULT, "ack": K.KIND_ACK,
                 "subscription": K.KIND_SUBSCRIPTION}
    return {(zone.value, kind): (_CONSTANT_ROW[zone][kind], zone_code[zone],
                                 kind_code.get(kind, K.KIND_OTHER))
            for zone in ContextZone for kind in KNOWN_KINDS}


_SNIPPET = slice(0, 160)  # LiveItem.snippet: the text's first 160 characters
# LiveItem.mask's placeholder's characters besides its tool, status and tokens
_MASK_CHARS = len(MASK_TEMPLATE.format(tool="", status="", tokens=""))  # mask_placeholder's own


class _Encoded:
    """The arrays of one session that do not depend on the run's settings,
    built column by column (a comprehension per field: the encoding is the
    compiled replay's main cost in Python)."""

    def __init__(self, session: Session, truth: SessionTruth, max_subscription_tokens: int) -> None:
        K = _kernel()
        items = session.items
        # every field of every item in one C-level call per item, then transposed
        # (pydantic keeps the fields in the instance __dict__)
        fields = list(map(_ITEM_FIELDS, map(operator.attrgetter("__dict__"), items)))
        born = [f[0] for f in fields]
        order = None  # the arrival order's positions in the session, when they differ
        if not all(map(operator.le, born, born[1:])):  # arrival order: by turn, stably
            order = sorted(range(len(items)), key=born.__getitem__)
            items, fields, born = [items[k] for k in order], [fields[k] for k in order], sorted(born)
        (_, ids, kinds, zone_members, given, texts, tools, statuses, group_names, relevance,
         completed, pinned, refreshed) = zip(*fields, strict=True) if fields else ((),) * 13
        self.items, self._texts, self._kinds = items, texts, kinds
        n, turns = len(items), session.turns
        self.ids = ids
        self.index = index = dict(zip(ids, range(n), strict=True))
        self.zone_text = zones = list(map(operator.attrgetter("_value_"), zone_members))
        # (feature table row, zone code, kind code) of each item, one look-up each
        codes = np.fromiter(map(_item_codes(K).__getitem__, zip(zones, kinds, strict=True)),
                            np.dtype((np.int64, 3)), n)
        kind = codes[:, 2].copy()
        # LiveItem.from_session's tokens: given, else counted; a subscription's capped
        full_arr = _ints(given if None not in given else
                         [count_tokens(x) if t is None else t for t, x in zip(given, texts, strict=True)])
        np.minimum(full_arr, max_subscription_tokens, out=full_arr, where=kind == K.KIND_SUBSCRIPTION)
        self.full = full = full_arr.tolist()
        # a tool result's tokens once masked (LiveItem.mask: its placeholder's characters
        # are the template's own and the three values'); only tool results are masked
        mask_tok = np.zeros(n, dtype=np.int64)
        tool_results = np.flatnonzero(kind == K.KIND_TOOL_RESULT).tolist()
        mask_tok[tool_results] = [tokens_of_chars(_MASK_CHARS + len(tools[i] or "tool")
                                                  + len(statuses[i] or "ok") + len(str(full[i])))
                                  for i in tool_results]
        groups: dict[str, int] = {}
        group = [groups.setdefault(g, len(groups)) if g else -1 for g in group_names]
        rank = np.empty(n, dtype=np.int64)
        rank[sorted(range(n), key=ids.__getitem__)] = np.arange(n)
        # None (no relevance, not completed) as NaN: the schema allows no NaN
        relevance_arr = np.fromiter(map(_or_nan, relevance), float, n)
        completed_arr = np.fromiter(map(_or_nan, completed), float, n)
        a = self.a = {
            "born": _ints(born),
            "zone": codes[:, 1].copy(),
            "kind": kind,
            "const_row": codes[:, 0].copy(),
            "full": full_arr,
            "mask_tok": mask_tok,
            "pinned": np.fromiter(pinned, np.bool_, n),
            "group": _ints(group),
            "rank": rank,
            "relevance": np.where(np.isnan(relevance_arr), 0.5, relevance_arr),
            "completed": np.where(np.isnan(completed_arr), K.NOT_COMPLETED, completed_arr).astype(np.int64),
            "is_error": np.fromiter(map(operator.eq, statuses, repeat("error")), np.bool_, n),
            "name_key": np.fromiter(map(key64, ids), np.uint64, n),
            "const_table": np.ascontiguousarray(_CONSTANT_TABLE),
        }
        self._statuses, self._relevance = statuses, relevance
        self.groups_named_like_items = any(g in index for g in groups)
        self.n_groups = len(groups)
        # a subscription's refresh turns (flat, with offsets), and the subscriptions
        # each turn refreshes, in session order (the Python loop's dict order)
        a["sub_off"] = np.cumsum([0, *map(len, refreshed)]).astype(np.int64)
        a["sub_turns"] = _ints([t for ts in refreshed for t in ts])
        subscriptions = [i for i, k in enumerate(kinds) if k == "subscription"]
        if order is not None:  # in the session's order
            subscriptions.sort(key=order.__getitem__)
        refresh: dict[int, dict[int, None]] = {}
        for i in subscriptions:
            for t in refreshed[i]:
                refresh.setdefault(t, {})[i] = None
        flat = [(t, i) for t in sorted(refresh) if 0 <= t < turns for i in refresh[t]]
        a["refresh_off"] = np.searchsorted(_ints([t for t, _ in flat]),
                                           np.arange(turns + 1)).astype(np.int64)
        a["refresh_item"] = _ints([i for _, i in flat])
        # arrivals, and the needs of each turn in the truth's order, as offsets
        a["arr_off"] = np.searchsorted(a["born"], np.arange(turns + 1)).astype(np.int64)
        a["arr_item"] = np.arange(n, dtype=np.int64)
        refs = list(map(_REFERENCE_FIELDS, truth.references))
        ref_turns, ref_ids, grades = zip(*refs, strict=True) if refs else ((), (), ())
        if not all(map(operator.le, ref_turns, ref_turns[1:])):  # stably: a turn's in the truth's order
            ref_turns, ref_ids, grades = zip(*sorted(refs, key=operator.itemgetter(0)), strict=True)
        # every reference by turn (the need oracle's look-ahead); those before the
        # last turn, a prefix of them, are the replay's needs
        a["fut_turn"] = _ints(ref_turns)
        a["fut_item"] = np.fromiter(map(index.get, ref_ids, repeat(-1)), np.int64, len(ref_ids))
        a["fut_grade"] = _ints(grades)
        replayed = int(np.searchsorted(a["fut_turn"], turns))
        # the replay's needs as columns: turn, ctx_id, grade
        self.needs = (ref_turns[:replayed], ref_ids[:replayed], grades[:replayed])
        a["need_off"] = np.searchsorted(a["fut_turn"][:replayed], np.arange(turns + 1)).astype(np.int64)
        a["need_item"] = a["fut_item"][:replayed]
        self.item_arrays = K.Items(
            born=a["born"], zone=a["zone"], kind=a["kind"], full=a["full"], mask_tok=a["mask_tok"],
            pinned=a["pinned"], group=a["group"], rank=a["rank"], relevance=a["relevance"],
            completed=a["completed"], is_error=a["is_error"], const_row=a["const_row"],
            const_table=a["const_table"], name_key=a["name_key"], sub_off=a["sub_off"],
            sub_turns=a["sub_turns"])
        self.turn_arrays = K.Turns(
            arr_off=a["arr_off"], arr_item=a["arr_item"], need_off=a["need_off"],
            need_item=a["need_item"], refresh_off=a["refresh_off"], refresh_item=a["refresh_item"],
            fut_turn=a["fut_turn"], fut_item=a["fut_item"], fut_grade=a["fut_grade"])
        self.turns = turns
        self.fits = n < (1 << 21) and turns < (1 << 20)
        self._line_chars = np.full(n, -1, dtype=np.int64)

    @functools.cached_property
    def columns(self) -> dict[str, np.ndarray]:
        """Per item, what a feedback-store row holds of it besides its state at
        the flush: zone text, kind, status, retrieval relevance (None kept)."""
        return {"zone": np.array(self.zone_text, dtype=object),
                "kind": np.array(self._kinds, dtype=object),
                "status": np.array(self._statuses, dtype=object),
                "relevance": np.array(self._relevance, dtype=object)}

    def line_chars(self, wanted: np.ndarray) -> np.ndarray:
        """The characters of each item's line in a keep-back prompt
        (``keepback_line``), made for the items ``wanted`` (-1: not made yet)."""
        known = self._line_chars
        missing = np.unique(wanted[known[wanted] < 0]).tolist()
        if missing:
            texts = map(self._texts.__getitem__, missing)
            known[missing] = (np.fromiter(map(len, map(self.ids.__getitem__, missing)), np.int64, len(missing))
                              + np.fromiter(map(len, map(one_line, map(operator.getitem, texts,
                                                                        repeat(_SNIPPET)))),
                                            np.int64, len(missing)) + _LINE_CHARS)
        return known


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


def warm_up() -> None:
    """Load the compiled loop's machine code (from numba's cache, or compiled on
    a machine's first run, ~15 s) by replaying a two-item session: a launcher
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


def forget_encodings() -> None:
    """Drop every kept session encoding (a benchmark's pass starts cold)."""
    _ENCODED.clear()


@dataclass(frozen=True)
class Loop:
    """What the loop takes from a ``TwoTierEviction``: its settings, budget and
    shares, its linear scorer's weights (and model id, for the feedback rows),
    and its keep-back broker (None without keep-backs)."""

    keepbacks: bool
    zone_cap_factor: float
    budget: TokenBudget
    shares: ZoneShares
    weights: np.ndarray
    broker: KeepBackBroker | None
    scope_id: str
    scorer_model: str


def replay(session: Session, truth: SessionTruth, budget: TokenBudget, stats: ReplayStats,
           flush_turn: int | None, loop: Loop) -> bool:
    """``replay(session, truth, step, budget, stats)`` where ``step`` is the
    strategy's ``step`` (its ``compress`` at ``flush_turn``), through the
    compiled loop: True, or False (nothing replayed, nothing recorded) when the
    session is not one the loop takes (a group named like an item, too many
    items or turns) or ``stats`` holds a replay already."""
    if stats.turns or stats.needs:
        return False
    enc = _encoded(session, truth, budget)
    if enc.groups_named_like_items or not enc.fits:
        return False
    weights = np.ascontiguousarray(np.asarray(loop.weights, dtype=float))
    out = _replay_kernel()(enc.item_arrays, enc.turn_arrays, params(loop, flush_turn, enc.n_groups),
                           weights)
    _decode(enc, out, loop, budget, stats)
    return True


def params(loop: Loop, flush_turn: int | None, n_groups: int):
    """The kernel's ``Params`` of ``loop``."""
    b, shares, broker = loop.budget, loop.shares, loop.broker
    main = broker.s if loop.keepbacks else None
    keys = [np.uint64(0)] * 3
    if main is not None:
        keys = [np.uint64(key64(f"{broker.llm.backend.seed}/{broker.namespace}/keepback")),
                np.uint64(key64(f"{broker.seed}/{broker.namespace}/keepback.latency")),
                np.uint64(key64(""))]
    return _kernel().Params(
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
        key_keepback=keys[0], key_latency=keys[1], key_empty=keys[2])


def _decode(enc: _Encoded, out, loop: Loop, budget: TokenBudget, stats: ReplayStats) -> None:
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
    for name, value in zip(_kernel().COUNTERS, out.counters.tolist(), strict=True):
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
        _record_flushes(enc, loop, out)


def _record_flushes(enc: _Encoded, loop: Loop, out) -> None:
    """Each flush the main model saw: its proposal and feedback as the store's
    rows, its call in the client's accounting (what ``KeepBackBroker.resolve``,
    ``feedback_record`` and the simulated backend leave), made column-wise."""
    call_turn, call_cand_end, call_in_time = out.call_turn, out.call_cand_end, out.call_in_time
    c = out.candidates
    c_item, c_score, c_answer, c_grade = c.item, c.score, c.answer, c.grade
    c_tok, c_masked, c_last_ref = c.tok, c.masked, c.last_ref
    broker = loop.broker
    scope, scorer_model = loop.scope_id, loop.scorer_model
    # the flushes sent (proposal number = the Tier-2 call's), their candidates
    calls = np.flatnonzero(out.call_sent)
    starts = np.concatenate(([0], call_cand_end[:-1]))[calls]
    counts = call_cand_end[calls] - starts
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
    # the calls: prompt characters (system, message, schema), answer characters
    fixed_chars = len(SYSTEM) + len(keepback_message("", [])) + _schema_chars(KEEPBACK_SCHEMA)
    in_chars = (np.add.reduceat(enc.line_chars(item)[item], np.cumsum(counts) - counts)
                + fixed_chars + counts - 1).tolist()
    bounds = np.cumsum(counts).tolist()
    answered_l, kept_l = answered.tolist(), kept.tolist()
    usages: list[Usage] = []
    proposals: list[tuple] = []
    pids: list[str] = []
    lo = 0
    for number, t, hi, chars, in_time in zip(calls.tolist(), call_turn[calls].tolist(), bounds, in_chars,
                                             call_in_time[calls].tolist(), strict=True):
        said = [j for j in range(lo, hi) if answered_l[j]]
        out_chars = answer_chars([cand_ids[j] for j in said], [reasons[j] for j in said]) \
            if said else _NOTHING_KEPT
        usages.append(Usage(input_tokens=math.ceil(chars / 3.5), output_tokens=math.ceil(out_chars / 3.5)))
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
    broker.llm.accounting.record_usages("keepback", broker.main.model_id, usages)
    col = enc.columns
    broker.store.record_rows(proposals, candidate_rows(
        np.repeat(np.array(pids, dtype=object), counts).tolist(),
        (np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)).tolist(),
        cand_ids, col["zone"][item].tolist(), col["kind"][item].tolist(), scores,
        np.maximum(turn - c_last_ref[rows], 0).tolist(), c_tok[rows].tolist(),
        col["status"][item].tolist(), c_masked[rows].tolist(),
        (enc.item_arrays.completed[item] <= turn).tolist(), col["relevance"][item].tolist(), kept_l))
