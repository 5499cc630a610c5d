"""How often `silas-exp regress` is right, on real replays, at the baseline's size.

    python bench/bench_regress.py [--cases 320] [--seeds 20] [--config scorer=weights] [--quick]

1. Real jobs (``run_grid``, the simulated LLM, the regress command's own
   runner) replay the baseline's configuration (``--config``) on the first
   ``--cases`` cases of the default pool, all at once: the baseline (repeat
   0, seed 0), the same configuration under ``--seeds`` other seeds (repeats
   1..N: the same cases, other random streams) and the A/A runs a check under
   other seeds makes (repeats 1000, 2000, ...: ``AA_SEEDS`` of them), which
   give the flag counts expected from noise and the between-seed variance of
   a job-level shift.
2. Scenarios, each checked with ``regress`` (the verdict rule at the gated
   margins) against the baseline:
     unchanged  each other-seed run as it is: it should say "no regression"
                (target >= 19 of 20), its per-case flags near the expected count
     twice      each run made worse by twice the gated margins, as in
                bench_verdict_e2e (relevance -0.04, nDCG@10 -0.06, tokens per
                served need +10 %, pass recomputed): it should say
                "regression" (target >= 18 of 20)
Writes bench/results/regress.json.
"""

from __future__ import annotations

import argparse
import math
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np
from _results import save  # bench/ helper
from bench_verdict_e2e import shifted  # the documented perturbation of outcomes

from silas_exp.analysis.data import JobData
from silas_exp.analysis.regress import regress
from silas_exp.run.regress import AA_REPEATS, AA_SEEDS, GridJob, run_grid
from silas_exp.stats import Outcome


def worse(job: JobData, k: float) -> JobData:
    """``job`` with every case made worse by ``k`` times the gated margins."""
    cases = shifted(job.cases, k)
    status = {c: ("pass" if row.get("summary.pass") == 1.0 else
                  job.status[c] if job.status[c] in ("error", "timeout", "skipped") else "fail")
              for c, row in cases.items()}
    return JobData(job.variant, job.repeat, job.metrics, cases, job.outputs, job.run_id, status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=320, help="cases the baseline covers")
    parser.add_argument("--seeds", type=int, default=20, help="other seeds checked")
    parser.add_argument("--config", nargs="+", default=["scorer=weights"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--jobs", type=Path, default=None,
                        help="keep the replays in this file (reused when it exists)")
    parser.add_argument("--quick", action="store_true",
                        help="a CI smoke run: 12 cases, 3 other seeds")
    ns = parser.parse_args()
    if ns.quick:
        ns.cases, ns.seeds = 12, 3
    design = ["cases_per_block=null", f"suite.max_cases={ns.cases}", "seed=0",
              "llm.cache_mode=off", *ns.config]
    t0 = time.perf_counter()
    aa_repeats = [AA_REPEATS * (k + 1) for k in range(AA_SEEDS)]
    grid = [GridJob(r, r, 0) for r in (0, *range(1, ns.seeds + 1), *aa_repeats)]
    if ns.jobs and ns.jobs.exists():
        jobs = pickle.loads(ns.jobs.read_bytes())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            jobs = {j.repeat: j for j in run_grid(design, grid, Path(tmp), ns.workers)}
        if ns.jobs:
            ns.jobs.write_bytes(pickle.dumps(jobs))
    replay_s = time.perf_counter() - t0
    base, aa = jobs.pop(0), [jobs.pop(r) for r in aa_repeats]
    for j in (*jobs.values(), *aa):
        j.repeat = 0  # each pairs with the baseline's repeat 0
    out = {"cases": ns.cases, "seeds": ns.seeds, "config": ns.config, "replay_seconds": replay_s,
           "scenarios": {}}
    print(f"{ns.cases} cases, {ns.seeds} other seeds, config {' '.join(ns.config)} "
          f"(replays: {replay_s:.0f} s)")
    print(f"{'scenario':10s} {'no regr.':>9s} {'regr.':>6s} {'not r/o':>8s} "
          f"{'pass->fail (mean)':>18s} {'expected':>9s}")
    for name, k in (("unchanged", 0.0), ("twice", 2.0)):
        counts = {o: 0 for o in Outcome}
        flips, why = [], []
        expected = math.nan
        for r in sorted(jobs):
            report = regress([worse(jobs[r], k)], [base], subject=f"seed {r}",
                             baseline_name="bench", baseline_run_id="bench", aa=aa,
                             other_seeds=True)
            counts[report.outcome] += 1
            flips.append(report.flag_counts()["pass"])
            if report.outcome is not (Outcome.SHIP if k == 0 else Outcome.DO_NOT_SHIP):
                why.append(f"seed {r}: {report.decision}: {report.reasons()}")
            expected = report.expected.get("pass", math.nan)
        row = {"no_regression": counts[Outcome.SHIP], "regression": counts[Outcome.DO_NOT_SHIP],
               "not_ruled_out": counts[Outcome.INCONCLUSIVE], "checks": len(jobs),
               "pass_to_fail_mean": float(np.mean(flips)), "pass_to_fail": flips,
               "pass_to_fail_expected": expected, "misses": why}
        out["scenarios"][name] = row
        print(f"{name:10s} {row['no_regression']:9d} {row['regression']:6d} "
              f"{row['not_ruled_out']:8d} {row['pass_to_fail_mean']:18.1f} {expected:9.1f}")
    out["seconds"] = time.perf_counter() - t0
    print(f"({out['seconds']:.0f} s). Targets: unchanged >= 19/20 no regression, flips near the "
          "expected count; twice >= 18/20 regression (regression or not ruled out fails the gate)")
    save("regress", out)


if __name__ == "__main__":
    main()
