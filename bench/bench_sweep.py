"""Wall time of the default sweep, with MLflow tracking and without.

    python bench/bench_sweep.py [--runs 3] [--args "-m scorer=weights,prompt,online"]

Targets (2 cores): <= 15 s wall for the default 3-variant x 5-repeat sweep;
tracking overhead <= 10 %. Each measurement runs in a fresh temporary root
(fresh SQLite store, cold LLM cache), as a newcomer's first run would.
Writes bench/results/sweep.json.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]


def one_run(args: list[str], tracking: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "SILAS_EXP_ROOT": tmp}
        cmd = [sys.executable, "-m", "silas_exp", *args, f"tracking={tracking}",
               f"paths.suites={REPO / 'suites'}", f"hydra.sweep.dir={tmp}/multirun"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(f"sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--args", default="-m scorer=weights,prompt,online")
    ns = parser.parse_args()
    args = shlex.split(ns.args)
    results = {}
    for tracking in ("none", "mlflow"):
        times = [one_run(args, tracking) for _ in range(ns.runs)]
        results[tracking] = {"median_s": statistics.median(times), "runs_s": times}
        print(f"tracking={tracking:6s} median {statistics.median(times):6.2f} s  runs {times}")
    overhead = results["mlflow"]["median_s"] / results["none"]["median_s"] - 1
    results["tracking_overhead"] = overhead
    results["command"] = "python -m silas_exp " + ns.args
    print(f"tracking overhead: {overhead:+.1%} (target <= 10%); wall target <= 15 s")
    save("sweep", results)


if __name__ == "__main__":
    main()
