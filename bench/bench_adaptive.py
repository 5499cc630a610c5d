"""Adaptive repeats (repeats=auto): error rates, power and repeats used, by
simulation; optionally jobs saved and verdict agreement on real sweeps.

    python bench/bench_adaptive.py [--sims 300] [--ablation-seeds 0,1,2] [--quick]

Simulation: 18 cases, per-case effect sd 0.02 shared by a case's repeats,
repeat noise sd 0.03, margin 0.02; looks after rounds 2 and 4 and at
repeats_max=5 (Bonferroni alpha spending, per-look confidence 98.3 %),
conditional-power futility. Compared with fixed N=5 at 95 %.
--ablation-seeds runs the README ablation (scorer=weights,prompt,online, the
control added by the sweep) with repeats=auto repeats_max=5 and with fixed
repeats=5 for each seed, tracking off, and reports jobs and verdicts.
Writes bench/results/adaptive.json.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from _results import save  # bench/ helper

from silas_exp.stats import MetricCall
from silas_exp.stats.simulation import Scenario, simulate_adaptive, simulate_calls

REPO = Path(__file__).resolve().parents[1]
VERDICT = re.compile(r"^  (\S+): (ship|do not ship|inconclusive) —", re.M)


def sweep(seed: int, repeats: str, tmp: str) -> tuple[int, dict[str, str]]:
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    out = subprocess.run(
        [sys.executable, "-m", "silas_exp", "-m", "scorer=weights,prompt,online",
         f"repeats={repeats}", "repeats_max=5", f"seed={seed}", "tracking=none",
         f"hydra.sweep.dir={tmp}/s{seed}-{repeats}"],
        cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
    jobs = len(re.findall(r"^\[job \d+\]", out, re.M))
    return jobs, dict(VERDICT.findall(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--sims", type=int, default=300)
    parser.add_argument("--ablation-seeds", default="")
    parser.add_argument("--quick", action="store_true", help="20 simulations, no sweeps")
    ns = parser.parse_args()
    sims = 20 if ns.quick else ns.sims
    out: dict = {"sims": sims, "scenarios": {}}
    print(f"{'scenario':10s} {'ship':>6s} {'stop':>6s} {'mean repeats':>13s} | fixed N=5 ship stop")
    for name, delta in (("identical", 0.0), ("boundary", -0.02), ("worse", -0.04)):
        s = Scenario(delta, 0.02, case_sd=0.02, n_repeats=5)
        a = simulate_adaptive(s, 2, 5, n_sims=sims, seed=7)
        f = simulate_calls(s, n_sims=sims, seed=7)
        out["scenarios"][name] = {"adaptive": a, "fixed": {k.value: v for k, v in f.items()}}
        print(f"{name:10s} {a['non-inferior']:6.3f} {a['worse beyond margin']:6.3f} "
              f"{a['mean_repeats']:13.2f} | {f[MetricCall.NONINFERIOR]:.3f} "
              f"{f[MetricCall.INFERIOR]:.3f}")
    seeds = [int(x) for x in ns.ablation_seeds.split(",") if x] if not ns.quick else []
    if seeds:
        import tempfile

        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for seed in seeds:
                (ja, va), (jf, vf) = sweep(seed, "auto", tmp), sweep(seed, "5", tmp)
                same = sum(va.get(v) == vf.get(v) for v in vf)
                rows.append({"seed": seed, "jobs_auto": ja, "jobs_fixed": jf,
                             "verdicts_auto": va, "verdicts_fixed": vf, "agree": same})
                print(f"seed {seed}: {ja}/{jf} jobs, verdicts agree {same}/{len(vf)}: {va} vs {vf}")
        out["ablation"] = rows
        share = sum(r["jobs_auto"] for r in rows) / sum(r["jobs_fixed"] for r in rows)
        out["jobs_share"] = share
        print(f"jobs: {share:.0%} of fixed N=5 (target <= 60%)")
    save("adaptive", out)


if __name__ == "__main__":
    main()
