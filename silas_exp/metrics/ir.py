"""Ranking metrics with graded relevance 0–3 (retrieval evaluation framework
§3.1): one ranking (ids, best first) and grades (missing id = 0) in, a float out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranked: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    dcg = sum((2 ** grades.get(i, 0) - 1) / math.log2(r + 2) for r, i in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def mrr_at_k(ranked: Sequence[str], grades: Mapping[str, int], k: int, threshold: int = 2) -> float:
    for r, i in enumerate(ranked[:k]):
        if grades.get(i, 0) >= threshold:
            return 1.0 / (r + 1)
    return 0.0


def recall_at_k(ranked: Sequence[str], grades: Mapping[str, int], k: int, threshold: int = 2,
                empty: float = 0.0) -> float:
    """Share of items with grade >= threshold found in the top k; ``empty`` when
    nothing is relevant: 0.0, as ranx, trec_eval and ir_measures score such a
    query and as nDCG and MRR here do (so the three agree on the same rankings)."""
    relevant = {i for i, g in grades.items() if g >= threshold}
    if not relevant:
        return empty
    return len(relevant & set(ranked[:k])) / len(relevant)
