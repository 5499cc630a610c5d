"""Wall and CPU time of the default sweep, with MLflow tracking and without,
and the tracking overhead.

    python bench/bench_sweep.py [--runs 3] [--args "-m scorer=weights,prompt,online"]
    python bench/bench_sweep.py --quick      # 1 pair of a 2-job sweep on the smoke suite

Targets (2 cores): <= 8 s wall for the default sweep (the three calibrated
variants plus the control the sweep adds, 5 repeats: 20 jobs) with tracking on;
tracking overhead, wall(tracking on) / wall(tracking=none) - 1, <= 10 %.

Runs come in pairs, one with tracking and one without, in alternating order
(none/mlflow, mlflow/none, ...), so a machine that gets busier or quieter
during the bench weighs on both alike. Each run starts in a fresh temporary
root (fresh SQLite store, cold LLM and calibration caches), as a newcomer's
first run would. CPU time is user + system of the sweep and of every process
it waited for (the background uploader): on a shared machine it says more
than wall time. The breakdown comes from when the sweep's lines arrive:
start-up until the first job, the jobs (their own time and the rest), and the
end (summary, ablation report, waiting for the uploader). Both modes must
print the same verdicts. Writes bench/results/sweep.json.
"""

from __future__ import annotations

import argparse
import shlex
import statistics

from _results import save  # bench/ helper
from _sweeps import medians, run_sweep

DEFAULT = "-m scorer=weights,prompt,online"
QUICK = "-m scorer=heuristic,weights repeats=1 suite=smoke"
MODES = ("none", "mlflow")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--args", default=DEFAULT, help=f"sweep arguments (default: {DEFAULT!r})")
    parser.add_argument("--quick", action="store_true", help=f"1 pair of {QUICK!r} (CI smoke)")
    ns = parser.parse_args()
    if ns.quick:
        ns.runs, ns.args = 1, QUICK
    args = shlex.split(ns.args)
    runs: dict[str, list] = {mode: [] for mode in MODES}
    for i in range(ns.runs):
        for mode in MODES if i % 2 == 0 else MODES[::-1]:
            run = run_sweep([*args, f"tracking={mode}"])
            runs[mode].append(run)
            print(f"pair {i}  tracking={mode:6s} wall {run.wall_s:6.2f} s  cpu {run.cpu_s:6.2f} s",
                  flush=True)
    results: dict = {"command": "python -m silas_exp " + ns.args, "pairs": ns.runs}
    for mode in MODES:
        results[mode] = medians(runs[mode])
    on, off = runs["mlflow"], runs["none"]
    results["tracking_overhead"] = results["mlflow"]["wall_s"] / results["none"]["wall_s"] - 1
    results["tracking_overhead_paired"] = statistics.median(
        a.wall_s / b.wall_s - 1 for a, b in zip(on, off, strict=True))
    results["tracking_overhead_cpu"] = results["mlflow"]["cpu_s"] / results["none"]["cpu_s"] - 1
    results["same_verdicts"] = all(r.verdicts == off[0].verdicts for r in on + off)
    print(f"\n{'median':22s} {'none':>8s} {'mlflow':>8s}")
    for key, label in (("wall_s", "wall"), ("cpu_s", "cpu (incl. uploader)"),
                       ("startup_s", "start-up"), ("jobs_s", "jobs"),
                       ("job_own_s", "  jobs' own time"), ("end_s", "end of sweep")):
        cells = [results[m][key] for m in MODES]
        print(f"{label:22s} " + " ".join("     n/a" if c is None else f"{c:7.2f}s" for c in cells))
    print(f"tracking overhead: {results['tracking_overhead']:+.1%} wall (medians), "
          f"{results['tracking_overhead_paired']:+.1%} (median of pairs), "
          f"{results['tracking_overhead_cpu']:+.1%} cpu; target <= 10 %; wall target <= 8 s")
    if not results["same_verdicts"]:
        print("warning: the two modes printed different verdicts")
    print("saved", save("sweep", results))


if __name__ == "__main__":
    main()
