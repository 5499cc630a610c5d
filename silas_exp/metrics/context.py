"""Context-quality metrics of one replayed case (Silas §19.5): retrieval
relevance, token efficiency, exclusion prediction accuracy, and the eviction
machinery's own counters. Pure: ReplayStats + ground truth in, floats out."""

from __future__ import annotations

import math

import numpy as np

from silas_exp.context.replay import NeedOracle
from silas_exp.context.stats import ReplayStats
from silas_exp.metrics.classification import roc_auc
from silas_exp.metrics.ir import ranking_metrics_at
from silas_exp.metrics.names import metric_key

NAN = float("nan")


def _ratio(num: float, den: float) -> float:
    return num / den if den else NAN


def retrieval_metrics(stats: ReplayStats) -> dict[str, float]:
    graded = sum(n.grade for n in stats.needs)
    served_graded = sum(n.grade for n in stats.needs if n.served)
    needed = [n for n in stats.needs if n.grade >= 1]
    by_turn: dict[int, list[bool]] = {}
    for n in stats.needs:
        if n.grade >= 2:
            by_turn.setdefault(n.turn, []).append(n.served)
    completion = _ratio(sum(all(v) for v in by_turn.values()), len(by_turn))
    mean_tokens = float(np.mean(stats.window_tokens)) if stats.window_tokens else NAN
    served = sum(n.served for n in needed)
    return {
        metric_key("context", "retrieval_relevance"): _ratio(served_graded, graded),
        metric_key("context", "needed_served_rate"): _ratio(served, len(needed)),
        metric_key("context", "task_completion_rate"): completion,
        metric_key("context", "mean_window_tokens"): mean_tokens,
        metric_key("context", "tokens_per_served_need"): _ratio(sum(stats.window_tokens), served),
        metric_key("context", "completion_per_1k_tokens"): _ratio(completion, mean_tokens / 1000.0)
        if not math.isnan(mean_tokens) else NAN,
        metric_key("context", "re_retrievals"): float(stats.re_retrievals),
        metric_key("context", "re_retrieved_tokens"): float(stats.re_retrieved_tokens),
    }


NDCG_KS, MRR_KS, RECALL_KS = (5, 10, 20), (5, 10), (5, 10)


def ranking_metrics(stats: ReplayStats, oracle: NeedOracle, horizon: int) -> dict[str, float]:
    """The scorer's keep-first ranking at each Tier-2 call, graded against need
    within the horizon; averaged over calls (NaN when Tier 2 never ran)."""
    keys = ([metric_key("ir", "ndcg", k) for k in NDCG_KS] + [metric_key("ir", "mrr", k) for k in MRR_KS]
            + [metric_key("ir", "recall", k) for k in RECALL_KS])
    rows: list[list[float]] = []
    for r in stats.rankings:
        # the ranked items needed within the horizon; every other ranked item has
        # grade 0, which the metrics read for a missing id (same sums, same bits)
        needed = oracle.needed_within(r.turn, horizon)
        ranked = set(r.ranked) if needed else ()
        grades = {cid: g for cid, g in needed.items() if cid in ranked}
        ndcg, mrr, recall = ranking_metrics_at(r.ranked, grades, NDCG_KS, MRR_KS, RECALL_KS)
        rows.append(ndcg + mrr + recall)
    if not rows:
        return dict.fromkeys(keys, NAN)
    return {k: float(np.mean([row[j] for row in rows])) for j, k in enumerate(keys)}


def exclusion_metrics(stats: ReplayStats, oracle: NeedOracle, horizon: int) -> dict[str, float]:
    scores = np.asarray(stats.candidate_scores, dtype=float)
    kept = np.asarray(stats.candidate_excluded, dtype=bool)
    harmful = [oracle.max_grade_within(cid, t, horizon) >= 2 for t, cid in stats.evictions]
    return {
        metric_key("feedback", "exclusion_rate"): float(kept.mean()) if len(kept) else NAN,
        metric_key("feedback", "exclusion_auc"): roc_auc(scores, kept) if len(kept) else NAN,
        metric_key("context", "harmful_eviction_rate"): float(np.mean(harmful)) if harmful else NAN,
    }


def machinery_metrics(stats: ReplayStats) -> dict[str, float]:
    turns = max(stats.turns, 1)
    return {
        metric_key("tier2", "proposals"): float(stats.proposals),
        metric_key("tier2", "scorer_calls"): float(stats.scorer_calls),
        metric_key("tier2", "scorer_failures"): float(stats.scorer_failures),
        metric_key("tier2", "fallbacks"): float(stats.fallbacks),
        metric_key("tier2", "breaker_opens"): float(stats.breaker_opens),
        metric_key("tier2", "auto_resolved"): float(stats.auto_resolved),
        metric_key("tier2", "hard_ceiling_overrides"): float(stats.hard_ceiling_overrides),
        metric_key("context", "guard_trigger_rate"): stats.guard_triggers / turns,
    }


def case_metrics(stats: ReplayStats, oracle: NeedOracle, horizon: int) -> dict[str, float]:
    out = retrieval_metrics(stats)
    out.update(ranking_metrics(stats, oracle, horizon))
    out.update(exclusion_metrics(stats, oracle, horizon))
    out.update(machinery_metrics(stats))
    return out
