"""Hydra launchers on one sweep: basic (one process) vs silas (the default:
forked workers, n_jobs=2) vs joblib (n_jobs=2) [vs ray, where
hydra-ray-launcher is installed].

    python bench/bench_launchers.py                      # CPU-bound workload (the target)
    python bench/bench_launchers.py --workload default   # the shipped default suite
    python bench/bench_launchers.py --launchers basic,ray   # from an env with the [ray] extra
    python bench/bench_launchers.py --quick              # 1 run each of a 2-job smoke sweep (CI)

Workloads (both: scorer=heuristic,weights,prompt,online × repeats=5, tracking on,
so the background uploader shares the machine):

* ``cpu``: the default suite's case mix with sessions ``--scale`` times longer
  (generated deterministically into a temporary folder); at the default scale 8
  each job replays for ~9 s and the sweep is bound by job CPU, not by fixed costs.
* ``default``: the shipped suite; jobs take ~0.7 s, so the serial parts
  (interpreter start, the sweeper's config check before launch, the ablation
  report) and the background uploader weigh more.

``--quick`` runs a tiny sweep instead (``scorer=heuristic,weights repeats=1
suite=smoke``, tracking off, once per launcher): it checks that the launchers
work, its figures say nothing about speed.

Target on 2 cores: silas and joblib >= 1.6x faster than basic on the CPU-bound
workload (two CPU-bound processes here run ~10 % slower each than one alone:
1.8x is the ceiling).
Writes bench/results/launchers-<workload>.json (launchers-quick.json).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from _results import save  # bench/ helper
from _sweeps import run_sweep

SWEEP = "-m scorer=heuristic,weights,prompt,online repeats=5"
QUICK = "-m scorer=heuristic,weights repeats=1 suite=smoke tracking=none"
LAUNCHERS = {
    "basic": ["hydra/launcher=basic"],
    "silas": ["hydra/launcher=silas", "hydra.launcher.n_jobs=2"],
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    "ray": ["hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2"],
}


def make_cpu_suite(root: Path, scale: int) -> Path:
    """The default suite's mix, sessions ``scale`` times longer (deterministic)."""
    from silas_exp.data.suites.build import SHIPPED, write_suite

    recipe = next(r for r in SHIPPED if r.name == "default")
    longer = replace(recipe, name=f"default_x{scale}",
                     mix=tuple(replace(m, turns=m.turns * scale) for m in recipe.mix))
    return write_suite(longer, root)


def wall(args: list[str], launcher: str, suite_path: Path | None) -> tuple[float, list[float]]:
    extra = [f"suite.path={suite_path}"] if suite_path is not None else []
    run = run_sweep([*args, *LAUNCHERS[launcher], *extra])
    return run.wall_s, run.job_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--workload", choices=("cpu", "default"), default="cpu")
    parser.add_argument("--scale", type=int, default=8,
                        help="session length factor (cpu workload; 8 gives ~9 s jobs)")
    parser.add_argument("--args", default=SWEEP, help=f"sweep arguments (default: {SWEEP!r})")
    parser.add_argument("--launchers", default="basic,silas,joblib",
                        help="comma list of basic,silas,joblib,ray")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help=f"1 run each of {QUICK!r} (CI smoke)")
    ns = parser.parse_args()
    if ns.quick:
        ns.workload, ns.args, ns.runs = "quick", QUICK, 1
    chosen = ns.launchers.split(",")
    unknown = set(chosen) - set(LAUNCHERS)
    if unknown or "basic" not in chosen:
        parser.error(f"--launchers must include basic and name only {sorted(LAUNCHERS)}")
    args = shlex.split(ns.args)
    results: dict = {"workload": ns.workload, "command": "python -m silas_exp " + ns.args,
                     "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as suites:
        suite_path = make_cpu_suite(Path(suites), ns.scale) if ns.workload == "cpu" else None
        if suite_path is not None:
            results["suite"] = f"default mix, sessions x{ns.scale} ({suite_path.name})"
        for name in chosen:
            runs = [wall(args, name, suite_path) for _ in range(ns.runs)]
            times = sorted(t for t, _ in runs)
            job_s = [s for _, jobs in runs for s in jobs]
            results[name] = {"best_s": times[0], "runs_s": times,
                             "job_mean_s": statistics.fmean(job_s) if job_s else None}
            print(f"{name:7s} best {times[0]:6.2f} s  runs {[round(t, 2) for t in times]}  "
                  f"mean job {results[name]['job_mean_s'] or float('nan'):.2f} s", flush=True)
    for name in chosen:
        if name != "basic":
            results[f"speedup_{name}"] = results["basic"]["best_s"] / results[name]["best_s"]
            print(f"speed-up {name} vs basic: {results[f'speedup_{name}']:.2f}x"
                  + (" (target >= 1.6x on the cpu workload)" if name in ("silas", "joblib") else ""))
    print("saved", save(f"launchers-{ns.workload}", results))


if __name__ == "__main__":
    main()
