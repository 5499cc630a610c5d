"""Harness-visible item features and the linear relevance model shared by the
heuristic, calibrated-weights and online scorers.

relevance = sigmoid(bias + w · x). The control's hand-set weights live in
``silas_exp.scorers.heuristic``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from silas_exp.context.window import LiveItem
from silas_exp.schema.eviction import ContextZone

FEATURES: tuple[str, ...] = (
    "bias",
    "zone_chronicle",
    "zone_memory",
    "zone_workspace",
    "kind_user_message",
    "kind_agent_response",
    "kind_tool_result",
    "kind_memory",
    "kind_plan",
    "kind_subscription",
    "kind_ack",
    "log_age",
    "log_tokens",
    "is_error",
    "masked",
    "completed",
    "retrieval_relevance",
)


def weight_vector(weights: Mapping[str, float]) -> np.ndarray:
    """Map a name→weight mapping onto FEATURES order; unknown names are an error."""
    unknown = set(weights) - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown feature weight(s) {sorted(unknown)}; known: {list(FEATURES)}")
    return np.array([float(weights.get(name, 0.0)) for name in FEATURES])


_COLUMN = {name: i for i, name in enumerate(FEATURES)}
_LOG_1000 = math.log(1000.0)


class _RowByKind(dict):
    """kind -> table row; a kind without a feature gets the zone's kind-less row."""

    def __missing__(self, kind: str) -> int:
        return self[""]


def _constant_rows() -> tuple[dict[ContextZone, _RowByKind], np.ndarray]:
    """The constant part of an item's features (bias, zone and kind one-hots):
    one table row per (zone, kind), plus one per zone for kinds without a feature."""
    kinds = ["", *(name[5:] for name in FEATURES if name.startswith("kind_"))]
    rows: dict[ContextZone, _RowByKind] = {}
    table = np.zeros((len(ContextZone) * len(kinds), len(FEATURES)))
    for z, zone in enumerate(ContextZone):
        rows[zone] = _RowByKind()
        for k, kind in enumerate(kinds):
            i = rows[zone][kind] = z * len(kinds) + k
            for name in ("bias", f"zone_{zone.value}", f"kind_{kind}"):
                if name in _COLUMN:
                    table[i, _COLUMN[name]] = 1.0
    return rows, table


_CONSTANT_ROW, _CONSTANT_TABLE = _constant_rows()


# the columns that vary per item, in the order _item_values gives them: the last
# six, written as one slice (a basic index: no index array per call)
_VARYING = [_COLUMN[name] for name in ("log_age", "log_tokens", "is_error", "masked", "completed",
                                       "retrieval_relevance")]
_VARYING_SLICE = slice(_VARYING[0], _VARYING[-1] + 1)
assert _VARYING == list(range(len(FEATURES))[_VARYING_SLICE]), "the varying columns must be the last ones"
_LOG_TOKENS, _RELEVANCE = _COLUMN["log_tokens"], _COLUMN["retrieval_relevance"]
# log1p of the small ints ages and token counts mostly are, looked up instead of
# computed: the same floats (math.log1p made them)
_LOG1P = [math.log1p(n) for n in range(4096)]
_LOG1P_CUT = len(_LOG1P)


def _item_values(items: Sequence[LiveItem], turn: int) -> tuple[list[int], list]:
    """The constant-table row of each item, and its varying values flat, six per
    item, before feature_rows's two column-wise steps (tokens scaled, relevance
    centred): one pass over the items, LiveItem.age and .completed inlined and
    its tokens read without the property's call."""
    rows: list[int] = []
    values: list = []
    row, extend, log1p, constant = rows.append, values.extend, math.log1p, _CONSTANT_ROW
    table, cut = _LOG1P, _LOG1P_CUT
    for it in items:
        last_ref, done, r, tokens = it.last_ref, it.completed_turn, it.relevance, it._tokens
        age = turn - last_ref if last_ref < turn else 0
        row(constant[it.zone][it.kind])
        extend((table[age] if age < cut else log1p(age),
                table[tokens] if 0 <= tokens < cut else log1p(tokens),
                it.status == "error", it.masked, done is not None and done <= turn,
                0.5 if r is None else r))
    return rows, values


def _matrix(rows: list[int], values: list) -> np.ndarray:
    n = len(rows)
    x = _CONSTANT_TABLE[np.fromiter(rows, np.intp, n)]
    x[:, _VARYING_SLICE] = np.fromiter(values, float, n * len(_VARYING)).reshape(n, len(_VARYING))
    x[:, _LOG_TOKENS] /= _LOG_1000
    x[:, _RELEVANCE] -= 0.5
    return x


def feature_matrix(items: Sequence[LiveItem], turn: int) -> np.ndarray:
    """One row per item in FEATURES order (what a scorer sees of it at ``turn``);
    the same rows as ``feature_rows`` makes of the items' columns."""
    if not items:
        return np.zeros((0, len(FEATURES)))
    return _matrix(*_item_values(items, turn))


def feature_rows(zones: Sequence[ContextZone], kinds: Sequence[str], ages: Sequence[int],
                 tokens: Sequence[int], statuses: Sequence[str | None], masked: Sequence[bool],
                 completed: Sequence[bool], relevance: Sequence[float | None]) -> np.ndarray:
    """The feature rows of items described column by column (age in turns since
    the last reference, tokens held, status, masked, completed by now, retrieval
    relevance): the constant part from a look-up table, the rest column-wise.
    The feedback store keeps these observations and rebuilds its rows here."""
    if not zones:
        return np.zeros((0, len(FEATURES)))
    x = _CONSTANT_TABLE[np.array([_CONSTANT_ROW[z][k] for z, k in zip(zones, kinds, strict=True)])]
    x[:, _COLUMN["log_age"]] = [math.log1p(a) for a in ages]
    x[:, _COLUMN["log_tokens"]] = [math.log1p(t) for t in tokens]
    x[:, _COLUMN["log_tokens"]] /= _LOG_1000
    x[:, _COLUMN["is_error"]] = [s == "error" for s in statuses]
    x[:, _COLUMN["masked"]] = masked
    x[:, _COLUMN["completed"]] = completed
    x[:, _COLUMN["retrieval_relevance"]] = [0.5 if r is None else r for r in relevance]
    x[:, _COLUMN["retrieval_relevance"]] -= 0.5
    return x


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.minimum(np.maximum(z, -30.0), 30.0)))  # = np.clip, cheaper


def linear_scores(items: Sequence[LiveItem], turn: int, weights: np.ndarray) -> dict[str, float]:
    probs = sigmoid(feature_matrix(items, turn) @ weights)
    return dict(zip([it.ctx_id for it in items], probs.tolist(), strict=True))
