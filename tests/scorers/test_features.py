"""The feature matrix equals the per-item definition, bit for bit."""

from __future__ import annotations

import math
from itertools import product

import numpy as np

from silas_exp.context.features import FEATURES, feature_matrix, linear_scores, sigmoid
from silas_exp.context.window import LiveItem
from silas_exp.schema.eviction import ContextZone


def reference_row(item: LiveItem, turn: int) -> np.ndarray:
    """One item's features as documented (the definition the matrix must match)."""
    x = dict.fromkeys(FEATURES, 0.0)
    x["bias"] = 1.0
    for name in (f"zone_{item.zone.value}", f"kind_{item.kind}"):
        if name in x:
            x[name] = 1.0
    x["log_age"] = math.log1p(item.age(turn))
    x["log_tokens"] = math.log1p(item.tokens) / math.log(1000.0)
    x["is_error"] = 1.0 if item.status == "error" else 0.0
    x["masked"] = 1.0 if item.masked else 0.0
    x["completed"] = 1.0 if item.completed(turn) else 0.0
    x["retrieval_relevance"] = (item.relevance if item.relevance is not None else 0.5) - 0.5
    return np.array([x[name] for name in FEATURES])


def _items() -> list[LiveItem]:
    kinds = ("user_message", "tool_result", "memory", "ack", "system_prompt", "summary")
    out = []
    for n, (zone, kind) in enumerate(product(ContextZone, kinds)):
        out.append(LiveItem(
            ctx_id=f"c{n}", zone=zone, kind=kind, full_tokens=37 * n, tokens=(37 * n) % 2000,
            born=n % 7, last_ref=n % 50, status=("error", "ok", None)[n % 3],
            relevance=(None, 0.0, 0.123, 1.0)[n % 4], completed_turn=(None, 3, 40)[n % 3],
            masked=n % 5 == 0,
        ))
    return out


def test_feature_matrix_matches_the_per_item_definition():
    items = _items()
    for turn in (0, 12, 45):
        expected = np.vstack([reference_row(it, turn) for it in items])
        got = feature_matrix(items, turn)
        assert got.tobytes() == expected.tobytes() and got.flags.c_contiguous
    assert feature_matrix([], 3).shape == (0, len(FEATURES))


def test_linear_scores_are_the_sigmoid_of_the_matrix():
    items, w = _items(), np.linspace(-2.0, 2.0, len(FEATURES))
    expected = 1.0 / (1.0 + np.exp(-np.clip(feature_matrix(items, 9) @ w, -30, 30)))
    assert list(linear_scores(items, 9, w).values()) == expected.tolist()
    z = np.array([-1e9, -30.0, -0.0, 0.0, 29.9, 1e9, np.nan])
    assert np.array_equal(sigmoid(z), 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))), equal_nan=True)
