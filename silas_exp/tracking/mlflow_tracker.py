"""The MLflow tracker: one store, one experiment per suite, one parent run per
sweep and one child run per job — logged by the jobs themselves, or (sweeps,
``tracking.background``) by one background uploader process.

The uploader is a child of the launching process; its handle is kept here,
by sweep folder, not on the Hydra callback: launchers pickle callbacks for
their workers, and a process handle does not pickle.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from silas_exp.records import (
    RESULT_FILE,
    SweepEnd,
    SweepManifest,
    read_job_result,
    read_manifest,
    write_job_result,
    write_manifest,
)
from silas_exp.tracking import background
from silas_exp.tracking.base import FinishedJob, JobRun
from silas_exp.tracking.jobs import (
    JobKey,
    JobTracker,
    experiment_name,
    job_overrides,
    job_payload,
    write_job_file,
)
from silas_exp.tracking.parent import (
    close_parent,
    command_key,
    find_finished_job,
    find_resumable_sweep,
    latest_sweep,
    own_parent,
    parent_tags,
    reopen_sweep,
)
from silas_exp.tracking.payload import ui_command, ui_link
from silas_exp.tracking.preflight import preflight

if TYPE_CHECKING:
    from silas_exp.config import ExperimentConfig
    from silas_exp.tracking.store import MlflowStore

_UPLOADERS: dict[str, subprocess.Popen] = {}  # sweep folder -> its background uploader
UPLOAD_WAIT_S = 600


class MlflowTracker:
    def __init__(self, cfg: ExperimentConfig) -> None:
        self.cfg = cfg
        self._store: MlflowStore | None = None
        self._last: JobTracker | None = None  # the job run this process logged last

    @property
    def store(self) -> MlflowStore:
        if self._store is None:
            from silas_exp.tracking.store import MlflowStore  # lazy: importing mlflow costs ~1.2 s

            self._store = MlflowStore(self.cfg.tracking.uri, self.cfg.tracking.artifact_root)
        return self._store

    @property
    def uri(self) -> str:
        return str(self.cfg.tracking.uri)

    def preflight(self) -> None:
        preflight(self.cfg.tracking.uri, experiment_name(self.cfg))

    def prepare(self) -> None:
        preflight(self.cfg.tracking.uri, experiment_name(self.cfg))
        self.store.ensure_store()
        self.store.ensure_experiment(experiment_name(self.cfg))

    # -- a sweep (launching process) ---------------------------------------------
    def start_sweep(self, sweep_dir: Path, manifest: SweepManifest, cli: list[str]) -> None:
        cfg = self.cfg
        key = command_key(cli)
        manifest.tracking_uri, manifest.artifact_root = cfg.tracking.uri, cfg.tracking.artifact_root
        manifest.parent_tags = parent_tags(cfg, manifest, key)
        if cfg.tracking.background and not cfg.resume:
            manifest.background = True
            write_manifest(sweep_dir, manifest)
            _UPLOADERS[str(sweep_dir)] = background.start(sweep_dir)
            return
        store = self.store
        store.ensure_store()
        manifest.experiment_id = store.ensure_experiment(manifest.experiment_name)
        previous = None
        if cfg.resume:  # the folder's own sweep first, else the last unfinished one of this command
            previous = (own_parent(store, manifest.parent_run_id) if manifest.parent_run_id
                        else None) or find_resumable_sweep(store, manifest.experiment_id, key)
        if previous is not None:
            manifest.sweep_id = previous.data.tags["silas.sweep_id"]
            manifest.parent_run_id = previous.info.run_id
            killed = reopen_sweep(store, previous)
            print(f"Resuming sweep {manifest.sweep_id} (parent run {manifest.parent_run_id}); "
                  f"{killed} interrupted job run(s) marked KILLED; finished jobs are skipped.")
        else:
            if cfg.resume:
                print("resume=true: no unfinished sweep with this command in MLflow; a new "
                      "parent run records this one.")
            manifest.parent_run_id = store.start_run(
                manifest.experiment_id, f"sweep-{manifest.sweep_id}", manifest.parent_tags,
                start_time=manifest.started_at)
        write_manifest(sweep_dir, manifest)
        if cfg.resume and (caught := background.catch_up(sweep_dir)):
            print(f"Logged {caught} job(s) the interrupted sweep had finished but not logged; "
                  "they are kept.")

    def end_sweep(self, sweep_dir: Path, end: SweepEnd) -> bool:
        uploader = _UPLOADERS.pop(str(sweep_dir), None)
        if uploader is not None:  # it reads the sweep's end record and closes the parent
            try:
                code = uploader.wait(timeout=UPLOAD_WAIT_S)
            except subprocess.TimeoutExpired:
                uploader.kill()
                code = -1
            if code != 0:
                print(f"\ntracking failed (see {sweep_dir / background.LOG_FILE}); every result is "
                      f"kept in {sweep_dir}. Upload later: silas-exp upload {sweep_dir}",
                      file=sys.stderr)
            return code == 0
        manifest = read_manifest(sweep_dir)
        if manifest is not None and manifest.parent_run_id:
            close_parent(self.store, manifest.parent_run_id, sweep_dir, end)
        return True

    def finished_sweep(self, command_key: str) -> str | None:
        store = self.store
        store.ensure_store()
        experiment = store.get_experiment_by_name(experiment_name(self.cfg))
        run = latest_sweep(store, experiment.experiment_id, command_key) if experiment else None
        if run is None or run.info.status != "FINISHED":
            return None
        note = run.data.tags.get("mlflow.note.content", "").split("\n\n")[0].strip("*")
        return (f"resume=true: the last sweep of this command, {run.data.tags.get('silas.sweep_id')}"
                f", has already finished; nothing was run. Its result:\n{note}\n"
                f"  parent run: {ui_link(self.uri, experiment.experiment_id, run.info.run_id)}\n"
                "To run it again as a new sweep, drop resume=true.")

    def sweep_footer(self, sweep_dir: Path) -> str | None:
        manifest = read_manifest(sweep_dir)
        if manifest is None or not manifest.parent_run_id:
            return None
        serve = ui_command(self.uri)
        exp = manifest.experiment_id
        return (f"\nMLflow: experiment {manifest.experiment_name!r}"
                + (f"\n  {serve}" if serve else "")
                + f"\n  runs:       {ui_link(self.uri, exp)}"
                + f"\n  parent run: {ui_link(self.uri, exp, manifest.parent_run_id)}")

    # -- a job -------------------------------------------------------------------
    def job(self, job: JobKey, manifest: SweepManifest | None, suite_version: str,
            out_dir: Path) -> JobRun:
        if manifest is not None and manifest.background:  # the uploader logs it from job.json
            write_job_file(out_dir, job_payload(self.cfg, job, manifest, suite_version,
                                                job_overrides(out_dir)))
            return JobTracker(None, self.cfg, job, manifest, suite_version, out_dir)
        self._last = JobTracker(self.store, self.cfg, job, manifest, suite_version, out_dir)
        return self._last

    def find_finished_job(self, manifest: SweepManifest, config_hash: str, repeat: int,
                          suite_version: str) -> FinishedJob | None:
        if manifest.background:
            return None
        run = find_finished_job(self.store, manifest, config_hash, repeat, suite_version)
        return None if run is None else FinishedJob(run.info.run_id)

    def restore_job(self, done: FinishedJob, out_dir: Path) -> None:
        """The logged record of a job an interrupted invocation finished, into
        this sweep's folder, so the end-of-sweep summary sees it."""
        out_dir.mkdir(parents=True, exist_ok=True)
        download = out_dir / ".resumed"
        result = read_job_result(self.store.download_artifact(done.run_id, RESULT_FILE, download))
        if result.results_file:
            cases = self.store.download_artifact(done.run_id, result.results_file, download)
            Path(cases).replace(out_dir / result.results_file)
        write_job_result(out_dir, result.model_copy(update={"resumed_from": done.run_id}))

    def run_footer(self) -> str | None:
        last = self._last
        link = f"\n{ui_link(self.uri, last.experiment_id, last.run_id)}" \
            if last is not None and last.run_id else ""
        return (ui_command(self.uri) or "MLflow:") + link
