"""Error rates and power of the ship rule, by simulation.

    python bench/bench_verdict.py [--sims 500] [--quick]

Each simulated ablation has 18 cases x 5 repeats (the default suite's shape),
a per-case effect shared by a case's repeats (correlated repeats) and
repeat noise; the rule is the one the ablation applies to a gated metric:
the paired interval of a bounded score at 95%, worse-side bound against the margin.

Scenarios (margin 0.02):
  identical  delta = 0            ship = power; do-not-ship must be ~0
  boundary   delta = -margin      ship is the error: must be <= 2.5% (one-sided level)
  worse      delta = -2 x margin  do-not-ship = power to stop a real loss
and "bootstrap" repeats the boundary case with the expanded cluster bootstrap.
Writes bench/results/verdict.json.
"""

from __future__ import annotations

import argparse
import time

from _results import save  # bench/ helper

from silas_exp.stats import MetricCall
from silas_exp.stats.simulation import Scenario, simulate_calls

MARGIN = 0.02


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--case-sd", type=float, default=0.03)
    parser.add_argument("--quick", action="store_true", help="20 simulations (a CI smoke run)")
    ns = parser.parse_args()
    sims = 20 if ns.quick else ns.sims
    scenarios = {
        "identical": (Scenario(0.0, MARGIN, case_sd=ns.case_sd), True),
        "boundary": (Scenario(-MARGIN, MARGIN, case_sd=ns.case_sd), True),
        "worse": (Scenario(-2 * MARGIN, MARGIN, case_sd=ns.case_sd), True),
        "boundary_bootstrap": (Scenario(-MARGIN, MARGIN, case_sd=ns.case_sd), False),
        "boundary_6_cases": (Scenario(-MARGIN, MARGIN, n_cases=6, case_sd=ns.case_sd), True),
        "boundary_6_cases_bootstrap": (Scenario(-MARGIN, MARGIN, n_cases=6, case_sd=ns.case_sd),
                                       False),
    }
    out = {"sims": sims, "margin": MARGIN, "case_sd": ns.case_sd, "scenarios": {}}
    print(f"{'scenario':24s} {'ship':>6s} {'do not':>7s} {'inconcl.':>9s}")
    t0 = time.perf_counter()
    for name, (s, verdict_interval) in scenarios.items():
        interval = "verdict" if verdict_interval else "bootstrap"
        r = simulate_calls(s, n_sims=sims, seed=11, interval=interval)
        row = {"delta": s.delta, "n_cases": s.n_cases, "interval": interval,
               "ship": r[MetricCall.NONINFERIOR], "do_not_ship": r[MetricCall.INFERIOR],
               "inconclusive": r[MetricCall.UNDECIDED]}
        out["scenarios"][name] = row
        print(f"{name:24s} {row['ship']:6.3f} {row['do_not_ship']:7.3f} {row['inconclusive']:9.3f}")
    out["seconds"] = time.perf_counter() - t0
    print(f"({sims} simulated ablations per scenario, {out['seconds']:.1f} s); declared: "
          "ship at the boundary <= 0.025")
    save("verdict", out)


if __name__ == "__main__":
    main()
