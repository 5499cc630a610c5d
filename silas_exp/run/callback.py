"""The Hydra callback (``hydra.callbacks.tracking`` in conf/config.yaml): runs
in the launching process, whatever launcher runs the jobs.

* on_run_start: the tracker creates its store and experiment once, before the
  job (several workers creating a fresh SQLite store at once break it).
* on_multirun_start: the tracker checks its store (a dead one fails before
  any work, exit 2), a suite that every job shares is loaded once (a broken
  one fails before any work, exit 2); the sweep claims its folder
  (``silas_exp.run.sweep_folder``: one sweep per folder; resume=true continues
  the folder's sweep, or prints its result when it has finished) and writes
  its manifest (``sweep.json``) for the jobs; the tracker opens the sweep's
  parent run.
* on_multirun_end: the end of the sweep (summary, failed jobs, ablation;
  ``silas_exp.run.sweep_end``), handed to the tracker to close the parent run
  (FAILED if any job failed); once tracking has it, the manifest records
  that the sweep ended; exit 1 if any job or the summary failed.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from silas_exp.config import ExperimentConfig, validate
from silas_exp.data.suites.memo import load_suite_cached
from silas_exp.errors import ConfigError, SuiteError, SweepFailed, TrackingError
from silas_exp.exits import Reported
from silas_exp.records import SweepManifest, remove_sweep_end, update_manifest
from silas_exp.run.console import SWEEP_TOKEN_ENV, report
from silas_exp.run.exit_policy import after_sweep
from silas_exp.run.progress import planned_jobs
from silas_exp.run.sweep_end import end_of_sweep
from silas_exp.run.sweep_folder import AlreadyFinished, claim, holds
from silas_exp.tracking.jobs import experiment_name
from silas_exp.tracking.parent import command_key, sweep_command
from silas_exp.tracking.tracker import make_tracker
from silas_exp.variants import swept_keys


def _experiment(config: DictConfig) -> ExperimentConfig | None:
    try:
        task = OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])
        return validate(OmegaConf.to_container(task, resolve=True))  # type: ignore[arg-type]
    except Exception:
        return None  # the job itself reports the problem with a clear message


def new_manifest(config: DictConfig, cfg: ExperimentConfig | None) -> SweepManifest:
    """The sweep's own facts, before any job runs."""
    cli = list(config.hydra.overrides.task)
    sweeper = config.hydra.sweeper
    params = OmegaConf.to_container(sweeper.get("params") or {}, resolve=False)
    return SweepManifest(
        sweep_id=uuid.uuid4().hex[:12], experiment_name=experiment_name(cfg) if cfg else "silas",
        swept_keys=swept_keys(cli, params), command=sweep_command(cli),
        command_key=command_key(cli), started_at=time.time(),
        jobs_total=planned_jobs(cli, OmegaConf.to_container(sweeper.get("params") or {},
                                                            resolve=True),
                                str(sweeper.get("_target_", ""))))


# swept keys that can give jobs different suites: their suite is checked by each job
_SUITE_KEYS = ("suite", "experiment", "paths")


# sweepers that check every job and its suite before the first (run/preflight.py) and
# give the sweep's folder back when they refuse it
PREFLIGHT_SWEEPERS = ("silas_sweeper",)


def check_suite(cfg: ExperimentConfig | None, swept: list[str], preflight: bool = False) -> None:
    """Load the sweep's suite once here when every job has the same one: a
    broken suite file stops the sweep before any job, with one message (not
    one per worker) and exit 2. Jobs in this process, or forked from it, reuse
    the loaded suite (``load_suite_cached``). Under a sweeper with a
    pre-flight (``preflight``), a broken suite is left to it, which reports
    it with every other problem of the sweep (what a variant needs of the
    suite, a bad value)."""
    if cfg is None or any(key.split(".")[0] in _SUITE_KEYS for key in swept):
        return
    try:
        load_suite_cached(cfg.suite.path)
    except SuiteError as exc:
        if preflight:
            return
        report(exc, "bad input")
        raise Reported(exc) from None


def timestamped(config: DictConfig) -> bool:
    """The sweep folder is Hydra's timestamped default, not one a user named."""
    raw = OmegaConf.to_container(config.hydra.sweep, resolve=False)
    return "${now:" in str(raw.get("dir", "")) if isinstance(raw, dict) else False


def move_sweep(config: DictConfig, sweep_dir: Path) -> None:
    """Run the sweep in ``sweep_dir``: the launching process reads the
    config's folder, each job's config is composed with the Hydra overrides."""
    with read_write(config.hydra), open_dict(config.hydra):
        config.hydra.sweep.dir = str(sweep_dir)
        config.hydra.overrides.hydra.append(f"hydra.sweep.dir={sweep_dir}")


class SweepCallback(Callback):
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        make_tracker(_experiment(config)).prepare()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        os.environ[SWEEP_TOKEN_ENV] = uuid.uuid4().hex  # jobs report a shared bad input once
        cfg = _experiment(config)
        tracker = make_tracker(cfg)
        manifest = new_manifest(config, cfg)
        try:
            tracker.preflight()
        except TrackingError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise Reported(exc) from None
        sweeper = str(config.hydra.sweeper.get("_target_", ""))
        check_suite(cfg, manifest.swept_keys, any(name in sweeper for name in PREFLIGHT_SWEEPERS))
        extends = "silas_tune" in sweeper  # more trials
        if cfg is not None and cfg.resume and not holds(sweep_dir, manifest.command_key):
            done = tracker.finished_sweep(manifest.command_key)  # resumed from elsewhere
            if done is not None:
                print(done)
                raise Reported(AlreadyFinished(done)) from None
        try:
            got = claim(sweep_dir, manifest, bool(cfg and cfg.resume), timestamped(config),
                        tracked=cfg is not None and cfg.tracking.enabled, extends=extends)
        except AlreadyFinished as exc:
            print(exc)
            footer = tracker.sweep_footer(sweep_dir)
            if footer:
                print(footer)
            sys.stdout.flush()
            raise Reported(exc) from None
        except ConfigError as exc:
            report(exc, "bad input")
            raise Reported(exc) from None
        if got.resumed:
            print(f"Resuming sweep {got.manifest.sweep_id} in {got.sweep_dir}: its finished jobs "
                  "are kept, its looks taken as recorded.")
        if got.moved_from is not None:
            move_sweep(config, got.sweep_dir)
            print(f"{got.moved_from} holds another sweep (started in the same second); this "
                  f"sweep writes to {got.sweep_dir}")
        remove_sweep_end(got.sweep_dir)  # an interrupted end is this sweep's to finish again
        tracker.start_sweep(got.sweep_dir, got.manifest, list(config.hydra.overrides.task))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        # Hydra turns an exception raised here into a warning and exit code 0:
        # end_of_sweep reports its own failures, the tracker is always told the
        # sweep is over (no run left RUNNING), and a failure exits 1 (Reported).
        sweep_dir = Path(str(config.hydra.sweep.dir))
        cfg = _experiment(config)
        tracker = make_tracker(cfg)
        outcome = end_of_sweep(sweep_dir, cfg)
        if tracker.end_sweep(sweep_dir, outcome.end):
            update_manifest(sweep_dir, lambda m: setattr(m, "ended_at", time.time()))
        footer = tracker.sweep_footer(sweep_dir)
        if footer:
            print(footer)
        sys.stdout.flush()
        if not outcome.ok:
            raise Reported(SweepFailed(f"{len(outcome.failed)} job(s) failed" if outcome.failed
                                       else "the end-of-sweep summary failed"))
        after_sweep(sweep_dir, cfg, outcome.end)  # case errors, fail_on: run/exit_policy.py
