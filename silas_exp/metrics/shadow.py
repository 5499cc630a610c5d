"""Shadow diff of two eviction orders on the same case: Kendall tau over the
items both evicted, Jaccard overlap of the evicted sets, first eviction
changed, and the identical / minor / major / incompatible classification."""

from __future__ import annotations

import json
from dataclasses import dataclass

from scipy.stats import kendalltau


@dataclass(frozen=True)
class ShadowDiff:
    kendall_tau: float
    jaccard: float
    top1_changed: bool
    classification: str


def classify_diff(tau: float, jaccard: float, top1_changed: bool) -> str:
    if tau >= 0.99 and jaccard >= 0.95:
        return "identical"
    if tau >= 0.95 and not top1_changed:
        return "minor"
    if tau >= 0.85:
        return "major"
    return "incompatible"


def shadow_diff(ranking_a, ranking_b, k: int | None = None) -> ShadowDiff:
    a, b = list(ranking_a)[:k], list(ranking_b)[:k]
    sa, sb = set(a), set(b)
    jaccard = len(sa & sb) / len(sa | sb) if sa | sb else 1.0
    common = [x for x in a if x in sb]
    if len(common) >= 2:
        pos_b = {x: i for i, x in enumerate(b)}
        tau = float(kendalltau(range(len(common)), [pos_b[x] for x in common]).statistic)
    else:
        tau = 1.0 if a == b else 0.0
    top1 = (a[:1] != b[:1])
    return ShadowDiff(tau, jaccard, top1, classify_diff(tau, jaccard, top1))


def eviction_shadow(output_a: str, output_b: str) -> ShadowDiff | None:
    """From two cases' ``actual_output`` (JSON with an "evicted" order)."""
    try:
        a, b = json.loads(output_a)["evicted"], json.loads(output_b)["evicted"]
    except (ValueError, KeyError, TypeError):
        return None
    return shadow_diff(a, b)
