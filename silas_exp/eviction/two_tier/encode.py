"""A session encoded for the compiled loop: the kernel's ``Items`` and
``Turns`` records (``records.py``) built column by column, with what the
decoder needs to turn the loop's log back into records (the items, their
ctx_ids, the needs, a feedback row's columns, a keep-back prompt line's
characters). Encodings are kept per session object while it lives: a session
is replayed by the control and every variant of every repeat."""

from __future__ import annotations

import functools
import math
import operator
import weakref
from itertools import repeat

import numpy as np

from silas_exp.context.budget import TokenBudget, count_tokens, tokens_of_chars
from silas_exp.context.features import _CONSTANT_ROW, _CONSTANT_TABLE
from silas_exp.context.window import MASK_TEMPLATE, one_line
from silas_exp.eviction.two_tier import records
from silas_exp.feedback.flush import keepback_line
from silas_exp.llm.simulated import key64
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import KNOWN_KINDS, Session, SessionTruth


def _kernel():
    """The kernel's codes and records."""
    return records


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


class Encoded:
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
        # the columns a scorer reads items by (``array_scorer``)
        self.kinds, self.statuses, self.relevances, self.completed_turns = kinds, statuses, relevance, completed
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
    def snippets(self) -> list[str]:
        """Each item's ``LiveItem.snippet``."""
        return [text[_SNIPPET] for text in self._texts]

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


def encoded(session: Session, truth: SessionTruth, budget: TokenBudget) -> Encoded:
    cap = budget.max_subscription_tokens
    held = _ENCODED.get(id(session))
    if held is not None and held[0]() is session and held[1]() is truth and held[2] == cap:
        return held[3]
    enc = Encoded(session, truth, cap)
    if len(_ENCODED) >= 256:  # drop the entries of sessions gone
        for k in [k for k, v in _ENCODED.items() if v[0]() is None]:
            del _ENCODED[k]
    _ENCODED[id(session)] = (weakref.ref(session), weakref.ref(truth), cap, enc)
    return enc


def forget_encodings() -> None:
    """Drop every kept session encoding (a benchmark's pass starts cold)."""
    _ENCODED.clear()
