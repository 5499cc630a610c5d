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
_ZONE_COLUMN = {zone: _COLUMN.get(f"zone_{zone.value}", -1) for zone in ContextZone}
_KIND_COLUMN = {name[5:]: i for name, i in _COLUMN.items() if name.startswith("kind_")}
_LOG_1000 = math.log(1000.0)


def _one_hot(x: np.ndarray, columns: list[int]) -> None:
    """Set x[i, columns[i]] = 1 where the column exists (>= 0)."""
    cols = np.asarray(columns)
    rows = np.flatnonzero(cols >= 0)
    x[rows, cols[rows]] = 1.0


def feature_matrix(items: Sequence[LiveItem], turn: int) -> np.ndarray:
    """One row per item in FEATURES order, built column by column (one pass over
    the items per column instead of one array per item)."""
    x = np.zeros((len(items), len(FEATURES)))
    if not items:
        return x
    x[:, _COLUMN["bias"]] = 1.0
    _one_hot(x, [_ZONE_COLUMN.get(it.zone, -1) for it in items])
    _one_hot(x, [_KIND_COLUMN.get(it.kind, -1) for it in items])
    x[:, _COLUMN["log_age"]] = [math.log1p(it.age(turn)) for it in items]
    x[:, _COLUMN["log_tokens"]] = [math.log1p(it.tokens) for it in items]
    x[:, _COLUMN["log_tokens"]] /= _LOG_1000
    x[:, _COLUMN["is_error"]] = [it.status == "error" for it in items]
    x[:, _COLUMN["masked"]] = [it.masked for it in items]
    x[:, _COLUMN["completed"]] = [it.completed(turn) for it in items]
    x[:, _COLUMN["retrieval_relevance"]] = [0.5 if it.relevance is None else it.relevance for it in items]
    x[:, _COLUMN["retrieval_relevance"]] -= 0.5
    return x


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def linear_scores(items: Sequence[LiveItem], turn: int, weights: np.ndarray) -> dict[str, float]:
    probs = sigmoid(feature_matrix(items, turn) @ weights)
    return dict(zip([it.ctx_id for it in items], probs.tolist(), strict=True))
