"""Tuning on a null search space: how often certification ships a config that
is worse than the margin, and how much the best trial's training gain shrinks
on held-out cases (the winner's curse, DESIGN §3).

    python bench/bench_tune.py [--studies 160] [--trials 12] [--cases 120] [--block 20] [--quick]
    python bench/bench_tune.py --replays simulated [--studies 200] [--trials 20] [--cases 200]

``--replays real`` (the default): each seeded study is the real loop of
``experiment=tune`` in process (split, Optuna TPE with pruning, certification
in blocks of ``--block`` held-out cases with looks), its jobs served from real
replays of the pool shared by every study (bench/_tune_replays.py says how):
the control is a real control replay; every configuration, the untuned one
included, is another real replay of the control drawn by its searched values,
in ``at_margin`` made worse by exactly every continuous gated metric's margin
(bench_verdict_e2e's perturbation). The gate is the default one (relevance,
nDCG@10, tokens per served need, pass, errors).

``--replays simulated``: the search space is one setting that changes nothing
but adds noise: every configuration's per-case relevance is the case's own
level, plus the scenario's true effect, plus noise of its own (a
configuration × case part that repeats do not average out, and a per-repeat
part). A real Optuna TPE study searches it on the training cases of a real
stratified split (silas_exp.tune.split); the best trial is certified on the
held-out cases in one block by the real certification (silas_exp.tune.certify:
the verdict rule at the Bonferroni confidence for k candidates), against a
control and beside the untuned setting (the first trial). Gate: retrieval
relevance (pass and errors are constant here). Simulated replays, real decisions.

Scenarios: ``equal`` (every config equals the control: the study should not
find a gain that holds) and ``at_margin`` (every config is worse than the
control by exactly the margin: certification may ship it at most 2.5 % of
the time, the rule's one-sided level).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_verdict_e2e's own imports

from bench._results import save  # noqa: E402
from silas_exp.analysis.data import JobData, SweepData  # noqa: E402
from silas_exp.analysis.settings import AnalysisSettings  # noqa: E402
from silas_exp.metrics.registry import spec  # noqa: E402
from silas_exp.tune.certify import certify, ships  # noqa: E402
from silas_exp.tune.split import split_ids  # noqa: E402

METRIC = "context.retrieval_relevance"
FLAVOURS = ("coding", "debugging", "research", "support", "chronicle")


def _rng(*key: int) -> np.random.Generator:
    return np.random.default_rng([abs(k) for k in key])


def values(study: int, config: int, cases: list[int], repeats: int, effect: float,
           level: np.ndarray, sd_case: float, sd_rep: float) -> np.ndarray:
    """cases × repeats of one configuration (config -1: the control)."""
    out = np.empty((len(cases), repeats))
    for i, c in enumerate(cases):
        g = _rng(study, config + 2, c)
        out[i] = level[c] + effect + g.normal(0, sd_case) + g.normal(0, sd_rep, repeats)
    return out


def jobs(variant: str, ids: list[str], m: np.ndarray) -> list[JobData]:
    return [JobData(variant, r, {}, {cid: {METRIC: float(m[i, r]), "summary.pass": 1.0,
                                           "summary.error": 0.0} for i, cid in enumerate(ids)},
                    status={cid: "pass" for cid in ids}) for r in range(m.shape[1])]


def one_study(study: int, effect: float, a) -> dict:
    import optuna

    n = a.cases
    level = _rng(study, 0).normal(0.7, 0.1, n)
    strata = {f"case-{c:04d}": f"{FLAVOURS[c % 5]}/{'hard' if c % 3 else 'adversarial'}"
              for c in range(n)}
    split = split_ids(strata, 0.5, seed=study)
    train = [int(c[5:]) for c in split.train]
    hold = [int(c[5:]) for c in split.holdout]
    sampler = optuna.samplers.TPESampler(seed=study, n_startup_trials=4)
    s = optuna.create_study(direction="maximize", sampler=sampler)
    s.enqueue_trial({"x": 0.5})  # the untuned setting
    for _ in range(a.trials):
        t = s.ask()
        t.suggest_float("x", 0.0, 1.0)  # a setting that changes nothing but the noise
        s.tell(t, float(values(study, t.number, train, a.repeats, effect, level, a.sd_case,
                               a.sd_rep).mean()))
    best = max((t for t in s.trials if t.number != 0), key=lambda t: t.value)
    control_train = values(study, -1, train, a.repeats, 0.0, level, a.sd_case, a.sd_rep).mean()
    ids = [f"case-{c:04d}" for c in hold]
    arms = {"control": values(study, -1, hold, a.repeats, 0.0, level, a.sd_case, a.sd_rep),
            "untuned": values(study, 0, hold, a.repeats, effect, level, a.sd_case, a.sd_rep),
            "best": values(study, best.number, hold, a.repeats, effect, level, a.sd_case,
                           a.sd_rep)}
    data = SweepData(f"null-{study}", "", [j for v, m in arms.items() for j in jobs(v, ids, m)])
    settings = AnalysisSettings(gate=[METRIC], n_resamples=a.resamples, seed=study)
    train_gain = {"best": {METRIC: best.value - s.trials[0].value}}
    cert, _ = certify(data, {"best": best.number}, "control", "untuned", settings, [METRIC],
                      train_gain)
    cand = cert.candidates[0]
    return {"ship": ships(cand), "outcome": cand.outcome,
            "train_gain_vs_untuned": train_gain["best"][METRIC],
            "holdout_gain_vs_untuned": cand.holdout_gain[METRIC],
            "train_gain_vs_control": best.value - control_train,
            "holdout_delta_vs_control": cand.holdout_delta[METRIC]}


def summarise(rows: list[dict]) -> dict:
    n = len(rows)
    ships_ = sum(r["ship"] for r in rows)
    p = ships_ / n
    z = 1.96  # Wilson upper bound of the ship rate
    upper = (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n)
    mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k not in ("ship",
                                                                                  "outcome")}
    outcomes = {o: sum(r["outcome"] == o for r in rows) / n
                for o in ("ship", "do_not_ship", "inconclusive")}
    return {"studies": n, "ship_rate": p, "ship_rate_upper95": upper, "outcomes": outcomes,
            "mean": mean}


def _cpu() -> float:
    """CPU seconds of this process and of its finished child processes."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


REAL = {"studies": 160, "trials": 12, "cases": 120, "block": 20, "repeats": 2, "seed_sets": 24,
        "resamples": 1000}
REAL_QUICK = {"studies": 4, "trials": 4, "cases": 24, "block": 4, "repeats": 2, "seed_sets": 2,
              "resamples": 200}
SIMULATED = {"studies": 200, "trials": 20, "cases": 200, "repeats": 3, "resamples": 1000}
SIMULATED_QUICK = {"studies": 20, "trials": 6, "cases": 40, "repeats": 3, "resamples": 200}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--replays", choices=("real", "simulated"), default="real")
    parser.add_argument("--studies", type=int, help="seeded studies per scenario")
    parser.add_argument("--trials", type=int)
    parser.add_argument("--cases", type=int, help="pool (half held out)")
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--block", type=int, help="real: cases_per_block of the certification")
    parser.add_argument("--seed-sets", type=int, help="real: replays made per repeat")
    parser.add_argument("--workers", type=int, default=2, help="real: processes making replays")
    parser.add_argument("--sd-case", type=float, default=0.03,
                        help="simulated: config × case noise (repeats do not average it out)")
    parser.add_argument("--sd-rep", type=float, default=0.05, help="simulated: per-repeat noise")
    parser.add_argument("--resamples", type=int)
    parser.add_argument("--quick", action="store_true", help="tiny studies (a CI smoke run)")
    a = parser.parse_args()
    real = a.replays == "real"
    defaults = (REAL_QUICK if a.quick else REAL) if real else (
        SIMULATED_QUICK if a.quick else SIMULATED)
    for key, value in defaults.items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    margin = float(spec(METRIC).margin)
    t0, c0 = time.perf_counter(), _cpu()
    result = {"replays": a.replays, "scenarios": {}, "margin": margin,
              **{k: getattr(a, k) for k in defaults}}
    scenarios = {"equal": 0.0, "at_margin": 1.0}  # true effect, in margins worse
    if real:
        from bench._tune_replays import run_real

        per_study = run_real(a, scenarios)
    else:
        result.update(sd_case=a.sd_case, sd_rep=a.sd_rep)
        per_study = {name: [one_study(s, -k * margin, a) for s in range(a.studies)]
                     for name, k in scenarios.items()}
    for name, rows in per_study.items():
        result["scenarios"][name] = summarise(rows)
        r = result["scenarios"][name]
        print(f"{name:10s} ship {r['ship_rate']:.3f} (95% upper {r['ship_rate_upper95']:.3f}); "
              f"outcomes {r['outcomes']}; best trial gain over untuned: training "
              f"{r['mean']['train_gain_vs_untuned']:+.4f} -> holdout "
              f"{r['mean']['holdout_gain_vs_untuned']:+.4f}; vs control: training "
              f"{r['mean']['train_gain_vs_control']:+.4f} -> holdout "
              f"{r['mean']['holdout_delta_vs_control']:+.4f}"
              + (f"; held-out cases used {r['mean']['holdout_cases_used']:.1f}" if real else ""))
    result["seconds"] = time.perf_counter() - t0
    result["cpu_seconds"] = _cpu() - c0  # the replays' worker processes included
    name = "tune" if real else "tune_simulated"
    print(f"{a.studies} studies × 2 scenarios ({a.replays} replays) in {result['seconds']:.0f} s "
          f"({result['cpu_seconds']:.0f} s CPU) -> {save(name, result)}")


if __name__ == "__main__":
    main()
