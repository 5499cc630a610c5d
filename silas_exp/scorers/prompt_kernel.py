"""The simulated scorer model's answer to a prompt scorer's request, compiled
with numba: from the items' fields, the bytes and characters of the prompt's
item lines (what the request's fingerprint hashes) and the answer, without
writing the prompt as text and parsing it back.

Each function mirrors the Python it names in ``scorers/prompt.py``, the
same operations in the same order; ``tests/scorers/test_prompt_pairs.py``
holds each pair to the same result. ``prompt_inprocess.py`` builds the items'
table (``PromptItems``), hashes the request and draws the noise between the
two entry points, ``prompt_block`` and ``prompt_answer``.

Hand-written because the text round trip (a line per item written, the
request encoded and hashed, every line parsed back with a regular expression)
is the Python path's whole cost, and no library answers a prompt from its
fields. One module, on purpose: numba's on-disk cache is invalidated when a
function's own file changes, not when a function it calls changes in
another file.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from silas_exp import jit

jit.install()  # numba's cache of these functions: one folder per version of the code (silas_exp/jit.py)

BACKSLASH_N = np.frombuffer(b"\\n", np.uint8)  # "\n" between two lines, as the request's JSON writes it
TOKENS = np.frombuffer(b" | tokens=", np.uint8)
FLAG_WORDS = (np.frombuffer(b"masked", np.uint8), np.frombuffer(b"completed", np.uint8),
              np.frombuffer(b"inactive", np.uint8))
NO_FLAG = np.frombuffer(b"-", np.uint8)
COMMA = np.frombuffer(b",", np.uint8)


class PromptItems(NamedTuple):
    """Per item (one row each), what its prompt line and its logit take from
    its fields, each text piece JSON-escaped as bytes (flat, with offsets):
    ``pre`` is ``"{ctx_id} | {zone} | {kind} | age="``, ``status`` is
    ``" | {status} | "``, ``rel`` the ``rel=0.00`` flag (empty without a
    relevance), ``tail`` is ``" | {snippet}"``; each with its length in
    characters (``*_chars``: before escaping). ``completed``: the completion
    turn (``1 << 62`` for none); ``z0``: the prior's zone and kind terms;
    ``error``: status ``error``; ``relv``: the relevance the line shows, read
    back (0.5 without one); ``zshift``: the guidance's shift for its zone;
    ``id_chars``: the ctx_id's characters as the answer's JSON writes it."""

    pre_off: np.ndarray
    pre: np.ndarray
    pre_chars: np.ndarray
    status_off: np.ndarray
    status: np.ndarray
    status_chars: np.ndarray
    rel_off: np.ndarray
    rel: np.ndarray
    tail_off: np.ndarray
    tail: np.ndarray
    tail_chars: np.ndarray
    completed: np.ndarray
    z0: np.ndarray
    error: np.ndarray
    relv: np.ndarray
    zshift: np.ndarray
    id_chars: np.ndarray


@njit(cache=True, inline="always")
def _put(out, n, piece):
    out[n:n + piece.shape[0]] = piece
    return n + piece.shape[0]


@njit(cache=True, inline="always")
def _put_int(out, n, value):
    """``str(value)`` of a non-negative int, as ASCII digits."""
    digits = 1
    v = value
    while v >= 10:
        v //= 10
        digits += 1
    v = value
    for d in range(digits - 1, -1, -1):
        out[n + d] = 48 + v % 10
        v //= 10
    return n + digits, digits


@njit(cache=True, inline="always")
def item_lines(t, rows, tok, masked, active, last_ref, turn, out, ages, flags):
    """``"\\n".join(item_line(it, turn) for it in items)``, JSON-escaped
    (``encode_basestring_ascii`` less its quotes) into ``out``: its bytes and
    characters. ``ages`` gets each item's age; ``flags`` its masked and
    completed flags (bits 0, 1), as ``_logit`` reads them back."""
    n = 0
    chars = 0
    masked_w, completed_w, inactive_w = FLAG_WORDS
    for a in range(rows.shape[0]):
        i = rows[a]
        if a:
            n = _put(out, n, BACKSLASH_N)
            chars += 1
        age = turn - last_ref[a] if last_ref[a] < turn else 0
        ages[a] = age
        n = _put(out, n, t.pre[t.pre_off[i]:t.pre_off[i + 1]])
        n, d1 = _put_int(out, n, age)
        n = _put(out, n, TOKENS)
        n, d2 = _put_int(out, n, tok[a])
        n = _put(out, n, t.status[t.status_off[i]:t.status_off[i + 1]])
        done = t.completed[i] <= turn
        rel = t.rel[t.rel_off[i]:t.rel_off[i + 1]]
        chars += t.pre_chars[i] + d1 + TOKENS.shape[0] + d2 + t.status_chars[i] + t.tail_chars[i]
        f = 0
        if masked[a] or done or not active[a] or rel.shape[0]:
            words = 0
            for on, word in ((masked[a], masked_w), (done, completed_w), (not active[a], inactive_w)):
                if on:
                    if words:
                        n = _put(out, n, COMMA)
                        chars += 1
                    n = _put(out, n, word)
                    chars += word.shape[0]
                    words += 1
            if rel.shape[0]:
                if words:
                    n = _put(out, n, COMMA)
                    chars += 1
                n = _put(out, n, rel)
                chars += rel.shape[0]
            f = (1 if masked[a] else 0) | (2 if done else 0)
        else:
            n = _put(out, n, NO_FLAG)
            chars += 1
        flags[a] = f
        n = _put(out, n, t.tail[t.tail_off[i]:t.tail_off[i + 1]])
    return n, chars


@njit(cache=True, inline="always")
def prior_logits(t, rows, tok, ages, flags, w, z):
    """``_logit`` of each item's line, read back (``read_prompt``): the prior's
    zone and kind terms, age, size, error, masked, completed and relevance, the
    same float operations in the same order. ``w``: the prior's weights
    (age decay, size penalty, error boost, masked and completed penalties,
    retrieval weight, log(1000))."""
    for a in range(rows.shape[0]):
        i = rows[a]
        x = t.z0[i]
        x -= w[0] * math.log1p(ages[a])
        x -= w[1] * math.log1p(tok[a]) / w[6]
        x += w[2] * (1.0 if t.error[i] else 0.0)
        x -= w[3] * (1.0 if flags[a] & 1 else 0.0) + w[4] * (1.0 if flags[a] & 2 else 0.0)
        z[a] = x + w[5] * (t.relv[i] - 0.5)


@njit(cache=True, inline="always")
def age_bucket(age):
    """``silas_exp.feedback.calibration.age_bucket``'s index (0_2, 3_9, 10_29, 30_plus)."""
    if age <= 2:
        return 0
    if age <= 9:
        return 1
    if age <= 29:
        return 2
    return 3


@njit(cache=True, inline="always")
def round4(p):
    """``round(p, 4)`` for ``0 <= p <= 1``: the double nearest the decimal
    ``p`` rounds to at four places, ties to even, from ``p``'s exact value
    (Python rounds the exact binary value correctly; ``rint(p * 1e4) / 1e4``
    would round ``p * 1e4``, itself rounded). The product's rounding error comes
    from Dekker's exact product (Veltkamp's split), so the decision is exact."""
    y = p * 10000.0
    c = 134217729.0 * p  # 2**27 + 1
    ph = c - (c - p)
    pl = p - ph
    bh, bl = 10000.0, 0.0  # 10000 splits exactly: its low half is 0
    err = ((ph * bh - y) + ph * bl + pl * bh) + pl * bl
    f = math.floor(y)
    d = (y - f - 0.5) + err  # the sign of (exact product - f - 1/2)
    if d > 0.0 or (d == 0.0 and f % 2.0 == 1.0):
        f += 1.0
    return f / 10000.0


@njit(cache=True, inline="always")
def relevances(rows, ages, z, noise, t, age_shift, r):
    """``simulated_scorer``'s answer from the prior logits ``z``: each item's
    guidance shifts (its zone's, its age bucket's), its noise, the sigmoid,
    rounded to four places."""
    for a in range(rows.shape[0]):
        x = z[a] + (t.zshift[rows[a]] + age_shift[age_bucket(ages[a])])
        r[a] = round4(1 / (1 + math.exp(-(x + noise[a]))))


@njit(cache=True, inline="always")
def answer_chars(t, rows, r, fixed):
    """``len(_ANSWER_JSON.encode(answer))`` of the answer scoring ``rows`` with
    ``r``: ``fixed`` is (the answer without items, an item's characters besides
    its ctx_id and relevance, the separator between items)."""
    k = rows.shape[0]
    chars = fixed[0] + fixed[2] * max(k - 1, 0)
    for a in range(k):
        q = int(round(r[a] * 10000.0))  # r is the double nearest q / 10000
        if q == 0 or q == 10000:
            digits = 3  # "0.0", "1.0"
        else:
            places = 4
            while q % 10 == 0:
                q //= 10
                places -= 1
            digits = 2 + places  # "0." and the places
        chars += fixed[1] + t.id_chars[rows[a]] + digits
    return chars


@njit(cache=True)
def prompt_block(t, rows, tok, masked, active, last_ref, turn, w, out, ages, flags, z):
    """The item lines' bytes in ``out`` and the prior logits in ``z``
    (``item_lines``, ``prior_logits``): (bytes, characters)."""
    n, chars = item_lines(t, rows, tok, masked, active, last_ref, turn, out, ages, flags)
    prior_logits(t, rows, tok, ages, flags, w, z)
    return n, chars


@njit(cache=True)
def prompt_answer(t, rows, ages, z, noise, age_shift, fixed, r):
    """The answer's relevances in ``r`` (``relevances``) and its characters (``answer_chars``)."""
    relevances(rows, ages, z, noise, t, age_shift, r)
    return answer_chars(t, rows, r, fixed)
