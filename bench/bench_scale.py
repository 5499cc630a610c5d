"""One job on a generated N-case suite: wall time, CPU time and peak RSS.

    python bench/bench_scale.py [--cases 1000 10000] [--tracking none mlflow] [--quick]
                                [--suites data/benchmarks] [--seed 0]

Targets: peak RSS <= 1 GiB for one job on 10,000 cases of realistic length
(``silas-exp generate-suite``: median 120 turns), and time linear in cases
(net CPU per case at the largest N within 1.2x of the smallest N), with
tracking off and on. Each job is ``python -m silas_exp suite.path=<suite>``
in a fresh temporary root (fresh SQLite store, cold caches), run under its
own small wrapper process, so ``getrusage(RUSAGE_CHILDREN)`` gives that job's
CPU time and peak RSS alone. A 1-case job measures the fixed start-up cost
(imports, store, calibration); net CPU per case leaves it out. Generated
suites are kept in ``--suites`` (10,000 cases: ~0.8 GB, ~5 min to generate)
and reused. ``--quick``: 50 and 200 cases of median 40 turns in a temporary
folder, no start-up job (CI smoke, < 60 s).
Writes bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _procs import WRAPPER  # bench/ helper
from _results import save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the checkout this bench sits in, as the jobs it runs

from silas_exp.data.suites.scale import MEDIAN_TURNS, scale_name, write_scale_suite  # noqa: E402

RSS_TARGET_MIB = 1024
LINEAR_TARGET = 1.2


def ensure_suite(root: Path, cases: int, seed: int, median_turns: int) -> tuple[Path, float]:
    """The generated suite (reused when complete) and the seconds spent generating it."""
    folder = root / f"seed{seed}" / scale_name(cases, median_turns)
    if (folder / "suite.json").is_file() and len(list((folder / "cases").glob("*.json"))) == cases + 8:
        return folder, 0.0
    t0 = time.perf_counter()
    out = write_scale_suite(cases, folder.parent, seed, median_turns)
    return out, time.perf_counter() - t0


def folder_mib(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def one_job(suite: Path, tracking: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items()
               if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME")}
        env.update(MLFLOW_DISABLE_TELEMETRY="true", SILAS_EXP_ROOT=tmp)
        cmd = [sys.executable, "-m", "silas_exp", f"suite.path={suite}", f"suite.name={suite.name}",
               f"tracking={tracking}", f"hydra.run.dir={tmp}/run"]
        proc = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], cwd=REPO, env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"wrapper failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        if got["returncode"] != 0:
            sys.exit(f"job failed ({got['returncode']}): {' '.join(cmd)}\n{got['stderr']}")
        return {"wall_s": round(got["wall_s"], 2), "cpu_s": round(got["cpu_s"], 2),
                "peak_rss_mib": round(got["max_rss_kb"] / 1024, 1),
                "output_mib": round(folder_mib(Path(tmp)), 1),
                "line": got["stdout"].strip().splitlines()[0] if got["stdout"].strip() else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--cases", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--tracking", nargs="+", default=["none", "mlflow"], choices=["none", "mlflow"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--median-turns", type=int, default=MEDIAN_TURNS)
    parser.add_argument("--suites", type=Path, default=REPO / "data" / "benchmarks",
                        help="where generated suites are kept (git-ignored by default)")
    parser.add_argument("--no-startup", action="store_true", help="skip the 1-case start-up job")
    parser.add_argument("--quick", action="store_true",
                        help="50 and 200 cases of median 40 turns in a temporary folder (CI smoke)")
    ns = parser.parse_args()
    tmp = tempfile.TemporaryDirectory() if ns.quick else None
    if tmp is not None:
        ns.cases, ns.median_turns, ns.suites, ns.no_startup = [50, 200], 40, Path(tmp.name), True
    sizes = sorted(set(ns.cases) | (set() if ns.no_startup else {1}))
    runs, startup = [], {}  # tracking -> CPU seconds of the 1-case job
    for cases in sizes:
        suite, gen_s = ensure_suite(ns.suites, cases, ns.seed, ns.median_turns)
        for tracking in ns.tracking:
            r = {"cases": cases, "tracking": tracking, **one_job(suite, tracking),
                 "generate_s": round(gen_s, 1), "suite_mib": round(folder_mib(suite), 1)}
            if cases == 1:
                startup[tracking] = r["cpu_s"]
            fixed = startup.get(tracking, 0.0) if cases > 1 else 0.0
            r["cpu_ms_per_case"] = round(1000 * (r["cpu_s"] - fixed) / (cases - (fixed > 0)), 2)
            r["wall_ms_per_case"] = round(1000 * r["wall_s"] / cases, 2)
            runs.append(r)
            print(f"{cases:6d} cases tracking={tracking:6s} wall {r['wall_s']:8.1f} s  cpu "
                  f"{r['cpu_s']:8.1f} s ({r['cpu_ms_per_case']:.1f} ms/case{' net' if fixed else ''})  peak RSS "
                  f"{r['peak_rss_mib']:7.1f} MiB  output {r['output_mib']:.1f} MiB", flush=True)
    linear = {}
    for tracking in ns.tracking:
        mine = [r for r in runs if r["tracking"] == tracking and r["cases"] > 1]
        if len(mine) > 1:
            linear[tracking] = round(mine[-1]["cpu_ms_per_case"] / mine[0]["cpu_ms_per_case"], 3)
    peak = max(r["peak_rss_mib"] for r in runs)
    result = {"runs": runs, "cpu_per_case_ratio": linear, "peak_rss_mib": peak,
              "median_turns": ns.median_turns, "seed": ns.seed, "net_of_startup": not ns.no_startup,
              "targets": {"peak_rss_mib": RSS_TARGET_MIB, "cpu_per_case_ratio": LINEAR_TARGET}}
    print(f"peak RSS {peak:.0f} MiB (target <= {RSS_TARGET_MIB}); CPU per case, largest/smallest N: "
          f"{linear} (target <= {LINEAR_TARGET})")
    save("scale", result)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
