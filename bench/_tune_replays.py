"""Tuning studies on a null search space with real replays (bench/bench_tune.py).

Each study is the real loop of ``experiment=tune`` (``silas_exp.tune.driver.TuneLoop``:
its split, a real Optuna TPE study with pruning, the real certification, in
blocks when the holdout is larger than ``cases_per_block``), in process. Its
jobs are served from real replays instead of being run again:
``RecordedJobs`` records each job on the cases a real job of its split and
block runs, from per-case results it is given.

The replays are real control jobs (``scorer=heuristic``, the simulated LLM,
``bench_verdict_e2e.replay_control``) on the pool, one per base seed and
repeat, made once and shared by every study. In a study the control's repeat r
is one replay; every configuration of the tuned scorer (the untuned one
included) takes, for each repeat, a replay drawn by its searched values, and
in the ``at_margin`` scenario that replay is made worse by exactly every
continuous gated metric's margin (``bench_verdict_e2e.shifted``: relevance
−0.02, nDCG@10 −0.03, tokens per served need +5 %, a pass recomputed from
the shifted relevance). So the searched setting changes nothing but which
replay noise a configuration gets, and a ship in ``at_margin`` is an error.
"""

from __future__ import annotations

import logging
import math
import tempfile
import warnings
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from silas_exp.records import JobResult, write_job_result
from silas_exp.schema.benchmark import BenchmarkResult, BenchmarkRun

METRIC = "context.retrieval_relevance"
REPLAY_SEED = 1000  # the replays' base seeds: 1000, 1001, …
# job, its case ids -> its per-case results
Rows = Callable[[list[str], list[str]], list[BenchmarkResult]]


def option(job: list[str], key: str, default: str | None = None) -> str | None:
    """The value a job's overrides give ``key`` (``++key=`` too)."""
    return next((o.partition("=")[2] for o in job if o.lstrip("+").startswith(key + "=")),
                default)


class RecordedJobs:
    """A launch for ``TuneLoop``: each job's record (result.json with its
    per-case results), on the cases a real job runs (its split, then its block)."""

    def __init__(self, swept: list[str], scorer: str, cfg, folder: Path, rows: Rows) -> None:
        from silas_exp.data.suites.memo import load_suite_cached
        from silas_exp.tune.split import split_cases

        self.swept, self.scorer, self.cfg, self.folder, self.rows = swept, scorer, cfg, folder, rows
        pool = load_suite_cached(cfg.suite.path).eval_cases[: cfg.suite.max_cases]
        self.split = split_cases(pool, cfg.suite.holdout, cfg.suite.split_seed)
        self.launched: list[list[str]] = []

    def cases(self, job: list[str]) -> list[str]:
        from silas_exp.data.suites.blocks import block_of

        ids = list(self.split.part(option(job, "suite.split")))
        size = option(job, "cases_per_block", str(self.cfg.cases_per_block))
        picked = block_of(len(ids), int(option(job, "block", "0")),
                          None if size in ("null", "None") else int(size), self.cfg.seed)
        return [ids[i] for i in picked]

    def __call__(self, batch: list[list[str]], first: int) -> list[Path]:
        from silas_exp.variants import variant_name

        folders = []
        for i, job in enumerate(batch):
            self.launched.append(job)
            rows = self.rows(job, self.cases(job))
            keys = {k for r in rows for k in r.metrics}
            metrics = {k: float(np.nanmean([r.metrics.get(k, math.nan) for r in rows]))
                       for k in keys}
            run = BenchmarkRun(run_id=f"r{first + i}", suite_id="recorded",
                               started_at=datetime.now(UTC), config_snapshot={}, results=rows)
            folder = self.folder / str(first + i)
            folder.mkdir(parents=True, exist_ok=True)
            write_job_result(folder, JobResult(
                variant=variant_name(job, self.swept, self.scorer),
                repeat=int(option(job, "repeat")), status="finished",
                block=int(option(job, "block", "0")), run=run, metrics=metrics))
            folders.append(folder)
        return folders


def _replay(args: tuple[int, int, int, str]) -> list[BenchmarkResult]:
    from bench_verdict_e2e import replay_control

    return replay_control(*args)[1]


def make_replays(seeds: int, repeats: int, cases: int, workers: int) -> list[list[BenchmarkResult]]:
    """Real control jobs on the pool's first ``cases`` cases, ``seeds`` × ``repeats``."""
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(workers) as ex:
        jobs = [(REPLAY_SEED + s, r, cases, tmp) for s in range(seeds) for r in range(repeats)]
        return list(ex.map(_replay, jobs))


def perturbed(results: list[BenchmarkResult], k: float) -> list[BenchmarkResult]:
    """The replay worse by ``k`` times every continuous gated metric's margin;
    a case that passed fails when its shifted relevance falls under the pass rule."""
    from bench_verdict_e2e import shifted

    rows = shifted({r.case_id: {**r.metrics, "summary.pass": float(r.status == "pass")}
                    for r in results}, k)
    out = []
    for r in results:
        row = dict(rows[r.case_id])
        passed = row.pop("summary.pass")
        status = "fail" if r.status == "pass" and passed == 0.0 else r.status
        out.append(r.model_copy(update={"metrics": row, "status": status}))
    return out


def null_study(study: int, replays: list[dict[str, BenchmarkResult]],
               worse: list[dict[str, BenchmarkResult]], a, folder: Path) -> dict:
    """One seeded study; ``replays`` by case id, ``worse``: the configurations'
    version of each (the scenario's shift)."""
    from silas_exp.config import compose_config
    from silas_exp.tune.certify import ships
    from silas_exp.tune.driver import TuneLoop, settings_of

    logging.getLogger("silas_exp").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message="Tight layout not applied")  # the ablation plots
    cfg = compose_config(["experiment=tune", f"suite.max_cases={a.cases}",
                          f"cases_per_block={a.block}", f"repeats={a.repeats}", f"seed={study}",
                          f"suite.split_seed={study}", "tracking=none",
                          f"analysis.n_resamples={a.resamples}"])
    control_scorer = cfg.analysis.controls.get("scorer", "heuristic")
    raw = {**cfg.tune, "n_trials": a.trials, "seed": study}
    loop = TuneLoop(cfg, settings_of(raw, {"repeat": f"range(0,{a.repeats})"}), folder, [],
                    "weights", lambda key: False, {})
    order = np.random.default_rng([study, 0x7E57]).permutation(len(replays))
    control, others = order[: a.repeats], order[a.repeats:]

    def rows(job: list[str], ids: list[str]) -> list[BenchmarkResult]:
        r = int(option(job, "repeat"))
        if job[0] == f"scorer={control_scorer}":
            source = replays[control[r]]
        else:  # a configuration: the replay its searched values draw (none: the untuned one)
            key = ",".join(sorted(o for o in job if o.startswith("++")))
            g = np.random.default_rng([study, zlib.crc32(key.encode()), r])
            source = worse[others[g.integers(len(others))]]
        return [source[c] for c in ids]

    launch = RecordedJobs(loop.swept, loop.scorer, cfg, folder, rows)
    record = loop.run(launch)
    best, cand = record.best[0], record.certification.candidates[0]
    train = launch.split.train
    control_train = float(np.mean([np.mean([replays[i][c].metrics[METRIC] for c in train])
                                   for i in control]))
    return {"ship": ships(cand), "outcome": cand.outcome,
            "train_gain_vs_untuned": cand.train_gain[METRIC],
            "holdout_gain_vs_untuned": cand.holdout_gain[METRIC],
            "train_gain_vs_control": best.train[METRIC] - control_train,
            "holdout_delta_vs_control": cand.holdout_delta[METRIC],
            "holdout_cases_used": float(cand.cases or 0)}


def run_real(a, scenarios: dict[str, float]) -> dict[str, list[dict]]:
    """Every scenario's studies on the same replays; scenario -> per-study rows."""
    made = make_replays(a.seed_sets, a.repeats, a.cases, a.workers)
    replays = [{r.case_id: r for r in results} for results in made]
    out = {}
    for name, k in scenarios.items():
        worse = [{r.case_id: r for r in perturbed(results, k)} for results in made]
        with tempfile.TemporaryDirectory() as tmp:
            out[name] = [null_study(s, replays, worse, a, Path(tmp) / f"s{s}")
                         for s in range(a.studies)]
    return out
