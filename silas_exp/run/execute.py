"""One job of a Hydra run or sweep, from a validated config to its record:
its variant, its suite, its tracker, a resume skip, the tracked run, the record
written to the job folder and the lines it prints. No Hydra here (the entry
point passes the output folder and the overrides)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

from silas_exp.config import ExperimentConfig
from silas_exp.data.suites.loader import LoadedSuite
from silas_exp.data.suites.memo import load_suite_cached
from silas_exp.errors import ConfigError, SuiteError
from silas_exp.records import (
    RESULT_FILE,
    SweepManifest,
    finished_here,
    job_result,
    read_job_result,
    read_manifest,
    write_job_result,
)
from silas_exp.run import console, gc_policy
from silas_exp.run.calibration import calibration_to_json
from silas_exp.run.job import JobOutcome, JobSpec, make_job, run_job
from silas_exp.run.suite_needs import checked_suite
from silas_exp.tracking.tracker import Tracker, make_tracker
from silas_exp.variants import variant_name


def warm_up() -> None:
    """Import in the launching process what a job imports on first use (scipy's
    stats and optimize: ~0.5 s of CPU each), and load the compiled replay loop
    (numba and the loop's machine code: ~0.5 s from numba's cache; on a
    machine's first run it compiles, ~40 s of CPU, once, in the process the
    sweep started for it at its start: ``two_tier.ahead``). While that compile
    runs, the report's imports are made here too (matplotlib builds its font
    list on a first run). The default launcher calls this before it forks its
    workers (``hydra.launcher.before_fork``), so they start with them; the end
    of the sweep needs scipy.stats anyway."""
    import scipy.optimize  # noqa: F401
    import scipy.stats  # noqa: F401

    from silas_exp.eviction.two_tier import ahead, compiled

    if ahead.compiling():
        from silas_exp.run.sweep_end import prepare

        prepare()
    compiled.warm_up()


def job_spec(cfg: ExperimentConfig, task_overrides: list[str], manifest: SweepManifest | None
             ) -> JobSpec:
    """The job's variant (the swept overrides it was given) and seed."""
    swept = manifest.swept_keys if manifest is not None else []
    return make_job(cfg, variant_name(task_overrides, swept, cfg.scorer.name))


def write_result(out_dir: Path, job: JobSpec, outcome: JobOutcome | None, error: str | None,
                 config_hash: str | None = None) -> None:
    """The job's record (result.json) and, for a calibrated scorer, its calibration."""
    write_job_result(out_dir, job_result(
        job.variant, job.repeat, error, outcome.metrics if outcome else {},
        outcome.suite_version if outcome else None, outcome.run if outcome else None, job.block,
        config_hash))
    if outcome is not None and outcome.calibration is not None:
        (out_dir / "calibration.json").write_text(
            json.dumps(calibration_to_json(outcome.calibration), indent=1))


def allocated(cfg: ExperimentConfig, sweep_dir: Path) -> Callable[[str], bool] | None:
    """Which cases a job of a ``repeats=auto`` sweep runs: those whose repeats
    the study allocated (``adaptive.json``) exceed the job's repeat; None
    (every case) before the allocation or in any other sweep."""
    if str(cfg.repeats) != "auto":
        return None
    from silas_exp.study.state import AdaptiveState

    state = AdaptiveState.read(sweep_dir)
    if state is None or state.allocation is None:
        return None
    return lambda case_id: state.runs(case_id, cfg.repeat)


def run_tracked(cfg: ExperimentConfig, job: JobSpec, tracker: Tracker,
                manifest: SweepManifest | None, loaded: LoadedSuite, out_dir: Path,
                multirun: bool, label: str) -> JobOutcome | None:
    """Run the job inside its tracked run and write its record. A job of a
    sweep that fails is recorded and reported, and the sweep goes on (None);
    otherwise (a single run, fail_fast) its error is raised."""
    outcome: JobOutcome | None = None
    spend_ledger = (out_dir.parent if multirun else out_dir) / "llm_spend.sqlite"
    try:
        with tracker.job(job, manifest, loaded.suite.version, out_dir) as run:
            outcome = run_job(cfg, job, out_dir, loaded=loaded, spend_ledger=spend_ledger,
                              alone=not multirun,
                              runs=allocated(cfg, out_dir.parent) if multirun else None)
            write_result(out_dir, job, outcome, None, cfg.variant_hash())
            run.log_outcome(outcome.metrics)
    except (ConfigError, SuiteError):
        raise
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        if outcome is not None:  # computed but not tracked: keep the result on disk
            error = f"tracking failed, result kept in {out_dir / RESULT_FILE}: {error}"
        write_result(out_dir, job, outcome, error)
        if not multirun or cfg.fail_fast:
            raise
        console.report(exc, f"{label} failed (the sweep goes on)")
        return None
    return outcome


def execute(cfg: ExperimentConfig, out_dir: Path, task_overrides: list[str], multirun: bool,
            job_num: int) -> float:
    """Run one job; return the metric a Hydra sweeper optimises (``metrics.optimize``)."""
    gc_policy.tune_for_jobs()
    manifest = read_manifest(out_dir.parent) if multirun else None
    job = job_spec(cfg, task_overrides, manifest)
    label = console.job_label(job, multirun, job_num)
    # a sweep's pre-flight checked what its jobs need of their suites before the first
    loaded = load_suite_cached(cfg.suite.path) if multirun else checked_suite(cfg)
    tracker = make_tracker(cfg)
    if cfg.resume and manifest is not None:
        done = tracker.find_finished_job(manifest, cfg.variant_hash(), job.repeat,
                                         loaded.suite.version)
        if done is not None:
            tracker.restore_job(done, out_dir)
            console.skipped(label, done.run_id)  # its exact metrics: the record (MLflow's are rounded)
            return read_job_result(out_dir).metrics.get(cfg.metrics.optimize, math.nan)
        kept = None if cfg.tracking.enabled else finished_here(  # tracking=none: its folder
            out_dir, cfg.variant_hash(), job.repeat, job.block, loaded.suite.version)
        if kept is not None:
            print(f"{label}: already finished ({out_dir / RESULT_FILE}); skipped", flush=True)
            return kept.metrics.get(cfg.metrics.optimize, math.nan)
    t0 = time.perf_counter()
    outcome = run_tracked(cfg, job, tracker, manifest, loaded, out_dir, multirun, label)
    if outcome is None:
        return math.nan
    if cfg.llm.dry_run:
        console.dry_run(label, cfg, outcome.metrics)
    else:
        console.job_done(label, cfg, outcome, time.perf_counter() - t0, manifest, out_dir)
        if not multirun:
            console.run_footer(out_dir, outcome, tracker.run_footer())
    return outcome.metrics.get(cfg.metrics.optimize, math.nan)
