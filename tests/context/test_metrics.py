"""Context metrics on hand-built replay observations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from silas_exp.context.replay import NeedOracle
from silas_exp.context.stats import NeedEvent, Ranking, ReplayStats
from silas_exp.metrics.context import case_metrics, retrieval_metrics
from silas_exp.metrics.ir import mrr_at_k, ndcg_at_k, recall_at_k
from silas_exp.schema.session import Reference, SessionTruth


def test_ir_metrics_hand_computed():
    grades = {"a": 3, "b": 0, "c": 2}
    ranked = ["b", "a", "c"]
    # DCG = 0 + 7/log2(3) + 3/log2(4) = 4.4165 + 1.5; IDCG = 7 + 3/log2(3) = 8.8928
    assert ndcg_at_k(ranked, grades, 3) == pytest.approx((7 / math.log2(3) + 1.5) / (7 + 3 / math.log2(3)))
    assert mrr_at_k(ranked, grades, 5) == 0.5
    assert recall_at_k(ranked, grades, 1) == 0.0 and recall_at_k(ranked, grades, 2) == 0.5
    # nothing relevant: 0, as ranx / trec_eval score such a query and as nDCG and MRR do here
    assert recall_at_k(ranked, {"x": 1}, 5) == 0.0
    assert ndcg_at_k(ranked, {"x": 0}, 5) == 0.0 and mrr_at_k(ranked, {"x": 1}, 5) == 0.0


def test_retrieval_relevance_is_grade_weighted():
    stats = ReplayStats(needs=[NeedEvent(5, "a", 3, True), NeedEvent(5, "b", 1, False),
                               NeedEvent(6, "c", 2, False)], window_tokens=[100, 300])
    m = retrieval_metrics(stats)
    assert m["context.retrieval_relevance"] == pytest.approx(3 / 6)
    assert m["context.needed_served_rate"] == pytest.approx(1 / 3)
    # turns with grade>=2 needs: 5 (all served) and 6 (missed) -> 0.5
    assert m["context.task_completion_rate"] == pytest.approx(0.5)
    assert m["context.tokens_per_served_need"] == pytest.approx(400 / 1)


def test_case_metrics_use_future_need_for_rankings_and_exclusions():
    truth = SessionTruth(references=[Reference(turn=12, ctx_id="a", grade=3)])
    stats = ReplayStats(rankings=[Ranking(10, ("a", "b"))], candidate_scores=[0.9, 0.1],
                        candidate_excluded=[True, False], evictions=[(10, "b"), (10, "a")],
                        window_tokens=[1], turns=20)
    m = case_metrics(stats, NeedOracle(truth), horizon=5)
    assert m["ir.ndcg_at_10"] == 1.0 and m["ir.mrr_at_5"] == 1.0
    assert m["feedback.exclusion_auc"] == 1.0 and m["feedback.exclusion_rate"] == 0.5
    assert m["context.harmful_eviction_rate"] == 0.5
    assert math.isnan(m["context.retrieval_relevance"])  # no needs observed


def test_ranking_metrics_at_equals_the_single_cutoff_functions_to_the_bit():
    import random

    from silas_exp.metrics.ir import ranking_metrics_at

    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(0, 40)
        ranked = [f"c{i}" for i in rng.sample(range(60), n)]
        grades = {cid: rng.choice([0, 0, 1, 2, 3]) for cid in ranked if rng.random() < 0.8}
        grades |= {f"x{i}": rng.choice([0, 2, 3]) for i in range(rng.randint(0, 3))}  # never ranked
        ndcg, mrr, recall = ranking_metrics_at(ranked, grades, (1, 5, 10, 20), (5, 10), (5, 10))
        assert ndcg == [ndcg_at_k(ranked, grades, k) for k in (1, 5, 10, 20)]
        assert mrr == [mrr_at_k(ranked, grades, k) for k in (5, 10)]
        assert recall == [recall_at_k(ranked, grades, k) for k in (5, 10)]


def _random_truth(rng, items: list[str], turns: int) -> SessionTruth:
    return SessionTruth(references=[
        Reference(turn=rng.randrange(turns), ctx_id=rng.choice(items), grade=rng.choice([0, 1, 2, 3]))
        for _ in range(rng.randint(0, 80))])


def test_needed_within_is_max_grade_within_of_every_item():
    import random

    rng = random.Random(11)
    items = [f"c{i}" for i in range(30)]
    for _ in range(200):
        oracle = NeedOracle(_random_truth(rng, items, 60))
        turn, horizon = rng.randrange(-5, 65), rng.randint(0, 25)
        needed = oracle.needed_within(turn, horizon)
        assert needed == {c: g for c in items if (g := oracle.max_grade_within(c, turn, horizon))}


def test_ranking_metrics_equal_grading_every_ranked_item_to_the_bit():
    """The metrics grade only the ranked items needed within the horizon; grading
    every ranked item (0 for the rest) gives the same floats."""
    import random

    from silas_exp.metrics.context import MRR_KS, NDCG_KS, RECALL_KS, ranking_metrics
    from silas_exp.metrics.ir import ranking_metrics_at

    rng = random.Random(5)
    items = [f"c{i}" for i in range(40)]
    for _ in range(100):
        oracle = NeedOracle(_random_truth(rng, items, 50))
        rankings = [Ranking(rng.randrange(50), tuple(rng.sample(items, rng.randint(1, 40))))
                    for _ in range(rng.randint(1, 6))]
        got = ranking_metrics(ReplayStats(rankings=rankings), oracle, horizon=10)
        rows = [[*a, *b, *c] for a, b, c in (
            ranking_metrics_at(r.ranked, {cid: oracle.max_grade_within(cid, r.turn, 10)
                                          for cid in r.ranked}, NDCG_KS, MRR_KS, RECALL_KS)
            for r in rankings)]
        assert list(got.values()) == [float(np.mean([row[j] for row in rows]))
                                      for j in range(len(rows[0]))]
