"""The ``Tracker`` protocol (what the sweep hands tracking), its run and
finished-job values, and the null tracker of ``tracking=none``. The MLflow
tracker implements the protocol; ``silas_exp.tracking.tracker`` chooses one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from silas_exp.records import SweepEnd, SweepManifest

if TYPE_CHECKING:
    from silas_exp.tracking.jobs import JobKey


class JobRun(Protocol):
    """One job's tracked run, around the job (``with tracker.job(...) as run``):
    it ends FINISHED, FAILED or KILLED with the block."""

    def __enter__(self) -> JobRun: ...

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...

    def log_outcome(self, metrics: dict[str, float]) -> None:
        """The job finished and wrote its record: log its folder."""


@dataclass(frozen=True)
class FinishedJob:
    """A job an earlier, interrupted invocation of the sweep finished (its record,
    with its exact metrics, comes with ``Tracker.restore_job``)."""

    run_id: str


class Tracker(Protocol):
    def preflight(self) -> None:
        """Raise TrackingError now if tracking cannot work (before any job runs)."""

    def prepare(self) -> None:
        """A single run, in the launching process: the store and experiment exist."""

    def start_sweep(self, sweep_dir: Path, manifest: SweepManifest, cli: list[str]) -> None:
        """A sweep starts (launching process): fill and write the manifest's
        tracking part (experiment, parent run, background uploader)."""

    def job(self, job: JobKey, manifest: SweepManifest | None, suite_version: str,
            out_dir: Path) -> JobRun: ...

    def finished_sweep(self, command_key: str) -> str | None:
        """resume=true outside the sweep's folder: when the last sweep of this
        command has finished, what to print of its result (else None)."""

    def find_finished_job(self, manifest: SweepManifest, config_hash: str, repeat: int,
                          suite_version: str) -> FinishedJob | None:
        """resume=true: this job, FINISHED by an earlier invocation of the sweep."""

    def restore_job(self, done: FinishedJob, out_dir: Path) -> None:
        """Bring a finished job's record (and per-case results) into ``out_dir``."""

    def end_sweep(self, sweep_dir: Path, end: SweepEnd) -> bool:
        """The sweep ended (its ``sweep.done`` is written): close its parent
        run; False when tracking did not get it (a resume hands it over again)."""

    def run_footer(self) -> str | None:
        """Where a single run's tracked result is, to print at its end."""

    def sweep_footer(self, sweep_dir: Path) -> str | None:
        """Where the sweep's tracked results are, to print at its end."""


class _NullRun:
    def __enter__(self) -> _NullRun:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        return None

    def log_outcome(self, metrics: dict[str, float]) -> None:
        return None


class NullTracker:
    """``tracking=none``: nothing leaves the job folders."""

    def preflight(self) -> None:
        return None

    def prepare(self) -> None:
        return None

    def start_sweep(self, sweep_dir: Path, manifest: SweepManifest, cli: list[str]) -> None:
        return None

    def job(self, job: JobKey, manifest: SweepManifest | None, suite_version: str,
            out_dir: Path) -> JobRun:
        return _NullRun()

    def finished_sweep(self, command_key: str) -> str | None:
        return None

    def find_finished_job(self, manifest: SweepManifest, config_hash: str, repeat: int,
                          suite_version: str) -> FinishedJob | None:
        return None

    def restore_job(self, done: FinishedJob, out_dir: Path) -> None:
        raise RuntimeError("tracking=none finds no finished job to restore")

    def end_sweep(self, sweep_dir: Path, end: SweepEnd) -> bool:
        return True

    def run_footer(self) -> str | None:
        return None

    def sweep_footer(self, sweep_dir: Path) -> str | None:
        return None
