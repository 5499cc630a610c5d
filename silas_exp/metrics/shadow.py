"""Shadow diff of two eviction orders on the same case: Kendall tau over the
items both evicted, Jaccard overlap of the evicted sets, first eviction
changed, and the identical / minor / major / incompatible classification.

An item can leave the window more than once (evicted, fetched back when a
later turn needs it, evicted again). The order compared is that of first
evictions; re-evictions are counted apart, so an order compared with itself
is always identical."""

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
    re_evictions_a: int = 0
    re_evictions_b: int = 0


def classify_diff(tau: float, jaccard: float, top1_changed: bool) -> str:
    if tau >= 0.99 and jaccard >= 0.95:
        return "identical"
    if tau >= 0.95 and not top1_changed:
        return "minor"
    if tau >= 0.85:
        return "major"
    return "incompatible"


def first_occurrences(order) -> tuple[list[str], int]:
    """The order of first appearances and how many repeats were dropped."""
    seen: set[str] = set()
    out = []
    for x in order:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out, len(order) - len(out)


def shadow_diff(ranking_a, ranking_b, k: int | None = None) -> ShadowDiff:
    (a, rep_a), (b, rep_b) = first_occurrences(list(ranking_a)), first_occurrences(list(ranking_b))
    a, b = a[:k], b[:k]
    sa, sb = set(a), set(b)
    jaccard = len(sa & sb) / len(sa | sb) if sa | sb else 1.0
    common = [x for x in a if x in sb]
    if len(common) >= 2:
        pos_b = {x: i for i, x in enumerate(b)}
        tau = float(kendalltau(range(len(common)), [pos_b[x] for x in common]).statistic)
    else:
        tau = 1.0 if a == b else 0.0
    top1 = (a[:1] != b[:1])
    return ShadowDiff(tau, jaccard, top1, classify_diff(tau, jaccard, top1), rep_a, rep_b)


def eviction_shadow(order_a, order_b) -> ShadowDiff | None:
    """From two cases' eviction orders (lists of ctx_ids; a JSON string with an
    "evicted" list, as result files before format 2 stored it, also works)."""
    try:
        a, b = (json.loads(o)["evicted"] if isinstance(o, str) else o for o in (order_a, order_b))
    except (ValueError, KeyError, TypeError):
        return None
    if a is None or b is None:
        return None
    return shadow_diff(a, b)
