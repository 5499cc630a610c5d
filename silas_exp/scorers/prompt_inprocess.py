"""A prompt scorer's calls answered in this process, when the simulated
backend answers them inline: the request the scorer would send, hashed as the
backend hashes it (its fingerprint seeds the noise), and the simulated
model's answer (``simulated_scorer``) computed from the items' fields by the
compiled functions of ``prompt_kernel.py``, with the call counted in the
client's accounting as the client counts it. The scores, the noise, the
fingerprint and the usage are those of ``PromptScorer.score`` through the
client; ``tests/scorers/test_prompt_pairs.py`` holds them equal.

``InProcess.for_scorer`` says whether a scorer's calls can be answered here
(``why_not``): the built-in simulated backend answering inline with the
built-in responder, nothing that sees every call (spend cap, response cache,
call log), ``SILAS_EXP_REPLAY`` not ``python``, and a template whose item
lines and guidance the simulated model reads back as written. An item whose
line would not read back as itself (a status or kind that is not one word, a
ctx_id with whitespace) leaves its table ``None``: the caller scores
through the client.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Sequence
from json.encoder import encode_basestring_ascii
from typing import Any, NamedTuple

import numpy as np

from silas_exp.context.replay import ENGINE_VARIABLE, compiled_enabled
from silas_exp.llm import calls
from silas_exp.llm.backends import BACKENDS
from silas_exp.llm.base import LLMRequest, Message, Usage, request_json
from silas_exp.llm.simulated import _ANSWER_JSON, SimulatedBackend, _schema_chars, responder_for

NOT_COMPLETED = 1 << 62
_SENTINEL = "\x00items\x00"  # stands for the item lines while a prompt is split around them


def _kernel():
    from silas_exp.scorers import prompt_kernel

    return prompt_kernel


class InProcess:
    """One prompt scorer's calls, answered in this process."""

    def __init__(self, scorer: Any, P: Any) -> None:
        self.scorer, self.P = scorer, P
        ctx, template = scorer.ctx, scorer.ctx.prompt
        self.llm, self.template = ctx.llm, template
        self.namespace, self.model_id = ctx.namespace, scorer.model_id
        self.block = ""
        if template.include_guidance and scorer.guidance:
            self.block = template.guidance_header + "\n" + "\n".join(scorer.guidance)
        self.reason = self._check()
        if self.reason is not None:
            return
        request = self._request(_SENTINEL)
        text = request_json(request)
        head, tail = text.split(encode_basestring_ascii(_SENTINEL)[1:-1])
        self._head, self._tail = head.encode(), tail.encode()
        self._fixed_chars = len(template.system or "") + _schema_chars(P.SCORES_SCHEMA)
        self._turns: dict[int, tuple[Any, bytes, int]] = {}
        w = P._PRIOR
        self.weights = np.array([w.age_decay, w.size_penalty, w.error_boost, w.masked_penalty,
                                 w.completed_penalty, w.retrieval_weight, P._LOG_1000])
        self.age_shift = np.array([self.shifts.get(("age", b), 0.0)
                                   for b in ("0_2", "3_9", "10_29", "30_plus")])
        empty = len(_ANSWER_JSON.encode({"scores": []}))
        one = len(_ANSWER_JSON.encode({"scores": [{"ctx_id": "", "relevance": 0.5}]}))
        two = len(_ANSWER_JSON.encode({"scores": [{"ctx_id": "", "relevance": 0.5}] * 2}))
        # the answer without items; an item besides its ctx_id (quoted: 2) and relevance (0.5: 3)
        self.answer_fixed = np.array([empty, one - empty - 5, two - 2 * one + empty], np.int64)
        self._buf = np.empty(1 << 16, np.uint8)
        self._lock = threading.Lock()  # the buffers, if two threads score at once (stateless: they may)
        self._room = 0
        self._rows: dict[str, tuple[tuple, int]] = {}  # ctx_id -> (its fields, its row in _session)
        self._session = None

    @classmethod
    def for_scorer(cls, scorer: Any, P: Any) -> InProcess:
        """``scorer``'s (a ``PromptScorer``), kept on it; ``P``: the module of
        its prompt and its simulated model (``silas_exp.scorers.prompt``, which
        hands itself over: this module does not import it)."""
        held = getattr(scorer, "_answers_here", None)
        if held is None:
            held = scorer._answers_here = cls(scorer, P)
        return held

    def why_not(self) -> str | None:
        """Why this scorer's calls cannot be answered here now (None: they can)."""
        if not compiled_enabled():
            return f"{ENGINE_VARIABLE}=python"
        if self.reason is not None:
            return self.reason
        llm = self.llm
        if llm.settings.max_usd is not None or llm.cache is not None or llm.ledger is not None:
            return "a spend cap or response cache sees every call"
        if calls.active():
            return "a call log records every call"
        return None

    def _check(self) -> str | None:
        P, llm = self.P, self.llm
        if type(self.scorer) is not P.PromptScorer:
            return "a prompt scorer of its own (a subclass) calls its model"
        if llm is None or type(llm.backend) is not SimulatedBackend or llm.backend.latency_ms \
                or not BACKENDS.kind_of(llm.settings).trait("draws_in_process"):
            return "the scorer's model does not answer inline in this process"
        if responder_for("scorer") is not P.simulated_scorer:
            return "the simulated scorer model is not the built-in one"
        try:
            pre, post = self._split(0)
        except (ValueError, KeyError, IndexError):
            return "the prompt template does not hold {items} once"
        # the template and guidance as the simulated model reads them: no item line of their
        # own, two item lines where the items go (the first one not run into the template's text)
        lines = ["a | chronicle | plan | age=1 | tokens=2 | ok | - | x",
                 "b | memory | memory | age=3 | tokens=4 | error | masked | y"]
        shifts, read = P.read_prompt(pre + "\n".join(lines) + post)
        if [r[:3] for r in read] != [("a", "chronicle", 1), ("b", "memory", 3)]:
            return "the prompt template's text reads as item lines"
        self.shifts = shifts
        return None

    def _request(self, content: str) -> LLMRequest:
        P, s = self.P, self.scorer.settings
        return LLMRequest(task="scorer", model=self.model_id, system=self.template.system,
                          cache_system=True, messages=(Message("user", content),),
                          max_tokens=s.max_tokens, temperature=0.0, output_schema=P.SCORES_SCHEMA,
                          deadline_s=s.timeout_ms / 1000.0)

    def _split(self, turn: int) -> tuple[str, str]:
        """The user message at ``turn`` before and after its item lines."""
        text = self.template.user.format(turn=turn, guidance=self.block, items=_SENTINEL)
        pre, post = text.split(_SENTINEL)  # ValueError unless exactly once
        return pre, post

    def _turn(self, turn: int) -> tuple[Any, bytes, int]:
        """(sha256 of the request's JSON up to the item lines, its JSON after
        them, the message's characters besides the item lines) at ``turn``."""
        held = self._turns.get(turn)
        if held is None:
            pre, post = self._split(turn)
            h = hashlib.sha256(self._head)
            h.update(encode_basestring_ascii(pre)[1:-1].encode())
            held = self._turns[turn] = (h, encode_basestring_ascii(post)[1:-1].encode() + self._tail,
                                        len(pre) + len(post))
        return held

    # -- the items' table ------------------------------------------------------
    def table(self, ctx_ids: Sequence[str], zones: Sequence[str], kinds: Sequence[str],
              statuses: Sequence[str | None], relevances: Sequence[float | None],
              completed: Sequence[int | None], snippets: Sequence[str]) -> Table | None:
        """The ``Table`` of these items (row i: item i), or None when one of
        their lines would not read back as itself."""
        keys = list(zip(ctx_ids, zones, kinds, statuses, relevances, completed, snippets, strict=True))
        pieces = [_piece(key, self.P) for key in keys]
        if None in pieces:
            return None
        K = _kernel()
        cols = list(zip(*pieces, strict=True)) if pieces else [()] * 12

        def flat(parts):
            off = np.zeros(len(parts) + 1, np.int64)
            np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)), out=off[1:])
            return off, np.frombuffer(b"".join(parts), np.uint8).copy()

        def ints(col):
            return np.fromiter(col, np.int64, len(col))

        def floats(col):
            return np.fromiter(col, float, len(col))

        pre_off, pre = flat(cols[0])
        status_off, status = flat(cols[2])
        rel_off, rel = flat(cols[4])
        tail_off, tail = flat(cols[5])
        shift = self.shifts.get
        zshift = floats([shift(("zone", z), 0.0) for z in zones])
        items = K.PromptItems(pre_off, pre, ints(cols[1]), status_off, status, ints(cols[3]), rel_off,
                              rel, tail_off, tail, ints(cols[6]), ints(cols[7]), floats(cols[8]),
                              np.fromiter(cols[9], np.bool_, len(cols[9])), floats(cols[10]), zshift,
                              ints(cols[11]))
        longest = int((np.diff(pre_off) + np.diff(status_off) + np.diff(rel_off) + np.diff(tail_off)).max()) \
            if keys else 0
        return Table(items, longest + 80, keys)  # digits, flags, separators: under 80 bytes a line

    def keep(self, table: Table) -> None:
        """Score the items of ``table`` (a session's) from it when ``score`` is
        asked about them again (the reference's candidates, at their turns)."""
        self._session = table
        self._rows = {key[0]: (key, row) for row, key in enumerate(table.keys)}

    def live_rows(self, items: Sequence[Any]) -> tuple[Table, np.ndarray] | None:
        """The table and rows of window items (``LiveItem``): the kept session's
        rows where each item's fields are those of its row, else a table of
        their own; None when one of their lines would not read back as itself."""
        keys = [(it.ctx_id, it.zone.value, it.kind, it.status, it.relevance, it.completed_turn,
                 it.snippet) for it in items]
        if self._session is not None:
            get = self._rows.get
            found = [get(key[0]) for key in keys]
            if None not in found and all(f[0] == key for f, key in zip(found, keys, strict=True)):
                return self._session, np.fromiter([f[1] for f in found], np.int64, len(found))
        table = self.table(*zip(*keys, strict=True)) if keys else self.table(*([()] * 7))
        return None if table is None else (table, np.arange(len(keys), dtype=np.int64))

    # -- a call ----------------------------------------------------------------
    def scores(self, table: Table, rows: np.ndarray, tok: np.ndarray, masked: np.ndarray,
               active: np.ndarray, last_ref: np.ndarray, turn: int) -> np.ndarray:
        """The relevances the simulated model answers for the items ``rows`` of
        ``table`` (their tokens, masked, active and last reference as given) at
        ``turn``, in that order; the call counted in the client's accounting."""
        with self._lock:
            return self._scores(table, rows, tok, masked, active, last_ref, turn)

    def _scores(self, table: Table, rows: np.ndarray, tok: np.ndarray, masked: np.ndarray,
                active: np.ndarray, last_ref: np.ndarray, turn: int) -> np.ndarray:
        K = _kernel()
        k = len(rows)
        if k > self._room or k * table.line_bytes + 16 > len(self._buf):
            self._room = max(k, 2 * self._room)
            self._ages, self._flags = np.empty(self._room, np.int64), np.empty(self._room, np.int64)
            self._z = np.empty(self._room)
            self._buf = np.empty(max(k * table.line_bytes + 16, 2 * len(self._buf)), np.uint8)
        ages, flags, z = self._ages[:k], self._flags[:k], self._z[:k]
        n, chars = K.prompt_block(table.items, rows, tok, masked, active, last_ref, turn, self.weights,
                                  self._buf, ages, flags, z)
        prefix, suffix, around = self._turn(turn)
        h = prefix.copy()
        h.update(self._buf[:n])
        h.update(suffix)
        digest = hashlib.sha256(f"{self.llm.backend.seed}/{self.namespace}/{h.hexdigest()}".encode()
                                ).digest()
        noise = np.random.default_rng(int.from_bytes(digest[:8], "little")).normal(0.0, 0.25, size=k)
        r = np.empty(k)
        out_chars = K.prompt_answer(table.items, rows, ages, z, noise, self.age_shift,
                                    self.answer_fixed, r)
        usage = Usage(input_tokens=math.ceil((self._fixed_chars + around + chars) / 3.5),
                      output_tokens=math.ceil(out_chars / 3.5))
        self.llm.accounting.record_usages("scorer", self.model_id, [usage])
        return r


class Table(NamedTuple):
    """Items as ``prompt_kernel`` reads them (``PromptItems``), the bytes a
    line of theirs can take at most, and each row's fields."""

    items: Any
    line_bytes: int
    keys: list[tuple]


# each item's table pieces (prompt_kernel.PromptItems, less the guidance's shift), kept by
# the fields they come from: a case is scored turn after turn, its reference's candidates again
_PIECES: dict[tuple, tuple | None] = {}


def _piece(key: tuple, P: Any) -> tuple | None:
    """An item's pieces of ``PromptItems`` from its fields (ctx_id, zone, kind,
    status, relevance, completion turn, snippet); None when its line would
    not read back as itself (``read_prompt``), with or without flags."""
    ctx_id, zone, kind, status, relevance, completed, snippet = key
    held = _PIECES.get(key, False)
    if held is not False:
        return held
    st = status or "ok"
    rel = f"rel={relevance:.2f}" if relevance is not None else ""
    pre = f"{ctx_id} | {zone} | {kind} | age="
    mid = f" | {st} | "
    tail = f" | {P._line_snippet(snippet)}"
    # the line read back as written, with and without flags (else: not answered here)
    ok = True
    for flags in ("-", ",".join(["masked", "completed", "inactive"] + ([rel] if rel else []))):
        m = P._LINE_RE.match(f"{pre}7 | tokens=9{mid}{flags}{tail}".strip())
        if m is None or m.groups() != (ctx_id, zone, kind, "7", "9", st, flags):
            ok = False
    piece = None
    if ok:
        found = P._REL_RE.search(rel) if rel else None
        piece = (encode_basestring_ascii(pre)[1:-1].encode(), len(pre),
                 encode_basestring_ascii(mid)[1:-1].encode(), len(mid), rel.encode(),
                 encode_basestring_ascii(tail)[1:-1].encode(), len(tail),
                 NOT_COMPLETED if completed is None else completed,
                 P._ZONE_TERM.get(zone, 0.0) + P._KIND_TERM.get(kind, 0.0), st == "error",
                 float(found.group(1)) if found else 0.5, len(encode_basestring_ascii(ctx_id)))
    if len(_PIECES) >= 1 << 15:  # a case's items and its reference's; a job's next case starts afresh
        _PIECES.clear()
    _PIECES[key] = piece
    return piece


def warm_up() -> None:
    """Load the compiled functions' machine code (numba's cache, or compiled on
    a machine's first run) with the argument types calls use, so that a
    launcher's forked workers start with it."""
    K = _kernel()
    n = 2
    off = np.arange(n + 1, dtype=np.int64)
    piece = np.frombuffer(b"ab", np.uint8).copy()
    ints, floats = np.ones(n, np.int64), np.zeros(n)
    table = K.PromptItems(off, piece, ints, off, piece, ints, np.zeros(n + 1, np.int64),
                          np.empty(0, np.uint8), off, piece, ints, ints, floats,
                          np.zeros(n, np.bool_), floats, floats, ints)
    rows, flags = np.arange(n, dtype=np.int64), np.zeros(n, np.bool_)
    ages, bits, z = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    K.prompt_block(table, rows, ints, flags, flags, ints, 3, np.ones(7), np.empty(256, np.uint8),
                   ages, bits, z)
    K.prompt_answer(table, rows, ages, z, floats, np.zeros(4), np.zeros(3, np.int64), np.empty(n))
