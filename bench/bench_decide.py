"""Time to a decision: the README sweep, seed by seed, with tracking on.

    python bench/bench_decide.py [--seeds 0,1,2,3,4] [--args "-m scorer=weights,prompt,online"]
    python bench/bench_decide.py --quick     # one seed of a two-variant sweep on 24 cases

For each seed: wall and CPU time (fresh MLflow store and caches, the pool's
case files as a returning user has them), each variant's verdict and the
cases it used (where the sequential study stopped it). Each seed's sweep is
paired with the reference floor run just before it: a plain Hydra multirun of
20 empty jobs, each logging 30 params and 20 metrics to a fresh SQLite store
(``_empty_multirun.py``). The machine's speed drifts within a session (the
floor has read 6.5-8.2 s in one hour here), so each sweep is divided by its
own neighbour, not by one floor for all. Targets: at least 13 of the 15
(variant, seed) verdicts decisive; each sweep at most 60 s wall on 2 cores
and at most 4x its empty multirun. Writes bench/results/decide.json.
"""

from __future__ import annotations

import argparse
import re
import shlex
import statistics

from _results import save  # bench/ helper
from _sweeps import empty_multirun, run_sweep

DEFAULT = "-m scorer=weights,prompt,online"
QUICK = "-m scorer=heuristic,weights cases_per_block=8 suite.max_cases=24"
STOPS = re.compile(r"(\S+=\S+) stops after block (\d+): (\w+)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--args", default=DEFAULT)
    parser.add_argument("--quick", action="store_true", help="seed 0 of a 24-case sweep (CI smoke)")
    ns = parser.parse_args()
    seeds = [0] if ns.quick else [int(s) for s in ns.seeds.split(",")]
    args = shlex.split(QUICK if ns.quick else ns.args)
    out: dict = {"args": args, "seeds": {}}
    block = 8 if ns.quick else 40
    for seed in seeds:
        floor = empty_multirun()
        run = run_sweep([*args, f"seed={seed}"])
        stops = {v: (int(b) * block, kind) for v, b, kind in STOPS.findall("\n".join(run.lines))}
        verdicts = dict(v.split(": ", 1) for v in run.verdicts)
        out["seeds"][seed] = {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "jobs": run.jobs,
                              "empty_multirun_s": floor, "wall_over_empty": run.wall_s / floor,
                              "verdicts": verdicts, "cases_used": {v: c for v, (c, _) in stops.items()}}
        print(f"seed {seed}: {run.wall_s:5.1f} s wall ({run.wall_s / floor:.2f}x its empty multirun, "
              f"{floor:.1f} s), {run.cpu_s:5.1f} s CPU, {run.jobs} jobs; "
              + "; ".join(f"{v}: {k} ({stops.get(v, ('?',))[0]} cases)" for v, k in verdicts.items()),
              flush=True)
    rows = out["seeds"].values()
    walls = [r["wall_s"] for r in rows]
    floors = [r["empty_multirun_s"] for r in rows]
    ratios = [r["wall_over_empty"] for r in rows]
    decided = sum(k != "inconclusive" for r in rows for k in r["verdicts"].values())
    total = sum(len(r["verdicts"]) for r in rows)
    out.update({"empty_multirun_s": statistics.median(floors), "decisive": decided, "verdicts": total,
                "max_wall_s": max(walls), "median_wall_s": statistics.median(walls),
                "max_wall_over_empty": max(ratios)})
    print(f"{decided}/{total} verdicts decisive; wall max {max(walls):.1f} s, median "
          f"{statistics.median(walls):.1f} s; empty Hydra + MLflow multirun {min(floors):.1f}-"
          f"{max(floors):.1f} s (max ratio {max(ratios):.2f}x, each sweep to its own). "
          "Targets: >= 13/15, <= 60 s, <= 4x")
    save("decide", out)


if __name__ == "__main__":
    main()
