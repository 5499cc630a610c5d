"""Tier 2's orders equal their one-sort definitions: the ranking by descending
score then ctx_id, and the coherence units by their best score then their first
ctx_id (the code sorts in steps, on plain keys, which must not change them)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from silas_exp.context.window import LiveItem
from silas_exp.eviction.two_tier import eviction_units, keep_first, ranked_units, units_by_key
from silas_exp.schema.eviction import ContextZone as Z


def _scores(rng: np.random.Generator, n: int, kind: str) -> dict[str, float]:
    ids = [f"c{i:03d}" for i in rng.permutation(n)]
    if kind == "ties":  # few distinct values, signed zeros among them
        values = [float(v) for v in rng.choice([0.0, -0.0, 0.25, 0.5, 1.0], size=n)]
    elif kind == "ints":
        values = [int(v) for v in rng.integers(0, 3, size=n)]
    elif kind == "nan":
        values = [float("nan") if rng.random() < 0.2 else float(rng.random()) for _ in range(n)]
    else:
        values = [float(v) for v in rng.random(n)]
    return dict(zip(ids, values, strict=True))


@pytest.mark.parametrize("kind", ["floats", "ties", "ints", "nan"])
def test_keep_first_is_descending_score_then_ctx_id(kind):
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 5, 40, 120):
        scores = _scores(rng, n, kind)
        expected = tuple(sorted(scores, key=lambda c: (-scores[c], c)))
        assert keep_first(scores) == expected
        if kind != "nan":
            ranked = [scores[c] for c in keep_first(scores)]
            assert ranked == sorted(ranked, reverse=True)


@pytest.mark.parametrize("kind", ["floats", "ties", "nan"])
def test_eviction_units_are_groups_by_best_score_then_first_ctx_id(kind):
    rng = np.random.default_rng(11)
    for n in (1, 3, 30, 90):
        scores = _scores(rng, n, kind)
        items = [LiveItem(ctx_id=c, zone=Z.CHRONICLE, kind="agent_response", full_tokens=10,
                          tokens=10, born=0, last_ref=0,
                          group=f"g{rng.integers(n // 2 + 1)}" if rng.random() < 0.5 else None)
                 for c in scores]
        groups: dict[str, list[LiveItem]] = {}
        for it in items:
            groups.setdefault(it.group or it.ctx_id, []).append(it)
        expected = sorted(groups.values(),
                          key=lambda g: (max(scores[i.ctx_id] for i in g), g[0].ctx_id))
        units = eviction_units(items, scores)
        assert [[i.ctx_id for i in u] for u in units] == [[i.ctx_id for i in g] for g in expected]
        assert sorted(i.ctx_id for u in units for i in u) == sorted(scores)
        if kind != "nan":
            best = [max(scores[i.ctx_id] for i in u) for u in units]
            assert best == sorted(best) and not any(math.isnan(b) for b in best)


@pytest.mark.parametrize("kind", ["floats", "ties", "ints", "nan"])
def test_positional_orders_equal_their_definitions(kind):
    """eviction_units and ranked_units (positions in the window, one sort by
    ctx_id) against units_by_key and keep_first, on random windows with tied
    scores, shared groups, a group named like an item, a ctx_id held twice and
    a score for an item not in the window."""
    rng = np.random.default_rng(23)
    for trial in range(120):
        n = int(rng.integers(0, 50))
        scores = _scores(rng, n, kind)
        ids = list(scores)
        rng.shuffle(ids)
        if n and trial % 7 == 0:
            ids.append(ids[0])  # a ctx_id held twice
        elif n and trial % 6 == 0:
            ids.pop()  # a score for an item not in the window
        named = ids[-1] if ids and trial % 5 == 0 else None  # a group named like an item
        items = [LiveItem(ctx_id=c, zone=Z.CHRONICLE, kind="agent_response", full_tokens=10,
                          tokens=10, born=0, last_ref=0,
                          group=(named if named and rng.random() < 0.1 else
                                 f"g{rng.integers(4)}" if rng.random() < 0.3 else
                                 "" if rng.random() < 0.05 else None))
                 for c in ids]
        expected = [[i.ctx_id for i in u] for u in units_by_key(items, scores)]
        assert [[i.ctx_id for i in u] for u in eviction_units(items, scores)] == expected
        ranking, units = ranked_units(items, scores)
        assert ranking == keep_first(scores)
        assert [[i.ctx_id for i in u] for u in units] == expected
