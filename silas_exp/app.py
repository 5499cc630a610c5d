"""Hydra entry point: compose → validate once → ``run_job`` → track → exit code.

Exit codes: 0 ok; 1 a job failed (or a sweep had failed jobs); 2 bad input
(unknown config option, invalid value, broken suite file). Errors print one
paragraph; ``--verbose`` or ``HYDRA_FULL_ERROR=1`` shows the traceback.
How an error crosses Hydra to the exit code: ``silas_exp.exits``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from silas_exp.config import ExperimentConfig, validate
from silas_exp.errors import ConfigError, RunError, SilasExpError, SuiteError
from silas_exp.exits import BAD_INPUT, FAILED, Reported
from silas_exp.progress import progress_note
from silas_exp.records import RESULT_FILE, job_result, read_manifest, write_job_result
from silas_exp.runner import JobOutcome, calibration_to_json, make_job, run_job
from silas_exp.suites.memo import load_suite_cached
from silas_exp.tracking.payload import variant_name
from silas_exp.tracking.tracker import make_tracker

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


def verbose() -> bool:
    """``--verbose`` sets HYDRA_FULL_ERROR=1 for the whole process tree (Hydra's
    own switch for full tracebacks)."""
    return os.environ.get("HYDRA_FULL_ERROR") == "1"


def report(exc: BaseException, what: str) -> None:
    if verbose():
        traceback.print_exception(exc)
    print(f"error: {what}: {exc}", file=sys.stderr)
    if not verbose():
        print("(run with --verbose for the full traceback)", file=sys.stderr)


def _write_result(out_dir: Path, variant: str, repeat: int, outcome: JobOutcome | None,
                  error: str | None) -> None:
    write_job_result(out_dir, job_result(
        variant, repeat, error, outcome.metrics if outcome else {},
        outcome.suite_version if outcome else None, outcome.run if outcome else None))
    if outcome is not None and outcome.calibration is not None:
        (out_dir / "calibration.json").write_text(
            json.dumps(calibration_to_json(outcome.calibration), indent=1))


def execute(cfg: ExperimentConfig, out_dir: Path, task_overrides: list[str], multirun: bool,
            job_num: int) -> float:
    sweep = read_manifest(out_dir.parent) if multirun else None
    variant = variant_name(task_overrides, sweep.swept_keys if sweep else [], cfg.scorer.name)
    job = make_job(cfg, variant)
    label = f"[job {job_num}] {variant}#r{job.repeat}" if multirun else f"[run] {variant}"
    loaded = load_suite_cached(cfg.suite.path)
    version = loaded.suite.version
    tracker = make_tracker(cfg)
    if cfg.resume and sweep is not None:
        done = tracker.find_finished_job(sweep, cfg.variant_hash(), job.repeat, version)
        if done is not None:
            tracker.restore_job(done, out_dir)
            print(f"{label}: already finished as run {done.run_id}; skipped", flush=True)
            return done.metrics.get(cfg.metrics.optimize, math.nan)
    t0 = time.perf_counter()
    outcome: JobOutcome | None = None
    try:
        with tracker.job(job, sweep, version, out_dir) as run:
            outcome = run_job(cfg, job, out_dir, loaded=loaded,
                              spend_ledger=(out_dir.parent if multirun else out_dir) / "llm_spend.sqlite")
            _write_result(out_dir, variant, job.repeat, outcome, None)
            run.log_outcome(outcome.metrics)
    except (ConfigError, SuiteError):
        raise
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        if outcome is not None:  # computed but not tracked: keep the result on disk
            error = f"tracking failed, result kept in {out_dir / RESULT_FILE}: {error}"
        _write_result(out_dir, variant, job.repeat, outcome, error)
        if not multirun or cfg.fail_fast:
            raise
        report(exc, f"{label} failed (the sweep goes on)")
        return math.nan
    value = outcome.metrics.get(cfg.metrics.optimize, math.nan)
    summary = outcome.run.summary
    if cfg.llm.dry_run:
        m = outcome.metrics
        print(f"{label}: dry run: {m.get('llm.calls', 0):.0f} model calls, "
              f"{m.get('llm.input_tokens', 0):.0f} input + {m.get('llm.output_tokens', 0):.0f} output "
              f"tokens, estimated ${m.get('llm.cost_usd', 0):.4f} with {cfg.model.name} "
              "(simulated answers; nothing tracked)", flush=True)
        return value
    progress = ""
    if sweep is not None:
        progress = f" [{progress_note(out_dir.parent, sweep.jobs_total, sweep.started_at, time.time())}]"
    print(f"{label}: {outcome.cases} cases, pass {summary.pass_rate:.0%}, "
          f"{cfg.metrics.optimize}={value:.3f} ({time.perf_counter() - t0:.1f}s){progress} "
          f"-> {out_dir}", flush=True)
    if outcome.metrics.get("probe.empty_summaries", 0) > 0:
        print(f"{label}: warning: some compressions produced an empty summary (probe.empty_summaries "
              f"{outcome.metrics['probe.empty_summaries']:.2f} per case), so they compressed like "
              "truncate: the dropped items show no fact a summary would keep", flush=True)
    if not multirun:
        print(f"results: {out_dir / RESULT_FILE} (per case: {outcome.results_path})")
        footer = tracker.run_footer()
        if footer:
            print(footer)
    return value


def run_task(dcfg: DictConfig) -> float:
    """One Hydra job: validate the composed config, run it; errors are reported
    here and leave as ``Reported`` (silas_exp.exits)."""
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    try:
        cfg = validate(OmegaConf.to_container(dcfg, resolve=True))  # type: ignore[arg-type]
        return execute(cfg, Path(hc.runtime.output_dir), list(hc.overrides.task), multirun,
                       hc.job.num if multirun else 0)
    except (ConfigError, SuiteError) as exc:
        report(exc, "bad input")
        raise Reported(exc) from None
    except SilasExpError as exc:
        report(exc, "run failed")
        raise Reported(exc) from None
    except Exception as exc:
        report(exc, "run failed")
        raise Reported(RunError(f"{type(exc).__name__}: {exc}")) from None


@dataclass
class Invocation:
    """What ``main`` learns while Hydra runs: whether a job started in this
    process. Hydra reports its own failures (a config that does not compose, a
    sweeper's error) only as exit status 1; before any job that is bad input (2)."""

    job_started: bool = False


def hydra_main(invocation: Invocation) -> Callable[[], object]:
    """The Hydra application, noting in ``invocation`` when a job starts."""

    @hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
    def silas_exp_task(dcfg: DictConfig) -> float:
        invocation.job_started = True
        return run_task(dcfg)

    return silas_exp_task


SWEEPER_PLUGIN = "hydra_plugins.silas_sweeper"


def missing_plugin() -> str | None:
    """conf/config.yaml selects ``hydra/sweeper=silas``; an install made before
    the plugin existed cannot see it, and Hydra would only say it cannot find
    'hydra/sweeper/silas'. Say what to do instead."""
    if importlib.util.find_spec(SWEEPER_PLUGIN) is not None:
        return None
    return (f"error: Hydra cannot see silas_exp's sweeper plugin ({SWEEPER_PLUGIN}): this "
            "environment's install of silas_exp predates it.\n"
            "  fix: pip install -e . (from the repository root), then run the command again")


def main(argv: list[str] | None = None) -> None:
    """``python -m silas_exp``: Hydra's command line plus ``--verbose``."""
    problem = missing_plugin()
    if problem:
        print(problem, file=sys.stderr)
        raise SystemExit(BAD_INPUT)
    args = list(sys.argv[1:] if argv is None else argv)
    if "--verbose" in args:
        args.remove("--verbose")
        os.environ["HYDRA_FULL_ERROR"] = "1"
    sys.argv = [sys.argv[0], *args]
    invocation = Invocation()
    try:
        hydra_main(invocation)()
    except Reported as exc:  # already reported to the user
        raise SystemExit(exc.exit_code) from None
    except SystemExit as exc:
        # Hydra exits 1 when composing fails (unknown group option, bad override):
        # that is bad input, so 2 — unless a job was running when it happened.
        if exc.code == FAILED and not invocation.job_started:
            raise SystemExit(BAD_INPUT) from None
        raise
