"""Background uploader: the one process that writes a sweep to MLflow.

Jobs never import mlflow in this mode: each writes ``job.json`` when it starts
and ``result.json`` when it ends (they keep both on disk anyway). This process,
started by the launching process at the beginning of the multirun, creates the
store, the experiment and the parent run once the first job has started (a
sweep refused before its first job leaves nothing in MLflow), turns job
folders into child runs as they appear, and closes the parent when the sweep
writes its end record (``sweep.done``, a ``SweepEnd``).
On a 2-core machine the tracking work (importing mlflow ~1 s, creating a
fresh SQLite store ~1.5 s, ~50 ms per job) runs beside the jobs instead of
between them, and only one process ever writes the SQLite store.

If the launching process dies (Ctrl-C, kill -9), open runs are marked KILLED;
a resume of the sweep logs the finished jobs it had not logged yet
(``catch_up``).
``silas-exp upload SWEEP_DIR`` runs the same code once, to upload a sweep
whose tracking failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from silas_exp.errors import RecordError, SilasExpError
from silas_exp.records import (
    MANIFEST_FILE,
    RESULT_FILE,
    JobResult,
    SweepEnd,
    SweepManifest,
    read_job_result,
    read_manifest,
    read_sweep_end,
    update_manifest,
)
from silas_exp.tracking.jobs import JOB_FILE, log_job_folder, open_job_run
from silas_exp.tracking.parent import close_parent

T = TypeVar("T")

TRACKED_FILE = ".tracked.json"
UPLOADER_NICENESS = 10
LOG_FILE = "tracking.log"


def start(sweep_dir: Path) -> subprocess.Popen:
    log = open(sweep_dir / LOG_FILE, "ab")  # noqa: SIM115  (handed to the child)
    return subprocess.Popen(
        [sys.executable, "-m", "silas_exp.tracking.background", str(sweep_dir),
         "--parent-pid", str(os.getpid())],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"},
    )


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # absent or still being written


def job_end_time(job_dir: Path, result: JobResult) -> float | None:
    """When the job ended: its run record's ``completed_at``, else when it wrote
    its record (a failed job has no run record)."""
    if result.run is not None and result.run.completed_at is not None:
        return result.run.completed_at.timestamp()
    try:
        return (job_dir / RESULT_FILE).stat().st_mtime
    except OSError:
        return None


class Uploader:
    def __init__(self, sweep_dir: Path, schema: Path | None = None) -> None:
        from silas_exp.tracking.store import MlflowStore

        self.dir = sweep_dir
        info = read_manifest(sweep_dir)
        if info is None:
            raise RecordError(f"{sweep_dir}: no {MANIFEST_FILE}; pass the folder of a silas_exp sweep")
        self.info = info
        self.store = MlflowStore(info.tracking_uri, info.artifact_root, schema)
        self.store.ensure_store()
        info.experiment_id = info.experiment_id or self.store.ensure_experiment(info.experiment_name)
        self.experiment_tags = self.store.experiment_tags(info.experiment_id)
        if not info.parent_run_id:
            info.parent_run_id = self.store.start_run(
                info.experiment_id, f"sweep-{info.sweep_id}", info.parent_tags,
                start_time=info.started_at or None)

            def own_ids(manifest: SweepManifest) -> None:
                manifest.experiment_id, manifest.parent_run_id = info.experiment_id, info.parent_run_id

            # into the manifest as it is now: the launching process may have changed
            # it since it was read above (creating a store takes seconds)
            self.info = update_manifest(sweep_dir, own_ids) or info
        self.open_runs: dict[Path, str] = {}

    def pending(self) -> list[Path]:
        return sorted(d for d in self.dir.iterdir()
                      if d.is_dir() and (d / JOB_FILE).is_file() and not (d / TRACKED_FILE).exists())

    def step(self, job_dir: Path) -> bool:
        """Advance one job folder; True when its run is complete. A job that
        has ended before its run was opened (the uploader lags behind the
        jobs) gets its params, metrics and tags in one batch."""
        job = _read(job_dir / JOB_FILE)
        if job is None:
            return False
        result: JobResult | None = None
        broken: RecordError | None = None
        if (job_dir / RESULT_FILE).is_file():
            try:
                result = read_job_result(job_dir)
            except RecordError as exc:  # written atomically: a broken record stays broken
                broken = exc
        outcome_logged = job_dir not in self.open_runs and result is not None
        if job_dir not in self.open_runs:
            self.open_runs[job_dir] = open_job_run(
                self.store, self.info.experiment_id, job, self.info.parent_run_id,
                self.experiment_tags, finished=result.metrics if result is not None else None)
        if result is None and broken is None:
            return False
        run_id = self.open_runs.pop(job_dir)
        if result is None:
            self.store.log(run_id, tags={"silas.error": str(broken)[:4000]})
            self.store.end_run(run_id, "FAILED")
            (job_dir / TRACKED_FILE).write_text(json.dumps({"run_id": run_id, "status": "FAILED"}))
            return True
        log_job_folder(self.store, run_id, job_dir, result.metrics,
                       job.get("log_case_table", True), job, outcome_logged=outcome_logged)
        status = "FINISHED" if result.finished else "FAILED"
        if status == "FAILED":
            self.store.log(run_id, tags={"silas.error": str(result.error)[:4000]})
        self.store.end_run(run_id, status, end_time=job_end_time(job_dir, result))
        (job_dir / TRACKED_FILE).write_text(json.dumps({"run_id": run_id, "status": status}))
        return True

    def drain(self) -> int:
        return sum(self.step(d) for d in self.pending())

    def tracked(self) -> int:
        return sum(1 for d in self.dir.iterdir() if (d / TRACKED_FILE).exists())

    def finish(self, end: SweepEnd) -> None:
        """Close what is still open and the parent run, with the sweep's end."""
        for run_id in self.open_runs.values():
            self.store.log(run_id, tags={"silas.error": "sweep interrupted"})
            self.store.end_run(run_id, "KILLED")
        self.open_runs.clear()
        close_parent(self.store, self.info.parent_run_id, self.dir, end)


def catch_up(sweep_dir: Path) -> int:
    """Log the jobs a killed sweep finished and its uploader (killed with it)
    had not logged yet, so that a resume keeps them instead of running them
    again; return how many. Jobs without a record are left to run again."""
    done = [d for d in sorted(sweep_dir.iterdir()) if d.is_dir() and (d / JOB_FILE).is_file()
            and (d / RESULT_FILE).is_file() and not (d / TRACKED_FILE).exists()]
    if not done:
        return 0
    up = Uploader(sweep_dir)
    return sum(up.step(d) for d in done)


def first_job_or_end(sweep_dir: Path, parent_pid: int | None, poll_s: float = 0.1) -> bool:
    """Wait until the sweep has a job folder to log or an end to record: True.
    False when the launching process ended first, or the sweep gave its
    folder back (``sweep.json`` gone: refused before its first job): such a
    sweep leaves no store, experiment or run behind."""
    while True:
        if not (sweep_dir / MANIFEST_FILE).is_file():
            return False
        if read_sweep_end(sweep_dir) is not None or any(
                (d / JOB_FILE).is_file() for d in sweep_dir.iterdir() if d.is_dir()):
            return True
        if parent_pid is not None and os.getppid() != parent_pid:
            return False
        time.sleep(poll_s)


def _niced_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a thread of its own, niced by UPLOADER_NICENESS; this thread
    keeps its priority. Linux gives each thread its own niceness; elsewhere
    (or where it cannot be set) the whole process is niced, for good."""
    outcome: list = []

    def niced() -> None:
        tid = threading.get_native_id()
        try:
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid)
                           + UPLOADER_NICENESS)
        except (OSError, AttributeError):  # no per-thread niceness: the process's
            with contextlib.suppress(OSError):
                os.nice(UPLOADER_NICENESS)
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # noqa: BLE001  (raised again in the calling thread)
            outcome.append((False, exc))

    if not sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.nice(UPLOADER_NICENESS)
        return fn()
    thread = threading.Thread(target=niced, name="upload-beside-jobs")
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def run(sweep_dir: Path, parent_pid: int | None, poll_s: float = 0.1, niced: bool = False) -> int:
    """Upload the sweep until it has ended (its ``sweep.done``) and every job is
    logged. ``niced`` (beside a running sweep): the jobs come first, so until
    the sweep has ended the upload runs niced: on a busy machine it lags and
    catches up instead of slowing every job. Once the sweep has ended, the
    launching process only waits for it: what is left is logged at the
    uploader's own priority (a niced process could not undo its niceness)."""
    if niced:
        up = _niced_thread(lambda: _upload(sweep_dir, parent_pid, poll_s, until_end=True))
    else:
        up = _upload(sweep_dir, parent_pid, poll_s, until_end=False)
    return up if isinstance(up, int) else _upload_rest(up, sweep_dir, parent_pid, poll_s)


def _upload(sweep_dir: Path, parent_pid: int | None, poll_s: float,
            until_end: bool) -> Uploader | int:
    """From the first job on: the uploader, returned as soon as the sweep's end
    is seen (``until_end``), else the exit code once all is logged."""
    # mlflow's import (~1 s) and a new store's schema (~2.5 s of CPU), while the sweep starts
    from silas_exp.tracking.store import schema_ahead

    info = read_manifest(sweep_dir)
    with schema_ahead(info.tracking_uri if info is not None else "") as schema:
        if not first_job_or_end(sweep_dir, parent_pid, poll_s):
            return 0
        up = Uploader(sweep_dir, schema)
    if until_end:
        while read_sweep_end(sweep_dir) is None:
            if parent_pid is not None and os.getppid() != parent_pid:
                return up
            if not up.drain():
                time.sleep(poll_s)
        return up
    return _upload_rest(up, sweep_dir, parent_pid, poll_s)


def _upload_rest(up: Uploader, sweep_dir: Path, parent_pid: int | None, poll_s: float) -> int:
    while True:
        end = read_sweep_end(sweep_dir)
        progressed = up.drain()
        if end is not None and not up.pending():
            up.finish(end)
            return 0
        if parent_pid is not None and os.getppid() != parent_pid:
            up.drain()
            up.finish(SweepEnd(status="KILLED", metrics={"sweep.jobs": up.tracked()},
                               artifacts=[MANIFEST_FILE]))
            return 1
        if not progressed:
            time.sleep(poll_s)


def main() -> None:
    parser = argparse.ArgumentParser(description="Upload a silas_exp sweep folder to MLflow.")
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--parent-pid", type=int, default=None)
    args = parser.parse_args()
    try:
        # beside a running sweep (--parent-pid), niced until the sweep has ended
        code = run(args.sweep_dir, args.parent_pid, niced=args.parent_pid is not None)
    except SilasExpError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = exc.exit_code
    sys.stdout.flush()
    sys.stderr.flush()
    # every write is committed by now; skip interpreter teardown (mlflow's exit
    # hooks cost ~0.7 s, which the sweep would otherwise wait for)
    os._exit(code)


if __name__ == "__main__":
    main()
