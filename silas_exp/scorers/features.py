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


def features(item: LiveItem, turn: int) -> np.ndarray:
    x = np.zeros(len(FEATURES))
    index = {name: i for i, name in enumerate(FEATURES)}
    x[index["bias"]] = 1.0
    zone_key = f"zone_{item.zone.value}"
    if zone_key in index:
        x[index[zone_key]] = 1.0
    kind_key = f"kind_{item.kind}"
    if kind_key in index:
        x[index[kind_key]] = 1.0
    x[index["log_age"]] = math.log1p(item.age(turn))
    x[index["log_tokens"]] = math.log1p(item.tokens) / math.log(1000.0)
    x[index["is_error"]] = 1.0 if item.status == "error" else 0.0
    x[index["masked"]] = 1.0 if item.masked else 0.0
    x[index["completed"]] = 1.0 if item.completed(turn) else 0.0
    rel = item.relevance if item.relevance is not None else 0.5
    x[index["retrieval_relevance"]] = rel - 0.5
    return x


def feature_matrix(items: Sequence[LiveItem], turn: int) -> np.ndarray:
    if not items:
        return np.zeros((0, len(FEATURES)))
    return np.vstack([features(it, turn) for it in items])


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def linear_scores(items: Sequence[LiveItem], turn: int, weights: np.ndarray) -> dict[str, float]:
    probs = sigmoid(feature_matrix(items, turn) @ weights)
    return {it.ctx_id: float(p) for it, p in zip(items, probs, strict=True)}
