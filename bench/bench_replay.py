"""Replay throughput: turns per second per core on sessions with <= 500 items.

    python bench/bench_replay.py [--scorer heuristic] [--sessions 8] [--quick]

Target: >= 20,000 turns/s per core (single process). Measures the context
manager, Tier 1, Tier 2 with the control scorer and the simulated main
model's keep-backs (feedback store in memory), excluding suite loading and
session generation. Sessions are generated at 3x over budget (budget = the
Tier-1-only peak / 3, as the shipped suites size theirs).
Writes bench/results/replay.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _results import save  # bench/ helper

from silas_exp.context.budget import PROFILES, TokenBudget
from silas_exp.context.replay import NeedOracle, replay
from silas_exp.context.stats import ReplayStats
from silas_exp.context.two_tier import TwoTierEviction, TwoTierSettings
from silas_exp.feedback.flush import KeepBackBroker, MainModelSettings
from silas_exp.feedback.store import FeedbackStore
from silas_exp.llm import LLMSettings, build_client
from silas_exp.scorers import ScorerContext, build_scorer, validate_scorer_settings
from silas_exp.suites.build import peak_usage
from silas_exp.suites.generator import generate_session, spec_for

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--scorer", default="heuristic")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="2 sessions of 40 turns (CI smoke)")
    ns = parser.parse_args()
    if ns.quick:
        ns.sessions, ns.turns = 2, 40
    sessions = []
    for i in range(ns.sessions):
        flavour = ("coding", "debugging", "research", "support")[i % 4]
        s, truth = generate_session(100 + i, spec_for(flavour, ns.turns), f"b{i}")
        total = max(int(peak_usage(s, truth) / 3.0), 2_000)
        sessions.append((s, truth, TokenBudget(total=total)))
    items = [len(s.items) for s, _, _ in sessions]
    settings = validate_scorer_settings({"name": ns.scorer})
    llm = build_client(LLMSettings(cache_mode="off"), seed=1, cache_dir=None)
    store = FeedbackStore(":memory:")
    turns = 0
    t0 = time.perf_counter()
    for s, truth, budget in sessions:
        oracle = NeedOracle(truth)
        stats = ReplayStats()
        scorer = build_scorer(settings, ScorerContext(seed=1, namespace=s.session_id,
                                                      scorer_model="claude-haiku-4-5", llm=llm))
        broker = KeepBackBroker(MainModelSettings("claude-sonnet-4-5", "simulated"), llm, store,
                                s.session_id, 1, oracle.max_grade_within)
        strategy = TwoTierEviction(TwoTierSettings(), budget, PROFILES[s.profile], scorer, broker,
                                   stats, s.scope_id)
        replay(s, truth, strategy.step, budget, stats)
        turns += s.turns
    elapsed = time.perf_counter() - t0
    llm.close()
    rate = turns / elapsed
    result = {"scorer": ns.scorer, "sessions": ns.sessions, "turns": turns,
              "items_per_session": items, "seconds": elapsed, "turns_per_s": rate}
    print(f"{turns} turns over {ns.sessions} sessions ({min(items)}-{max(items)} items): "
          f"{elapsed:.2f} s = {rate:,.0f} turns/s (target >= 20,000)")
    save("replay", result)


if __name__ == "__main__":
    main()
