"""Error rates of the verdict where users stand: real replays, the real gate,
the sequential design over cases.

    python bench/bench_verdict_e2e.py [--trials 200] [--cases 320] [--quick]

1. Real jobs (``run_job``, the simulated LLM) replay the control
   (``scorer=heuristic``) on every case of the pool under ``--seed-sets``
   independent base seeds, ``--repeats`` repeats each.
2. Each trial pairs two independent seed sets, control and "variant", and
   draws the blocks of cases in its own seeded order. It runs the study as a
   sweep does: after each planned look, the ablation (every gated metric:
   relevance, nDCG@10, tokens per served need, pass, errors) at the look's
   confidence and the stopping rule (``close_decided``); it ends at the first
   look that closes the variant, or at the pool's end.
3. Scenarios: the variant's per-case results are those of the independent
   control run, shifted (a documented perturbation of outcomes):
     a_a      unshifted: the same treatment, independent noise (A/A)
     margin   every continuous gated metric worse by exactly its margin
              (relevance −0.02, nDCG@10 −0.03, tokens per served need +5 %),
              pass recomputed from the shifted relevance: a ship is an error
     twice    worse by twice the margins: it should not ship
   For each: ship, do-not-ship and inconclusive rates, and the mean cases used.

Trials share the replays (one realisation of the replay noise per seed set),
so their rates are conditional on it; more seed sets give more independent
pairings. Writes bench/results/verdict_e2e.json.
"""

from __future__ import annotations

import argparse
import itertools
import math
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from _results import save  # bench/ helper

from silas_exp.analysis.data import JobData, SweepData, job_data
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.config import compose_config
from silas_exp.data.suites.blocks import block_order, n_blocks
from silas_exp.metrics.registry import gated_for, spec
from silas_exp.run.job import make_job, run_job
from silas_exp.schema.benchmark import BenchmarkResult
from silas_exp.study.looks import look_and_close
from silas_exp.study.state import AdaptiveState

CONTROL = "scorer=heuristic"
VARIANT = "scorer=variant"
THRESHOLD = ("context.retrieval_relevance", 0.7)  # the default suite's pass rule


def replay_control(seed: int, repeat: int, cases: int, out: str
                   ) -> tuple[dict[str, float], list[BenchmarkResult]]:
    """One real control job on the first ``cases`` cases of the pool: its
    metrics and its per-case results."""
    cfg = compose_config([f"seed={seed}", f"repeat={repeat}", "repeats=10", "cases_per_block=null",
                          f"suite.max_cases={cases}", "tracking=none", "llm.cache_mode=off"])
    outcome = run_job(cfg, make_job(cfg, CONTROL), Path(out) / f"s{seed}-r{repeat}")
    return outcome.metrics, list(outcome.results())


def _run(args: tuple[int, int, int, str]) -> tuple[int, int, dict[str, dict[str, float]], dict]:
    """One control job on the whole pool: (seed, repeat) -> per-case metrics and statuses."""
    seed, repeat, cases, out = args
    metrics, results = replay_control(seed, repeat, cases, out)
    job = job_data(CONTROL, repeat, metrics, results)
    return seed, repeat, job.cases, job.status


def shifted(cases: dict[str, dict[str, float]], k: float) -> dict[str, dict[str, float]]:
    """Per-case results made worse by ``k`` times each continuous gated metric's margin."""
    if k == 0:
        return cases
    out = {}
    for cid, row in cases.items():
        row = dict(row)
        for metric in ("context.retrieval_relevance", "ir.ndcg_at_10"):
            if metric in row:
                row[metric] -= k * spec(metric).margin
        key = "context.tokens_per_served_need"
        if key in row:
            row[key] *= 1 + k * spec(key).margin  # a relative margin
        if THRESHOLD[0] in row and not math.isnan(row["summary.pass"]):
            row["summary.pass"] = float(row[THRESHOLD[0]] >= THRESHOLD[1])
        out[cid] = row
    return out


def trial(runs: dict, pair: tuple[int, int], k: float, order: list[str], block: int,
          settings: AnalysisSettings, repeats: int) -> tuple[str, int]:
    """One sequential study: (outcome, cases used)."""
    blocks = n_blocks(len(order), block)
    state = AdaptiveState.plan_blocks(settings, blocks, block, len(order), 0)
    gated = gated_for("replay")
    for b in range(1, blocks + 1):
        if b not in state.looks:
            continue
        use = set(order[: b * block])
        jobs = []
        for r in range(repeats):
            for variant, seed, kk in ((CONTROL, pair[0], 0.0), (VARIANT, pair[1], k)):
                cases, status = runs[(seed, r)]
                cases = shifted({c: v for c, v in cases.items() if c in use}, kk)
                jobs.append(JobData(variant, r, {}, cases,
                                    status={c: s for c, s in status.items() if c in use}))
        look_and_close(SweepData("bench", "", jobs), settings.model_copy(update={"gate": gated}),
                       state, b)  # as a sweep looks: the relative margin fixed at the first
        if VARIANT in state.closed:
            return state.closed[VARIANT]["outcome"], len(use)
    return "inconclusive", len(order)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--cases", type=int, default=320, help="pool cases (the default pool: 320)")
    parser.add_argument("--block", type=int, default=None, help="cases per block (default: config)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats (default: config)")
    parser.add_argument("--seed-sets", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="a CI smoke run: 12 cases in blocks of 6, 1 repeat, 2 seed sets, 4 trials")
    ns = parser.parse_args()
    base = compose_config([])
    if ns.quick:
        ns.trials, ns.cases, ns.block, ns.repeats, ns.seed_sets = 4, 12, 6, 1, 2
    block = ns.block or base.cases_per_block
    repeats = ns.repeats or int(base.repeats)
    settings = base.analysis.model_copy(update={"n_resamples": 1000})
    seeds = [1000 + i for i in range(ns.seed_sets)]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(ns.workers) as ex:
        jobs = [(s, r, ns.cases, tmp) for s in seeds for r in range(repeats)]
        runs = {(s, r): (cases, status) for s, r, cases, status in ex.map(_run, jobs)}
    replay_s = time.perf_counter() - t0
    ids = sorted(next(iter(runs.values()))[0])
    pairs = list(itertools.permutations(seeds, 2))
    out = {"trials": ns.trials, "cases": ns.cases, "block": block, "repeats": repeats,
           "seed_sets": ns.seed_sets, "replay_seconds": replay_s, "scenarios": {}}
    print(f"pool {ns.cases} cases, blocks of {block}, {repeats} repeat(s), {ns.seed_sets} seed sets "
          f"(replays: {replay_s:.0f} s)")
    print(f"{'scenario':10s} {'ship':>6s} {'do not':>7s} {'inconcl.':>9s} {'mean cases':>11s}")
    for name, k in (("a_a", 0.0), ("margin", 1.0), ("twice", 2.0)):
        counts = {"ship": 0, "do_not_ship": 0, "inconclusive": 0}
        used = []
        for t in range(ns.trials):
            order = [ids[i] for i in block_order(len(ids), 50_000 + t)]
            outcome, n = trial(runs, pairs[t % len(pairs)], k, order, block, settings, repeats)
            counts[outcome] += 1
            used.append(n)
        row = {o: c / ns.trials for o, c in counts.items()} | {"mean_cases": float(np.mean(used))}
        out["scenarios"][name] = row
        print(f"{name:10s} {row['ship']:6.3f} {row['do_not_ship']:7.3f} {row['inconclusive']:9.3f} "
              f"{row['mean_cases']:11.1f}")
    out["seconds"] = time.perf_counter() - t0
    print(f"({ns.trials} trials per scenario, {out['seconds']:.0f} s). Targets: A/A ship >= 0.8 and "
          "do not ship <= 0.01; margin ship <= 0.025; twice do not ship >= 0.9")
    save("verdict_e2e", out)


if __name__ == "__main__":
    main()
