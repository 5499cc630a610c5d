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


def _one_hot_table(keys: list, prefix: str, bias: bool) -> np.ndarray:
    """Row i: the constant part of the features of an item with ``keys[i]``."""
    table = np.zeros((len(keys), len(FEATURES)))
    for i, key in enumerate(keys):
        table[i, _COLUMN["bias"]] = 1.0 if bias else 0.0
        if key is not None and f"{prefix}{key}" in _COLUMN:
            table[i, _COLUMN[f"{prefix}{key}"]] = 1.0
    return table


# bias + zone one-hot by zone, kind one-hot by kind (row 0: a kind without a feature)
_ZONE_ROW = {zone: i for i, zone in enumerate(ContextZone)}
_ZONE_TABLE = _one_hot_table([zone.value for zone in ContextZone], "zone_", bias=True)
_KINDS = [None, *(name[5:] for name in FEATURES if name.startswith("kind_"))]
_KIND_ROW = {kind: i for i, kind in enumerate(_KINDS) if kind is not None}
_KIND_TABLE = _one_hot_table(_KINDS, "kind_", bias=False)


def feature_matrix(items: Sequence[LiveItem], turn: int) -> np.ndarray:
    """One row per item in FEATURES order, built column by column: the constant
    one-hot part from look-up tables, the rest from one pass over the items."""
    if not items:
        return np.zeros((0, len(FEATURES)))
    zones, kinds, last_refs, tokens, statuses, masked, completed, relevance = zip(*[
        (it.zone, it.kind, it.last_ref, it.tokens, it.status, it.masked, it.completed_turn, it.relevance)
        for it in items
    ], strict=True)
    x = _ZONE_TABLE[[_ZONE_ROW[z] for z in zones]] + _KIND_TABLE[[_KIND_ROW.get(k, 0) for k in kinds]]
    x[:, _COLUMN["log_age"]] = [math.log1p(max(0, turn - r)) for r in last_refs]  # LiveItem.age
    x[:, _COLUMN["log_tokens"]] = [math.log1p(t) for t in tokens]
    x[:, _COLUMN["log_tokens"]] /= _LOG_1000
    x[:, _COLUMN["is_error"]] = [s == "error" for s in statuses]
    x[:, _COLUMN["masked"]] = masked
    x[:, _COLUMN["completed"]] = [c is not None and c <= turn for c in completed]
    x[:, _COLUMN["retrieval_relevance"]] = [0.5 if r is None else r for r in relevance]
    x[:, _COLUMN["retrieval_relevance"]] -= 0.5
    return x


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.minimum(np.maximum(z, -30.0), 30.0)))  # = np.clip, cheaper


def linear_scores(items: Sequence[LiveItem], turn: int, weights: np.ndarray) -> dict[str, float]:
    probs = sigmoid(feature_matrix(items, turn) @ weights)
    return dict(zip([it.ctx_id for it in items], probs.tolist(), strict=True))
