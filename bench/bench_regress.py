"""How often `silas-exp regress` is right, on real replays, at the baseline's size.

    python bench/bench_regress.py [--cases 320] [--seeds 20] [--config scorer=weights]
                                  [--nudge scorer.l2=25] [--quick]
    python bench/bench_regress.py --code [--code-seeds 5] [--harmless 10] [--pool 160]

``--code`` checks a change of *code* instead, end to end in a scratch clone
(bench/_code_gate.py: a promoted baseline, an injected code regression checked
every way, the same code without it, a harmless change with real noise, a
40-case baseline the gate must grow, a study of another suite); it writes
bench/results/regress_code.json. Without it:

1. Real jobs (``run_grid``, the simulated LLM, the regress command's own
   runner) replay, on the first ``--cases`` cases of the default pool: the
   baseline (``--config``, repeat 0, seed 0); the same configuration under
   ``--seeds`` other seeds (repeats 1..N: the same cases, other random
   streams), each the concurrent control of a check under that seed; and a
   nudged configuration (``--config`` plus ``--nudge``, a small change of no
   intended effect) under the same other seeds.
2. Scenarios, each checked with ``regress`` (the verdict rule at the gated
   margins) against the baseline under each other seed, as
   ``regress --config … --seeds-from N`` decides it (against the baseline's
   configuration under the same seeds; the flags against the logged results):
     unchanged  the configuration as it is: "no regression" (target >= 19 of
                20), its pass → fail flags near the expected count. The
                simulated replay is deterministic in its seed, so under the
                same seeds an unchanged configuration equals its control:
                this scenario checks the pairing, and its flags the seeds'
                own noise against the logged results.
     nudged     the nudged configuration: a real change, with its own case
                noise, of no intended effect (what a false alarm looks like)
     twice      the configuration made worse by twice the gated margins, as
                in bench_verdict_e2e (relevance −0.04, nDCG@10 −0.06, tokens
                per served need +10 %, pass recomputed): "regression"
                (target >= 18 of 20)
     logged     for reference, the rule without a concurrent control: the
                unchanged configuration against the logged results alone,
                where a shift drawn once per job from the seed (the weights
                scorer's calibration) counts as a change
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
from silas_exp.gate.jobs import GridJob, run_grid
from silas_exp.gate.report import regress
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
    parser.add_argument("--nudge", nargs="+", default=["scorer.l2=25"],
                        help="overrides added to --config for the nudged scenario")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--jobs", type=Path, default=None,
                        help="keep the replays in this file (reused when it exists)")
    parser.add_argument("--quick", action="store_true",
                        help="a CI smoke run: 12 cases, 3 other seeds")
    parser.add_argument("--code", action="store_true",
                        help="check code changes in a scratch clone instead (module docstring)")
    parser.add_argument("--code-seeds", type=int, default=5,
                        help="--code: other seeds (--seeds-from 1..N) and studies under them")
    parser.add_argument("--harmless", type=int, default=10,
                        help="--code: checks of the harmless change (scorer.l2=21)")
    parser.add_argument("--pool", type=int, default=160,
                        help="--code: the pool the studies draw from (suite.max_cases)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="--code: the scratch folder (kept; default: a temporary one)")
    ns = parser.parse_args()
    if ns.code:
        code(ns)
        return
    if ns.quick:
        ns.cases, ns.seeds = 12, 3
    design = ["cases_per_block=null", f"suite.max_cases={ns.cases}", "seed=0",
              "llm.cache_mode=off"]
    t0 = time.perf_counter()
    seeds = range(1, ns.seeds + 1)
    if ns.jobs and ns.jobs.exists():
        jobs, nudged = pickle.loads(ns.jobs.read_bytes())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            jobs = {j.repeat: j for j in run_grid([*design, *ns.config],
                                                  [GridJob(r, r, 0) for r in (0, *seeds)],
                                                  Path(tmp) / "control", ns.workers)}
            nudged = {j.repeat: j for j in run_grid([*design, *ns.config, *ns.nudge],
                                                    [GridJob(r, r, 0) for r in seeds],
                                                    Path(tmp) / "nudged", ns.workers)}
        if ns.jobs:
            ns.jobs.write_bytes(pickle.dumps((jobs, nudged)))
    replay_s = time.perf_counter() - t0
    base = jobs.pop(0)
    for j in (*jobs.values(), *nudged.values()):
        j.repeat = 0  # each pairs with the baseline's repeat 0
    out = {"cases": ns.cases, "seeds": ns.seeds, "config": ns.config, "nudge": ns.nudge,
           "replay_seconds": replay_s, "scenarios": {}}
    print(f"{ns.cases} cases, {ns.seeds} other seeds, config {' '.join(ns.config)}, nudge "
          f"{' '.join(ns.nudge)} (replays: {replay_s:.0f} s)")
    print(f"{'scenario':10s} {'no regr.':>9s} {'regr.':>6s} {'not r/o':>8s} "
          f"{'pass->fail (mean)':>18s} {'expected':>9s}")
    scenarios = (("unchanged", lambda r: jobs[r], True, Outcome.SHIP),
                 ("nudged", lambda r: nudged[r], True, Outcome.SHIP),
                 ("twice", lambda r: worse(jobs[r], 2.0), True, Outcome.DO_NOT_SHIP),
                 ("logged", lambda r: jobs[r], False, Outcome.SHIP))
    for name, checked, concurrent, wanted in scenarios:
        counts = {o: 0 for o in Outcome}
        flips, expected, why = [], [], []
        for r in seeds:
            report = regress([checked(r)], [base], subject=f"seed {r}", baseline_name="bench",
                             baseline_run_id="bench", control=[jobs[r]] if concurrent else (),
                             aa=[] if concurrent else [jobs[r % ns.seeds + 1]])
            counts[report.outcome] += 1
            flips.append(report.flag_counts()["pass"])
            expected.append(report.expected.get("pass", math.nan))
            if report.outcome is not wanted:
                why.append(f"seed {r}: {report.decision}: {report.reasons()}")
        row = {"no_regression": counts[Outcome.SHIP], "regression": counts[Outcome.DO_NOT_SHIP],
               "not_ruled_out": counts[Outcome.INCONCLUSIVE], "checks": ns.seeds,
               "pass_to_fail_mean": float(np.mean(flips)), "pass_to_fail": flips,
               "pass_to_fail_expected_mean": float(np.nanmean(expected)), "misses": why}
        out["scenarios"][name] = row
        print(f"{name:10s} {row['no_regression']:9d} {row['regression']:6d} "
              f"{row['not_ruled_out']:8d} {row['pass_to_fail_mean']:18.1f} "
              f"{row['pass_to_fail_expected_mean']:9.1f}")
        for line in why[:3]:
            print(f"    {line}")
    out["seconds"] = time.perf_counter() - t0
    print(f"({out['seconds']:.0f} s). Targets: unchanged >= 19/20 no regression, flips near the "
          "expected count; twice >= 18/20 regression (regression or not ruled out fails the gate)")
    save("regress", out)


def code(ns: argparse.Namespace) -> None:
    from _code_gate import run_code_scenarios, summary

    repo = Path(__file__).resolve().parents[1]
    if ns.keep:
        ns.keep.mkdir(parents=True, exist_ok=True)
        out = run_code_scenarios(repo, ns.keep, ns.code_seeds, ns.harmless, ns.workers, ns.pool)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = run_code_scenarios(repo, Path(tmp), ns.code_seeds, ns.harmless, ns.workers,
                                     ns.pool)
    for line in summary(out):
        print(line)
    for check in [*out["scenarios"].get("first_block_baseline", []),
                  *out["scenarios"].get("first_block_grows", [])]:
        print(f"{check['what']}:")
        for line in check["lines"]:
            print(f"    {line}")
    print(f"({out['seconds']:.0f} s)")
    save("regress_code", out)


if __name__ == "__main__":
    main()
