"""Hydra launchers on a CPU-bound sweep: basic (one process) vs joblib
(n_jobs=2) [vs ray, if hydra-ray-launcher is installed].

    python bench/bench_launchers.py [--args "-m scorer=heuristic,weights,prompt,online repeats=5"]

Target on 2 cores: joblib >= 1.6x faster than basic. Tracking on (the
background uploader shares the machine). Writes bench/results/launchers.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]
LAUNCHERS = {
    "basic": [],
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    "ray": ["hydra/launcher=ray", "hydra.launcher.ray.init.num_cpus=2"],
}


def wall(args: list[str], launcher: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "silas_exp", *args, *LAUNCHERS[launcher],
               f"paths.suites={REPO / 'suites'}", f"hydra.sweep.dir={tmp}/ms"]
        env = {**os.environ, "SILAS_EXP_ROOT": tmp, "MLFLOW_DISABLE_TELEMETRY": "true"}
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{launcher} failed:\n{proc.stderr[-2000:]}")
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--args", default="-m scorer=heuristic,weights,prompt,online repeats=5")
    parser.add_argument("--runs", type=int, default=2)
    ns = parser.parse_args()
    args = shlex.split(ns.args)
    chosen = ["basic", "joblib"] + (["ray"] if importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") else [])
    results = {}
    for name in chosen:
        times = sorted(wall(args, name) for _ in range(ns.runs))
        results[name] = {"best_s": times[0], "runs_s": times}
        print(f"{name:7s} best {times[0]:6.2f} s  runs {[round(t, 2) for t in times]}")
    for name in chosen[1:]:
        results[f"speedup_{name}"] = results["basic"]["best_s"] / results[name]["best_s"]
        print(f"speed-up {name} vs basic: {results[f'speedup_{name}']:.2f}x (target >= 1.6x for joblib)")
    results["command"] = "python -m silas_exp " + ns.args
    save("launchers", results)


if __name__ == "__main__":
    main()
