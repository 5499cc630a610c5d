"""The simulated replay as a control variate: what it buys and whether the
verdict stays valid, against how good a predictor it is.

    python bench/bench_cv.py [--studies 2000] [--first-look 20000] [--cases 80] [--seeds 1 | --orders K] [--quick]

1. Simulated studies (known truth; ``--studies`` per row;
   silas_exp/stats/coverage.py's ``cv_table``): the sequential design of the
   default pool (320 cases in blocks of 40, looks after blocks 1, 2, 4, 8 at
   the alpha-spending confidences), for a pass rate (6 % and 25 % of pairs
   flipping), relevance (a bounded score) and tokens per served need (a
   skewed amount), the twin's per-case differences correlated at rho with
   the paid ones (1, 0.9, 0.7, 0, -0.5; none: the kind's interval alone),
   the interval ``corrected_interval``: each look's coverage and worse-side
   misses, the share of studies the twin corrected, A/A ship rate, ship
   rate of a variant worse by exactly the margin, mean cases used and the
   median effective sample multiplier at the first look; each row flagged
   where a rate is beyond its level by chance (binomial at 1 %). Then the
   first look alone (40 cases of the pool, 99.92 %), ``--first-look``
   studies a row, for its tail.
2. Replays (``--cases`` cases of the default pool in seed s's order, ``--seeds``
   seeds): the README study's arms (control, weights, prompt, online) replayed
   with the simulated model (the twin) and with the departing model
   (tests/fakes/departing.py) at each of its settings; per variant and gated
   metric, the correlation of the paid per-case differences with the
   simulated ones and the effective sample multiplier at the first block
   (the other replayed cases as the pool not paid); then the study run on
   those cases as a sweep runs it (``ablation`` + ``close_decided`` at each
   look), with and without the twin: each variant's verdict and cases used,
   and the model calls and dollars (the departing model is billed per call
   like a paid one) to the verdicts.
   With ``--orders K`` in place of ``--seeds``: every case of the pool is
   replayed once, at seed 0 (``--replay-seed``; each arm, the twin and each
   setting), and the study runs on K orders of that pool, drawn as a sweep
   at seeds 0..K-1 draws them (``block_order``), with and without the twin:
   per setting and variant
   the median (and quartiles) of cases to a decision, the outcomes, the
   effective sample multiplier per gated metric at the first look (median over
   the orders) and the calls and dollars to the verdicts. K orders of one
   seed's replays, not K seeds: a case's own noise under another seed is not
   in them. "identical" is replayed last; until it is, the twin's replays
   stand for it (its answers are the simulator's: the bench counts the case
   replays where they differ) without its billing.
Replays are kept in bench/results/cv-cache/<commit>/ (``--cache``), one file a
replay job (seed, setting, arm, pool cases, chunk), keyed by the last commit
that changed the replay code; a run stopped part way resumes where it stopped,
and ``--from-cache`` reruns the study from the kept replays alone (with
``--cache-commit`` naming replays kept at another commit). Where not every
chunk is replayed for every setting, the study runs on the longest run of
whole chunks, and says so. Numbers from replays are the simulated (or
departing) model's. Writes bench/results/cv.json (cv-orders.json,
cv-orders-seed<S>.json, ...).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from _results import RESULTS, save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from silas_exp.stats.control_variate import corrected_interval  # noqa: E402
from silas_exp.stats.coverage import QUICK_STUDIES, cv_table  # noqa: E402
from silas_exp.stats.intervals import MIN_DISAGREEING  # noqa: E402
from silas_exp.stats.sequential import spending_confidences  # noqa: E402

CONTROL = "scorer=heuristic"
VARIANTS = ("scorer=weights", "scorer=prompt", "scorer=online")


# -- 1. simulated studies -----------------------------------------------------------------
def ungated(c, plain, confidence):
    """The corrected interval even below the minimum information (what the
    fallback to the kind's own interval guards against)."""
    enough = dataclasses.replace(plain, disagreeing=max(plain.disagreeing, MIN_DISAGREEING))
    out = corrected_interval(c, enough, confidence)
    return plain if out is enough else out


def simulate(studies: int, first_look: int, pool: int = 320, block: int = 40,
             interval=None) -> dict:
    """silas_exp.stats.coverage.cv_table on the default pool's sequential design;
    then the first look alone (its tail) on ``first_look`` studies a row."""
    blocks = pool // block
    looks = sorted({*(2**k for k in range(int(math.log2(blocks)) + 1)), blocks})
    confs = spending_confidences(0.95, tuple(min(b * block, pool) / pool for b in looks))
    t0 = time.perf_counter()
    rows = cv_table(studies, looks, confs, block, interval=interval)
    print(f"{'metric':24s} {'share':>5s} {'rho':>5s} {'effect':>6s} {'ships':>6s} {'cases':>6s} "
          f"{'mult@40':>7s} | " + " | ".join(f"n={b * block}: cover worse corr" for b in looks))
    for r in rows:
        rho = "none" if r["rho"] is None else f"{r['rho']:+.1f}"
        print(f"{r['metric']:24s} {r['disagree']:5.2f} {rho:>5s} {r['effect']:>6s} "
              f"{r['ships']:6.3f} {r['mean_cases']:6.1f} {r['multiplier']:7.2f} | "
              + " | ".join(f"{c:.4f} {w:.4f} {f:.2f}" for c, w, f in
                           zip(r["coverage"], r["worse_miss"], r["corrected"], strict=True))
              + (f"  ! {'; '.join(r['flags'])}" if r["flags"] else ""), flush=True)
    first = cv_table(first_look, looks[:1], confs[:1], block, pool=pool,
                     interval=interval)
    print(f"\nThe first look alone ({looks[0] * block} cases, {confs[0]:.2%}), {first_look} "
          "studies a row: coverage, worse-side misses (level "
          f"{(1 - confs[0]) / 2:.4%}), share corrected")
    for r in first:
        rho = "none" if r["rho"] is None else f"{r['rho']:+.1f}"
        print(f"{r['metric']:24s} {r['disagree']:5.2f} {rho:>5s} {r['effect']:>6s} | "
              f"{r['coverage'][0]:.5f} {r['worse_miss'][0]:.5f} {r['corrected'][0]:.2f}"
              + (f"  ! {'; '.join(r['flags'])}" if r["flags"] else ""), flush=True)
    return {"pool": pool, "block": block, "looks": looks, "confidences": confs,
            "studies": studies, "rows": rows, "first_look_studies": first_look,
            "first_look": first, "flagged": sum(bool(r["flags"]) for r in rows + first),
            "seconds": time.perf_counter() - t0}


# -- 2. replays ---------------------------------------------------------------------------
CACHE = Path(os.environ.get("SILAS_BENCH_RESULTS") or RESULTS) / "cv-cache"  # beside the figures
# what a replay's per-case results are made of: a change here is another cache
REPLAY_CODE = ("silas_exp", "conf", "suites", "tests/fakes", "pyproject.toml")


def code_commit() -> str:
    """The last commit that changed the replay code (``-dirty`` if the working
    tree's replay code differs from it): a commit elsewhere (bench/, docs/)
    keeps the replays made before it."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--", *REPLAY_CODE)
        return git("log", "-1", "--format=%H", "--", *REPLAY_CODE)[:12] + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unversioned"  # not a git checkout: one cache, cleared by hand


def cache_path(cache: Path, commit: str, job: tuple) -> Path:
    """Where one replay job's per-case results are kept: keyed by the commit, the
    seed, the setting, the arm, the pool's cases and which chunk of them."""
    seed, setting, _, arm, cases, chunk, index = job
    return (cache / commit / f"seed{seed}" / setting / arm.replace("=", "_")
            / f"n{cases}-c{chunk}-{index}.json")


def _replay(args: tuple) -> tuple:
    """One arm on chunk ``index`` of the pool's first ``cases`` cases (chunks of
    ``chunk`` cases in the seed's order, as a sequential study's blocks): per-case
    rows and statuses."""
    seed, setting, departure, arm, cases, chunk, index = args
    from silas_exp.analysis.data import job_data
    from silas_exp.config import compose_config
    from silas_exp.run.job import make_job, run_job
    from tests.fakes.departing import departing_overrides

    extra = [] if departure is None else departing_overrides(departure)
    blocks = [f"cases_per_block={chunk}", f"block={index}"] if chunk < cases else \
        ["cases_per_block=null"]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = compose_config([f"seed={seed}", "repeat=0", *blocks,
                              f"suite.max_cases={cases}", "tracking=none", "llm.cache_mode=off",
                              f"paths.cache={tmp}/cache", arm, *extra])
        t0 = time.perf_counter()
        out = run_job(cfg, make_job(cfg, arm), Path(tmp) / "job")
        job = job_data(arm, 0, out.metrics, list(out.results()))
        return args, job.cases, job.status, time.perf_counter() - t0


def replay_jobs(jobs: list[tuple], workers: int, cache: Path, commit: str,
                cached_only: bool = False) -> tuple[dict, dict]:
    """Every job's (rows, status), read from the cache where it is there, else
    replayed (in the order given, ``workers`` at a time) and written to the cache
    as each finishes, so a run stopped part way resumes where it stopped.
    ``cached_only``: nothing is replayed; a job not in the cache is left out."""
    import json

    got, counts = {}, {"cached": 0, "replayed": 0, "missing": 0, "replay_seconds": 0.0}
    todo = []
    for job in jobs:
        path = cache_path(cache, commit, job)
        if path.exists():
            kept = json.loads(path.read_text())
            got[job] = (kept["cases"], kept["status"])
            counts["cached"] += 1
        elif cached_only:
            counts["missing"] += 1
        else:
            todo.append(job)
    if todo:
        from concurrent.futures import as_completed

        print(f"  replaying {len(todo)} job(s), {counts['cached']} from the cache "
              f"({cache / commit})", flush=True)
        with ProcessPoolExecutor(workers) as ex:
            for fut in as_completed([ex.submit(_replay, j) for j in todo]):
                job, rows, status, secs = fut.result()
                path = cache_path(cache, commit, job)
                path.parent.mkdir(parents=True, exist_ok=True)
                part = path.with_suffix(f".{os.getpid()}.part")
                part.write_text(json.dumps({"job": list(job), "seconds": secs, "cases": rows,
                                            "status": status}))
                part.replace(path)  # whole or absent: a killed run leaves no half entry
                got[job] = (rows, status)
                counts["replayed"] += 1
                counts["replay_seconds"] += secs
                seed, setting, _, arm, _, _, index = job
                print(f"  replayed seed {seed} {setting:10s} {arm:16s} chunk {index} "
                      f"{len(rows):4d} cases {secs:6.1f} s  [{counts['replayed']}/{len(todo)}]",
                      flush=True)
    return got, counts


def study(paid: dict, twin: dict | None, order: list[str], block: int, settings) -> dict:
    """The sequential study on ``order`` (the cases in the order drawn), as a sweep
    runs it: {variant: (outcome, cases used)}; the control runs while any does."""
    from silas_exp.analysis.ablation import ablation
    from silas_exp.analysis.data import JobData, SweepData
    from silas_exp.data.suites.blocks import n_blocks
    from silas_exp.metrics.registry import gated_for
    from silas_exp.study.looks import close_decided
    from silas_exp.study.state import AdaptiveState

    blocks = n_blocks(len(order), block)
    state = AdaptiveState.plan_blocks(settings, blocks, block, len(order), 0)
    twin_data = None if twin is None else SweepData("twin", "", [
        JobData(arm, 0, {}, {c: twin[arm][0][c] for c in order}, status=twin[arm][1])
        for arm in twin])
    for b in state.looks:
        use = order[: b * block]
        jobs = [JobData(arm, 0, {}, {c: paid[arm][0][c] for c in use},
                        status={c: paid[arm][1][c] for c in use})
                for arm in paid if arm == CONTROL or arm not in state.closed]
        data = SweepData("bench", "", jobs, twin=twin_data)
        looked = settings.model_copy(update={"confidence": state.confidence_at(b)})
        close_decided(ablation(data, looked, metrics=gated_for("replay")), data, state, b)
        if all(v in state.closed for v in paid if v != CONTROL):
            break
    return {v: (state.closed[v]["outcome"] if v in state.closed else "inconclusive",
                min(state.closed[v]["round"] * block, len(order)) if v in state.closed
                else len(order)) for v in paid if v != CONTROL}


def _spend(paid: dict, order: list[str], used: dict[str, int]) -> tuple[float, float]:
    """Model calls and dollars to the verdicts: each variant's cases, the control's
    as long as any variant ran."""
    total_calls = total_usd = 0.0
    for arm, (rows, _) in paid.items():
        n = max(used.values()) if arm == CONTROL else used[arm]
        for c in order[:n]:
            total_calls += rows[c].get("llm.calls", 0.0)
            total_usd += rows[c].get("llm.cost_usd", 0.0)
    return total_calls, total_usd


def replays(seeds: list[int], cases: int, block: int, workers: int, departures: dict,
            variants: tuple[str, ...] = VARIANTS, cache: Path = CACHE,
            commit: str | None = None) -> dict:
    from silas_exp.config import compose_config
    from silas_exp.data.suites.blocks import block_order
    from silas_exp.metrics.registry import gated_for
    from silas_exp.stats.control_variate import corrected_mean as cv_mean

    arms = (CONTROL, *variants)
    jobs = [(s, "simulated", None, a, cases, cases, 0) for s in seeds for a in arms]
    # identical too: the departing model at 0 answers as the simulator, but is billed
    jobs += [(s, name, d, a, cases, cases, 0) for s in seeds for name, d in departures.items()
             for a in arms]
    t0 = time.perf_counter()
    got: dict = {}
    done, counts = replay_jobs(jobs, workers, cache, commit or code_commit())
    for (seed, setting, _, arm, *_), kept in done.items():
        got.setdefault((seed, setting), {})[arm] = kept
    settings = compose_config([]).analysis.model_copy(update={"n_resamples": 1000})
    out: dict = {"seeds": seeds, "cases": cases, "block": block,
                 "replay_seconds": time.perf_counter() - t0, "replay_jobs": counts, "settings": {}}
    for name, d in departures.items():
        per_seed, corr, mult = [], {}, {}
        for seed in seeds:
            twin = got[(seed, "simulated")]
            paid = got[(seed, name)]
            ids = sorted(twin[CONTROL][0])
            order = [ids[i] for i in block_order(len(ids), seed)]
            for v in variants:
                for metric in gated_for("replay"):
                    if metric == "summary.error":
                        continue
                    yo, xo = _pairs(paid, twin, order, v, metric)
                    key = f"{v}/{metric}"
                    if len(yo) > 3 and np.std(xo) > 0 and np.std(yo) > 0:
                        corr.setdefault(key, []).append(float(np.corrcoef(xo, yo)[0, 1]))
                    if len(yo) > block + 2 and np.std(yo[:block]) > 0:
                        mult.setdefault(key, []).append(
                            cv_mean(yo[:block], xo[:block], xo[block:]).multiplier)
            without = study(paid, None, order, block, settings)
            with_cv = study(paid, twin, order, block, settings)
            spend = {k: _spend(paid, order, {v: u for v, (_, u) in r.items()})
                     for k, r in (("without", without), ("with", with_cv))}
            per_seed.append({"seed": seed, "without": without, "with": with_cv,
                             "calls": {k: s[0] for k, s in spend.items()},
                             "usd": {k: s[1] for k, s in spend.items()}})
        row = {"departure": d,
               "correlation": {k: float(np.mean(v)) for k, v in corr.items()},
               "multiplier_first_block": {k: float(np.median(v)) for k, v in mult.items()},
               "seeds": per_seed,
               "median_cases": {k: {v: statistics.median(s[k][v][1] for s in per_seed)
                                    for v in variants} for k in ("without", "with")}}
        out["settings"][name] = row
        print(f"{name} (departure {d}): median cases without / with: "
              + ", ".join(f"{v} {row['median_cases']['without'][v]}/{row['median_cases']['with'][v]}"
                          for v in variants), flush=True)
        for key in sorted(row["correlation"]):
            print(f"    {key:48s} rho {row['correlation'][key]:+.2f}  multiplier@{block} "
                  f"{row['multiplier_first_block'].get(key, math.nan):.2f}")
        for s in per_seed:
            print(f"    seed {s['seed']}: " + "; ".join(
                f"{v} {s['without'][v][0]} ({s['without'][v][1]}) / {s['with'][v][0]} "
                f"({s['with'][v][1]})" for v in variants)
                + f"; calls {s['calls']['without']:.0f} / {s['calls']['with']:.0f}, "
                f"${s['usd']['without']:.2f} / ${s['usd']['with']:.2f}")
    return out


def _pairs(paid: dict, twin: dict, order: list[str], variant: str, metric: str):
    """The paid and the twin's per-case differences (variant − control) on ``order``,
    the cases where both are known."""
    y = np.array([paid[variant][0][c].get(metric, np.nan)
                  - paid[CONTROL][0][c].get(metric, np.nan) for c in order])
    x = np.array([twin[variant][0][c].get(metric, np.nan)
                  - twin[CONTROL][0][c].get(metric, np.nan) for c in order])
    ok = ~(np.isnan(x) | np.isnan(y))
    return y[ok], x[ok]


def _same_as_twin(paid: dict, twin: dict) -> dict:
    """Whether the departing model's replays equal the twin's on every case both
    hold, wall-clock latency and the model-call accounting left out (the
    simulated backend records no per-case ``llm.*``)."""
    def strip(row: dict) -> dict:
        return {k: v for k, v in row.items() if k != "latency_ms" and not k.startswith("llm.")}

    compared = differ = 0
    for arm, (rows, status) in paid.items():
        for c, row in rows.items():
            if c in twin.get(arm, ({}, {}))[0]:
                compared += 1
                differ += strip(row) != strip(twin[arm][0][c]) or status[c] != twin[arm][1][c]
    return {"cases_compared": compared, "cases_differing": differ}


def orders_study(orders: int, cases: int, chunk: int, block: int, workers: int,
                 departures: dict, variants: tuple[str, ...] = VARIANTS, seed: int = 0,
                 cache: Path = CACHE, commit: str | None = None,
                 cached_only: bool = False, first_order: int = 0) -> dict:
    """Every case of the pool replayed once at ``seed`` (each arm, the twin and each
    departing setting), then the sequential study on ``orders`` orders of that
    pool (drawn as a sweep at seeds 0..orders−1 draws them), with and without the
    twin. The orders share one seed's replays: what varies is which cases come
    first, not each case's own noise under another seed. ``first_order``: the
    orders are a sweep's at seeds first_order.. (``over_seeds`` runs each seed's
    replays on its own order)."""
    from silas_exp.config import compose_config
    from silas_exp.data.suites.blocks import block_order, n_blocks
    from silas_exp.metrics.registry import gated_for
    from silas_exp.stats.control_variate import corrected_mean as cv_mean
    from silas_exp.study.loop import study_pool

    commit = commit or code_commit()
    arms = (CONTROL, *variants)
    chunks = n_blocks(cases, chunk)
    # the twin and the departing settings chunk by chunk, so that a prefix of the
    # pool is complete for every setting as early as possible; "identical" last:
    # its answers are the twin's (checked below), only its billing is its own
    named = [("simulated", None), *((k, d) for k, d in departures.items() if d != 0.0),
             *((k, d) for k, d in departures.items() if d == 0.0)]
    first = [(seed, k, d, a, cases, chunk, i) for i in range(chunks) for k, d in named
             if d != 0.0 for a in arms]
    last = [(seed, k, d, a, cases, chunk, i) for i in range(chunks) for k, d in named
            if d == 0.0 for a in arms]
    got, counts = replay_jobs(first + last, workers, cache, commit, cached_only)
    needed = [k for k, d in named if d != 0.0]
    use: list[int] = []  # the longest run of chunks 0, 1, ... that every setting has
    while len(use) < chunks and all((seed, k, d, a, cases, chunk, len(use)) in got
                                    for k, d in named if k in needed for a in arms):
        use.append(len(use))
    if not use:
        raise SystemExit(f"--orders: no chunk of the pool's {cases} cases (chunks of {chunk}) is "
                         f"replayed for every setting under {cache / commit}; run without "
                         "--from-cache to replay them, or name the commit the cache was made at "
                         "with --cache-commit")

    def merged(setting: str, d: float | None) -> dict | None:
        if not all((seed, setting, d, a, cases, chunk, i) in got for a in arms for i in use):
            return None
        out = {}
        for a in arms:
            rows, status = {}, {}
            for i in use:
                r, s = got[(seed, setting, d, a, cases, chunk, i)]
                rows.update(r)
                status.update(s)
            out[a] = (rows, status)
        return out

    twin = merged("simulated", None)
    pool_ids = set(twin[CONTROL][0])
    ids = [c for c in study_pool(compose_config([]).suite.path, cases).ids if c in pool_ids]
    settings = compose_config([]).analysis.model_copy(update={"n_resamples": 1000})
    out: dict = {"seed": seed, "orders": orders, "pool_cases": cases, "chunk": chunk,
                 "chunks_used": len(use), "chunks": chunks, "cases_used": len(ids),
                 "block": block, "commit": commit, "replay_jobs": counts, "settings": {}}
    if len(ids) < cases:
        print(f"  only {len(use)} of {chunks} chunks are replayed for every setting: the study "
              f"runs on those {len(ids)} cases (seed {seed}'s first {len(use)} blocks of "
              f"{chunk}), not the pool's {cases}", flush=True)
    draws = [[ids[i] for i in block_order(len(ids), k)]
             for k in range(first_order, first_order + orders)]
    for name, d in named:
        if name == "simulated":
            continue
        paid, twin_spend = merged(name, d), True
        if paid is None and d == 0.0:
            paid, twin_spend = twin, False  # answers checked equal; no per-case billing
        if paid is None:
            continue
        row: dict = {"departure": d, "own_replays": twin_spend, "variants": {}}
        if d == 0.0 and twin_spend:
            row["same_as_twin"] = _same_as_twin(paid, twin)
        runs = []
        for order in draws:
            without = study(paid, None, order, block, settings)
            with_cv = study(paid, twin, order, block, settings)
            runs.append({"without": without, "with": with_cv, "spend": {
                k: _spend(paid, order, {v: u for v, (_, u) in r.items()}) if twin_spend else None
                for k, r in (("without", without), ("with", with_cv))}})
        for v in variants:
            figures: dict = {}
            for k in ("without", "with"):
                used = [r[k][v][1] for r in runs]
                q1, med, q3 = np.percentile(used, [25, 50, 75])
                figures[k] = {"median_cases": float(med), "iqr": [float(q1), float(q3)],
                              "outcomes": dict(Counter(r[k][v][0] for r in runs))}
            corr, mult = {}, {}
            for metric in gated_for("replay"):
                if metric == "summary.error":
                    continue
                y, x = _pairs(paid, twin, ids, v, metric)
                if len(y) > 3 and np.std(x) > 0 and np.std(y) > 0:
                    corr[metric] = float(np.corrcoef(x, y)[0, 1])
                per = []
                for order in draws:  # each order's first block paid, the rest not
                    y, x = _pairs(paid, twin, order, v, metric)
                    if len(y) > block + 2 and np.std(y[:block]) > 0:
                        per.append(cv_mean(y[:block], x[:block], x[block:]).multiplier)
                if per:
                    mult[metric] = float(np.median(per))
            row["variants"][v] = {**figures, "correlation": corr, "multiplier_first_look": mult}
        for k in ("without", "with"):
            spent = [r["spend"][k] for r in runs if r["spend"][k] is not None]
            row[f"{k}_spend"] = None if not spent else {
                "median_calls": float(np.median([c for c, _ in spent])),
                "median_usd": float(np.median([u for _, u in spent]))}
        out["settings"][name] = row
        _print_orders_row(name, row, variants, block)
    print(orders_table(out), flush=True)
    return out


def _print_orders_row(name: str, row: dict, variants: tuple[str, ...], block: int) -> None:
    print(f"{name} (departure {row['departure']:g})"
          + ("" if row["own_replays"] else ": the twin's replays (answers equal), no billing")
          + (f"; equal to the twin on {row['same_as_twin']['cases_compared'] - row['same_as_twin']['cases_differing']}"
             f" of {row['same_as_twin']['cases_compared']} case replays" if "same_as_twin" in row
             else ""), flush=True)
    for v in variants:
        f = row["variants"][v]
        print(f"    {v:16s} cases median (IQR) without {f['without']['median_cases']:.0f} "
              f"({f['without']['iqr'][0]:.0f}-{f['without']['iqr'][1]:.0f}) {f['without']['outcomes']}"
              f" / with {f['with']['median_cases']:.0f} ({f['with']['iqr'][0]:.0f}-"
              f"{f['with']['iqr'][1]:.0f}) {f['with']['outcomes']}")
        for metric in sorted(f["multiplier_first_look"]):
            print(f"        {metric:36s} rho {f['correlation'].get(metric, math.nan):+.2f}  "
                  f"multiplier@{block} {f['multiplier_first_look'][metric]:.2f}")
    for k in ("without", "with"):
        sp = row[f"{k}_spend"]
        if sp:
            print(f"    {k} the twin: median {sp['median_calls']:,.0f} calls, "
                  f"${sp['median_usd']:.2f} to the verdicts")


def orders_table(out: dict) -> str:
    """The --orders figures as docs/analysis.md's table (markdown)."""
    short = {"context.retrieval_relevance": "relevance", "context.tokens_per_served_need":
             "tokens/need", "ir.ndcg_at_10": "nDCG@10", "summary.pass": "pass"}

    def cases(f: dict) -> str:
        return f"{f['median_cases']:.0f} ({f['iqr'][0]:.0f}–{f['iqr'][1]:.0f})"

    def outcomes(f: dict) -> str:
        return ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in sorted(f["outcomes"].items()))

    def spend(row: dict) -> str:
        w, c = row["without_spend"], row["with_spend"]
        if w is None or c is None:
            return "not billed (the twin's replays)"
        return (f"{w['median_calls']:,.0f} / {c['median_calls']:,.0f}, "
                f"${w['median_usd']:.2f} / ${c['median_usd']:.2f}")

    lines = [f"| setting (departure) | variant | cases to a decision, median (quartiles): without "
             f"/ with the twin | outcomes over the {out['orders']} orders: without / with | ρ over "
             f"the {out['cases_used']} cases | multiplier at {out['block']} of "
             f"{out['cases_used']} cases (median over the orders) | calls, $ to the verdicts "
             "(median): without / with |",
             "|---|---|---|---|---|---|---|"]
    for name, row in sorted(out["settings"].items(), key=lambda kv: kv[1]["departure"]):
        for i, (v, f) in enumerate(row["variants"].items()):
            corr = ", ".join(f"{short.get(m, m)} {r:+.2f}" for m, r in f["correlation"].items())
            mult = ", ".join(f"{short.get(m, m)} {x:.2f}"
                             for m, x in f["multiplier_first_look"].items())
            lines.append(f"| {name} ({row['departure']:g}) | {v.split('=')[-1]} | "
                         f"{cases(f['without'])} / {cases(f['with'])} | {outcomes(f['without'])} / "
                         f"{outcomes(f['with'])} | {corr} | {mult} | "
                         f"{spend(row) if i == 0 else '″'} |")
    return "\n".join(lines)


def over_seeds(per_seed: list[dict]) -> dict:
    """The README study at each seed on its own replays and its own order (one
    ``orders_study`` a seed, one order each, the sweep's at that seed): per
    setting and variant, the cases to a decision over the seeds without and
    with the twin (median, quartiles), the outcomes' counts, the first-look
    multiplier's median, and the median calls and dollars to the verdicts."""
    out: dict = {"seeds": [r["seed"] for r in per_seed], "orders": len(per_seed),
                 "cases_used": min(r["cases_used"] for r in per_seed),
                 "block": per_seed[0]["block"], "settings": {}}
    for name in per_seed[0]["settings"]:
        rows = [r["settings"][name] for r in per_seed if name in r["settings"]]
        row: dict = {"departure": rows[0]["departure"], "own_replays": rows[0]["own_replays"],
                     "seeds": len(rows), "variants": {}}
        for v in rows[0]["variants"]:
            figures: dict = {}
            for k in ("without", "with"):
                used = [r["variants"][v][k]["median_cases"] for r in rows]
                q1, med, q3 = np.percentile(used, [25, 50, 75])
                outcomes: Counter = Counter()
                for r in rows:
                    outcomes.update(r["variants"][v][k]["outcomes"])
                figures[k] = {"median_cases": float(med), "iqr": [float(q1), float(q3)],
                              "outcomes": dict(outcomes)}
            metrics = rows[0]["variants"][v]["multiplier_first_look"]
            row["variants"][v] = {
                **figures,
                "correlation": {m: float(np.median([r["variants"][v]["correlation"][m] for r in rows
                                                    if m in r["variants"][v]["correlation"]]))
                                for m in rows[0]["variants"][v]["correlation"]},
                "multiplier_first_look": {m: float(np.median(
                    [r["variants"][v]["multiplier_first_look"][m] for r in rows
                     if m in r["variants"][v]["multiplier_first_look"]])) for m in metrics}}
        for k in ("without", "with"):
            spent = [r[f"{k}_spend"] for r in rows if r[f"{k}_spend"] is not None]
            row[f"{k}_spend"] = None if not spent else {
                "median_calls": float(np.median([x["median_calls"] for x in spent])),
                "median_usd": float(np.median([x["median_usd"] for x in spent]))}
        out["settings"][name] = row
    return out


# -- 3. judge repeats where the grade is unstable -------------------------------------------
STRATEGIES = ("two_tier", "anchored", "regenerative", "opaque", "masking", "truncate", "keep_all")


def _probe_job(args: tuple) -> tuple:
    strategy, unstable, repeats = args
    import json

    from silas_exp.analysis.data import job_data
    from silas_exp.config import compose_config
    from silas_exp.run.job import make_job, run_job

    with tempfile.TemporaryDirectory() as tmp:
        cfg = compose_config(["suite=probes", "judge=llm", f"judge.repeats={repeats}",
                              f"judge.unstable_only={str(unstable).lower()}", f"eviction={strategy}",
                              "tracking=none", "llm.cache_mode=off", f"paths.cache={tmp}/c"])
        out = run_job(cfg, make_job(cfg, f"eviction={strategy}"), Path(tmp) / "job")
        rows = [json.loads(p.read_text()) for p in Path(tmp).rglob("probes.json")]
        job = job_data(f"eviction={strategy}", 0, out.metrics, list(out.results()))
        return strategy, unstable, job.cases, job.status, out.metrics, rows[0] if rows else []


def judge_bench(repeats: int, workers: int, strategies: tuple[str, ...] = STRATEGIES) -> dict:
    """The probe suite's strategies against two_tier with the model judge
    (simulated: the offline rules plus ordinal noise) at ``repeats`` gradings,
    every probe or only unstable ones: judge calls, verdicts, the judge's share."""
    from silas_exp.analysis.ablation import ablation
    from silas_exp.analysis.data import JobData, SweepData
    from silas_exp.config import compose_config
    from silas_exp.probes.rubric import CRITERIA

    with ProcessPoolExecutor(workers) as ex:
        got = list(ex.map(_probe_job, [(s, u, repeats) for u in (False, True) for s in strategies]))
    settings = compose_config(["suite=probes"]).analysis
    out: dict = {"repeats": repeats, "strategies": list(strategies)}
    for unstable in (False, True):
        jobs = [JobData(f"eviction={s}", 0, m, cases, status=st)
                for s, u, cases, st, m, _ in got if u is unstable]
        result = ablation(SweepData("probes", "", jobs), settings)
        calls = sum(m.get("llm.calls.judge", 0.0) for _, u, _, _, m, _ in got if u is unstable)
        out["unstable" if unstable else "all"] = {
            "judge_calls": calls,
            "verdicts": {v: vv.outcome.value for v, vv in result.verdicts.items()}}
    rows_of = {st: [r for r in rs if r.get("scores")] for st, u, _, _, _, rs in got if not u}
    shares = {}  # per criterion, within a strategy: the judge's share of a grading's variance
    for c in CRITERIA:
        per = []
        for rows in rows_of.values():
            graded = np.array([[r["scores"][c]] for r in rows if c in r["scores"]])
            if len(graded) < 3:
                continue
            jv = float(np.mean([r["judge_variance"][c] * repeats / (repeats - 1)
                                for r in rows if c in r["scores"]]))
            agent = max(float(np.var(graded, ddof=1)) - jv / repeats, 0.0)
            per.append(jv / (jv + agent) if jv + agent > 0 else math.nan)
        if per:
            shares[c] = float(np.nanmean(per))
    out["judge_share_by_criterion"] = shares
    out["judge_share_median"] = float(np.nanmedian(list(shares.values())))
    saved = 1 - out["unstable"]["judge_calls"] / out["all"]["judge_calls"]
    out["judge_calls_saved"] = saved
    out["verdicts_unchanged"] = out["unstable"]["verdicts"] == out["all"]["verdicts"]
    print(f"judge: {repeats} gradings; judge share of a grading's variance, median over criteria "
          f"{out['judge_share_median']:.2f} ({min(shares.values()):.2f}-{max(shares.values()):.2f}); "
          f"judge calls {out['all']['judge_calls']:.0f} every probe, "
          f"{out['unstable']['judge_calls']:.0f} unstable only ({saved:.0%} saved); verdicts "
          f"{'unchanged' if out['verdicts_unchanged'] else 'CHANGED'}: {out['unstable']['verdicts']}")
    return out


# -- 4. the README study against the fake Messages API server ----------------------------
def server_cost(seeds: list[int], departure: float, extra: list[str]) -> dict:
    """The README study on the real SDK path (the departing model behind the fake
    server), with and without the twin, on the same seeds: requests the server
    answered, the calls and dollars the study reports to its verdicts, the verdicts
    and where each variant stopped."""
    import os
    import re
    import subprocess

    from tests.fakes.departing import departing_overrides, departing_responder
    from tests.fakes.messages_server import API_KEY, FakeMessagesServer

    spend = re.compile(r"in all ([\d,]+) calls, \$([\d,.]+)")
    stops = re.compile(r"(\S+=\S+) stops after block (\d+): (\w+(?: \w+)*) —")
    env = {**os.environ, "ANTHROPIC_API_KEY": API_KEY, "MLFLOW_DISABLE_TELEMETRY": "true"}
    out: dict = {"departure": departure, "seeds": {}}
    for seed in seeds:
        for twin in (False, True):
            with FakeMessagesServer(responder=departing_responder(departure)) as srv, \
                    tempfile.TemporaryDirectory() as tmp:
                cmd = [sys.executable, "-m", "tests.fakes.departing", "-m",
                       "scorer=weights,prompt,online", f"seed={seed}", "tracking=none",
                       f"analysis.twin={str(twin).lower()}", f"hydra.sweep.dir={tmp}/s",
                       f"paths.cache={tmp}/cache", *departing_overrides(departure, srv.base_url),
                       *extra]
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise SystemExit(f"sweep failed:\n{proc.stderr[-3000:]}")
                calls, usd = spend.findall(proc.stdout)[-1] if spend.findall(proc.stdout) \
                    else ("0", "0")
                row = {"requests": srv.message_requests, "calls": int(calls.replace(",", "")),
                       "usd": float(usd.replace(",", "")), "wall_s": time.perf_counter() - t0,
                       "stops": {v: {"block": int(b), "outcome": o}
                                 for v, b, o in stops.findall(proc.stdout + proc.stderr)}}
                out["seeds"].setdefault(seed, {})["with" if twin else "without"] = row
                print(f"seed {seed} {'with' if twin else 'without'} the twin: {row['requests']} "
                      f"requests, {row['calls']} calls, ${row['usd']:.2f}; stops {row['stops']}",
                      flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--first-look", type=int, default=20000,
                        help="simulation: studies a row of the first look alone")
    parser.add_argument("--ungated", action="store_true", help="simulation: the corrected "
                        "interval even below 10 disagreeing paid cases (for comparison)")
    parser.add_argument("--cases", type=int, default=80, help="replayed cases of the pool")
    parser.add_argument("--block", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-replays", action="store_true")
    parser.add_argument("--skip-simulation", action="store_true")
    parser.add_argument("--judge", action="store_true", help="only the judge-repeats part")
    parser.add_argument("--judge-repeats", type=int, default=3)
    parser.add_argument("--server", default="", help="seeds of the README study against the "
                        "fake Messages API server, with and without the twin (e.g. 0,1)")
    parser.add_argument("--server-setting", default="close")
    parser.add_argument("--server-args", default="", help="extra overrides of that study")
    parser.add_argument("--orders", type=int, default=0, help="replay every case of the pool "
                        "once (at --replay-seed) and run the study on this many orders of it (seeds "
                        "0..K-1), in place of --seeds")
    parser.add_argument("--replay-seed", type=int, default=0, help="--orders: the seed the "
                        "pool is replayed at")
    parser.add_argument("--chunk", type=int, default=0, help="--orders: cases a replay job runs "
                        "(a block of the replay seed's order; default --block), the cache's unit")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where replays are kept")
    parser.add_argument("--cache-commit", default="", help="read (and write) the replays kept "
                        "for this commit (default: the last commit that changed the replay code, "
                        "-dirty if the working tree changes it)")
    parser.add_argument("--over-seeds", type=int, default=0, help="the study at seeds 0..N-1, "
                        "each on its own replays of the whole pool and its own order (replays "
                        "what the cache lacks), in place of --orders")
    parser.add_argument("--from-cache", action="store_true", help="--orders: replay nothing; "
                        "the study on the replays in the cache")
    parser.add_argument("--quick", action="store_true",
                        help="CI smoke: 20 studies; weights only, 8 cases in blocks of 4, two settings")
    ns = parser.parse_args()
    from tests.fakes.departing import SETTINGS

    departures, variants = dict(SETTINGS), VARIANTS
    if ns.quick:
        ns.studies, ns.cases, ns.block, ns.seeds = QUICK_STUDIES, 8, 4, 1
        ns.first_look = QUICK_STUDIES
        departures = {k: SETTINGS[k] for k in ("identical", "unrelated")}
        variants = ("scorer=weights",)
    t0 = time.perf_counter()
    if ns.judge:
        save("cv-judge", judge_bench(ns.judge_repeats, ns.workers))
        return
    if ns.server:
        save("cv-server", server_cost([int(x) for x in ns.server.split(",")],
                                      SETTINGS[ns.server_setting], ns.server_args.split()))
        return
    out: dict = {} if ns.skip_simulation else {"simulation": simulate(
        ns.studies, ns.first_look, interval=ungated if ns.ungated else None)}
    if ns.over_seeds:
        out["over_seeds"] = over_seeds([orders_study(
            1, ns.cases, ns.chunk or ns.block, ns.block, ns.workers, departures, variants, seed=s,
            cache=ns.cache, commit=ns.cache_commit or None, cached_only=ns.from_cache,
            first_order=s) for s in range(ns.over_seeds)])
        print(orders_table(out["over_seeds"]).replace(
            f"over the {ns.over_seeds} orders", f"over the {ns.over_seeds} seeds").replace(
            "(median over the orders)", "(median over the seeds)"), flush=True)
    elif ns.orders:
        out["orders"] = orders_study(ns.orders, ns.cases, ns.chunk or ns.block, ns.block,
                                     ns.workers, departures, variants, seed=ns.replay_seed,
                                     cache=ns.cache, commit=ns.cache_commit or None,
                                     cached_only=ns.from_cache)
    elif not ns.skip_replays:
        out["replays"] = replays(list(range(ns.seeds)), ns.cases, ns.block, ns.workers, departures,
                                 variants, ns.cache, ns.cache_commit or None)
    out["seconds"] = time.perf_counter() - t0
    if ns.over_seeds:
        name = "cv-seeds"
    elif ns.orders and ns.skip_simulation:
        name = f"cv-orders-seed{ns.replay_seed}" if ns.replay_seed else "cv-orders"
    else:
        name = "cv" + ("-replays" if ns.skip_simulation else "-simulation" if ns.skip_replays else "")
    save(name + ("-ungated" if ns.ungated else ""), out)


if __name__ == "__main__":
    main()
