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


def ranking_metrics_at(ranked: Sequence[str], grades: Mapping[str, int], ndcg_ks: Sequence[int],
                       mrr_ks: Sequence[int], recall_ks: Sequence[int], threshold: int = 2,
                       ) -> tuple[list[float], list[float], list[float]]:
    """nDCG, MRR and recall at several cut-offs of one ranking of distinct ids,
    sharing the per-rank work: equal, to the last bit, to calling ``ndcg_at_k``,
    ``mrr_at_k`` and ``recall_at_k`` once per cut-off (the same terms are summed
    in the same order)."""
    top = max([*ndcg_ks, *mrr_ks, *recall_ks, 0])
    disc = [math.log2(r + 2) for r in range(top)]  # the rank discount, as in ndcg_at_k
    ranked_grades = [grades.get(i, 0) for i in ranked[:top]]
    gains = [(2**g - 1) / disc[r] for r, g in enumerate(ranked_grades)]
    ideal = sorted(grades.values(), reverse=True)[:top]
    ideal_gains = [(2**g - 1) / disc[r] for r, g in enumerate(ideal)]
    ndcg = []
    for k in ndcg_ks:
        idcg = sum(ideal_gains[:k])
        ndcg.append(sum(gains[:k]) / idcg if idcg > 0 else 0.0)
    first = next((r for r, g in enumerate(ranked_grades) if g >= threshold), None)
    mrr = [1.0 / (first + 1) if first is not None and first < k else 0.0 for k in mrr_ks]
    relevant = sum(1 for g in grades.values() if g >= threshold)
    recall = [sum(1 for g in ranked_grades[:k] if g >= threshold) / relevant if relevant else 0.0
              for k in recall_ks]
    return ndcg, mrr, recall
