"""Wall and CPU time of the default sweep, with MLflow tracking and without,
and the tracking overhead.

    python bench/bench_sweep.py [--runs 3] [--args "-m scorer=weights,prompt,online"]
    python bench/bench_sweep.py --quick      # 1 pair of a 2-job sweep on the smoke suite
    python bench/bench_sweep.py --against /tmp/base [--runs 3] [--keep DIR]
        # this tree's code against another checkout's (git worktree add --detach /tmp/base main)

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

``--against TREE`` measures the sweep (``tracking`` as the command gives it:
on) of this tree's code and of the checkout in TREE, alternating which goes
first, each pair beside an empty Hydra + MLflow multirun of 20 jobs
(``_empty_multirun.py``) run just before it: the ratio of each sweep to its
own floor, and of this tree to TREE, per pair. One untimed sweep of each
tree first (numba's cache of each tree's loop). ``--keep DIR``: the first
pair's sweep folders, for ``scripts/compare_sweeps.py``. Wrap it in
``flock /work/.bench.lock`` on a shared machine. Writes bench/results/sweep_against.json.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
from pathlib import Path

from _results import save  # bench/ helper
from _sweeps import empty_multirun, medians, run_sweep

DEFAULT = "-m scorer=weights,prompt,online"
QUICK = "-m scorer=heuristic,weights repeats=1 suite=smoke"
MODES = ("none", "mlflow")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--args", default=DEFAULT, help=f"sweep arguments (default: {DEFAULT!r})")
    parser.add_argument("--quick", action="store_true", help=f"1 pair of {QUICK!r} (CI smoke)")
    parser.add_argument("--against", type=Path, default=None, metavar="TREE",
                        help="pair this tree with the checkout in TREE (a git worktree of another commit)")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="with --against: keep the first pair's sweep folders under DIR")
    ns = parser.parse_args()
    if ns.against is not None:
        against(ns)
        return
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


def against(ns: argparse.Namespace) -> None:
    """This tree against the checkout ``ns.against``: ``ns.runs`` pairs, each sweep
    beside an empty multirun measured just before it."""
    args = shlex.split(ns.args)
    trees = {"before": ns.against.resolve(), "after": None}
    for tree in trees.values():  # numba's cache of each tree's loop, untimed
        run_sweep([*args, "tracking=none", "cases_per_block=8", "suite.max_cases=8"], tree=tree)
    pairs = []
    for i in range(ns.runs):
        pair: dict = {}
        for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
            floor = empty_multirun()
            keep = ns.keep / name if ns.keep is not None and i == 0 else None
            run = run_sweep(args, tree=trees[name], keep=keep)
            pair[name] = {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "empty_multirun_s": floor,
                          "ratio_to_empty": run.wall_s / floor, "jobs": run.jobs,
                          "verdicts": run.verdicts}
            print(f"pair {i + 1} {name:6s} wall {run.wall_s:6.1f} s, cpu {run.cpu_s:6.1f} s, {run.jobs} jobs; "
                  f"empty multirun {floor:5.1f} s: {run.wall_s / floor:.2f}x", flush=True)
        pair["after_over_before"] = pair["after"]["wall_s"] / pair["before"]["wall_s"]
        pairs.append(pair)
    result = {"command": "python -m silas_exp " + ns.args, "against": str(trees["before"]),
              "pairs": pairs, "same_verdicts": all(p["before"]["verdicts"] == p["after"]["verdicts"]
                                                   for p in pairs)}
    for name in ("before", "after"):
        result[name] = {k: statistics.median(p[name][k] for p in pairs)
                        for k in ("wall_s", "cpu_s", "empty_multirun_s", "ratio_to_empty")}
    result["after_over_before"] = statistics.median(p["after_over_before"] for p in pairs)
    print(f"median: before {result['before']['wall_s']:.1f} s ({result['before']['ratio_to_empty']:.2f}x "
          f"its empty multirun), after {result['after']['wall_s']:.1f} s "
          f"({result['after']['ratio_to_empty']:.2f}x); after/before {result['after_over_before']:.2f} "
          f"(goal: <= 2x the empty multirun); same verdicts: {result['same_verdicts']}")
    print("saved", save("sweep_against", result))


if __name__ == "__main__":
    main()
