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
--real-model runs scorer=weights,prompt on suite=chronicle_keepback with the
Claude backend (the real anthropic SDK) against the local Messages API server
of the tests, once adaptive and once fixed, each with a cold answer cache, and
counts the API requests the server received.
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


def sweep(seed: int, repeats: str, tmp: str, extra: tuple[str, ...] = (),
          variants: str = "scorer=weights,prompt,online") -> tuple[int, dict[str, str]]:
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.run(
        [sys.executable, "-m", "silas_exp", "-m", variants,
         f"repeats={repeats}", "repeats_max=5", f"seed={seed}", "tracking=none",
         f"hydra.sweep.dir={tmp}/s{seed}-{repeats}", f"paths.cache={tmp}/cache-{seed}-{repeats}",
         *extra], cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"sweep failed:\n{proc.stderr[-3000:]}")
    out = proc.stdout
    jobs = len(re.findall(r"^\[job \d+\]", out, re.M))
    return jobs, dict(VERDICT.findall(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--sims", type=int, default=300)
    parser.add_argument("--ablation-seeds", default="")
    parser.add_argument("--real-model", action="store_true",
                        help="also measure API requests saved against the local server")
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
    if ns.real_model and not ns.quick:
        out["real_model"] = real_model()
    save("adaptive", out)


def real_model() -> dict:
    import tempfile

    sys.path.insert(0, str(REPO))
    from tests.fakes.messages_server import API_KEY, FakeMessagesServer

    os.environ["ANTHROPIC_API_KEY"] = API_KEY
    result = {}
    with FakeMessagesServer(latency_s=0.005) as srv, tempfile.TemporaryDirectory() as tmp:
        extra = ("suite=chronicle_keepback", "model=claude-haiku-4-5",
                 f"llm.base_url={srv.base_url}")
        for repeats in ("auto", "5"):
            before = srv.message_requests
            jobs, verdicts = sweep(0, repeats, tmp, extra, "scorer=weights,prompt")
            result[repeats] = {"jobs": jobs, "api_requests": srv.message_requests - before,
                               "verdicts": verdicts}
            print(f"real model, repeats={repeats}: {jobs} jobs, "
                  f"{result[repeats]['api_requests']} API requests, verdicts {verdicts}")
    result["requests_share"] = result["auto"]["api_requests"] / result["5"]["api_requests"]
    print(f"API requests: {result['requests_share']:.0%} of fixed N=5")
    return result


if __name__ == "__main__":
    main()
