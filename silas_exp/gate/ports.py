"""The gate's two interfaces to the outside, and what a tracking backend shows
of it.

* :class:`RunReader`: logged runs read back as plain values (a study's runs, a
  job's results, tags, artifacts). MLflow is one implementation
  (``silas_exp.tracking.reader.MlflowRunReader``); a new tracking backend's
  read side is one class with these methods.
* :class:`BaselineStore`: where a suite's baseline record and its history are
  kept. The suite folder is one (``silas_exp.baselines.SuiteFolder``: the
  spec's ``baseline.json``, committed with the code); a new store is one class.
* :class:`GateLog`: what the tracking backend records of the gate, for people
  reading its pages (the experiment's pointer to the baseline, the marks on
  the runs, a check's outcome). MLflow's is
  ``silas_exp.tracking.baseline.MlflowGateLog``; ``NoLog`` records nothing.

Nothing in silas_exp.gate imports mlflow; ``tests/spine/test_import_graph.py``
keeps it so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from silas_exp.records import JobResult
from silas_exp.schema.baseline import BaselineRecord, promotion_entry
from silas_exp.schema.runs import LoggedExperiment, LoggedRun


class RunReader(Protocol):
    uri: str

    def run(self, run_id: str) -> LoggedRun:
        """The run, or AnalysisError naming the id and the store."""

    def sweep_runs(self, sweep_id: str) -> tuple[LoggedRun | None, list[LoggedRun]]:
        """A study's parent run (None if absent) and its FINISHED job runs."""

    def job_result(self, run_id: str) -> JobResult:
        """A job run's record with its per-case results."""

    def artifact_text(self, run_id: str, name: str) -> str | None:
        """A text artifact of a run; None when it has none of that name."""

    def experiment(self, name: str) -> LoggedExperiment | None: ...


class BaselineStore(Protocol):
    @property
    def where(self) -> str:
        """Where the record is, for messages (``suites/default/baseline.json``)."""

    def read(self) -> BaselineRecord | None:
        """The current baseline; None when none is promoted."""

    def write(self, record: BaselineRecord) -> None:
        """Make ``record`` the baseline, whole or not at all: a promotion's commit point."""

    def remove(self) -> None:
        """No baseline from now on: a demotion's commit point."""

    def history(self) -> list[dict[str, Any]]:
        """Promotions and demotions, oldest first."""

    def append_history(self, entry: Mapping[str, Any]) -> None: ...


class GateLog(Protocol):
    def user(self) -> str:
        """Who a promotion, demotion or accepted regression is recorded as done by."""

    def may_change_baseline(self, experiment_id: str, action: str) -> None:
        """Raise when the backend would refuse ``action`` (promote, demote) in the
        experiment: before anything is written."""

    def attach_record(self, run_id: str, text: str) -> None:
        """The record, kept on the run it was promoted from."""

    def promoted(self, record: BaselineRecord, run: LoggedRun) -> dict[str, Any]:
        """The backend's side of a promotion (past its commit point); returns the
        history entry (with the runs it replaced)."""

    def pointer(self, experiment_id: str, suite: str) -> str | None:
        """The run the backend names as ``suite``'s baseline, if any."""

    def demoted(self, entry: Mapping[str, Any], experiment_id: str, suite: str) -> None:
        """The run loses its mark and the backend's history gets ``entry``."""

    def unpoint(self, experiment_id: str, suite: str, run_id: str) -> None:
        """The backend's pointer to ``run_id`` goes: the last step of a demotion."""

    def history(self, experiment_id: str, suite: str) -> list[dict[str, Any]]: ...

    def checked(self, run_id: str, tags: Mapping[str, str], markdown: str,
                headline: str) -> None:
        """A check's outcome on the run it checked."""

    def check_run(self, record: BaselineRecord, name: str, *, tags: Mapping[str, str],
                  params: Mapping[str, str], metrics: Mapping[str, float],
                  started: float, ended: float) -> str:
        """A run of its own for a check of a configuration; returns its id."""


class NoLog:
    """``--no-log``, or no tracking backend: the gate records nothing but its
    files (``baseline.json``, the history, ``--out``)."""

    def user(self) -> str:
        import getpass
        import os

        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return os.environ.get("USER", "unknown")

    def may_change_baseline(self, experiment_id: str, action: str) -> None:
        return None

    def attach_record(self, run_id: str, text: str) -> None:
        return None

    def promoted(self, record: BaselineRecord, run: LoggedRun) -> dict[str, Any]:
        return promotion_entry(record, [])

    def pointer(self, experiment_id: str, suite: str) -> str | None:
        return None

    def demoted(self, entry: Mapping[str, Any], experiment_id: str, suite: str) -> None:
        return None

    def unpoint(self, experiment_id: str, suite: str, run_id: str) -> None:
        return None

    def history(self, experiment_id: str, suite: str) -> list[dict[str, Any]]:
        return []

    def checked(self, run_id: str, tags: Mapping[str, str], markdown: str,
                headline: str) -> None:
        return None

    def check_run(self, record: BaselineRecord, name: str, **_: Any) -> str:
        return ""


def suite_dir_of(run: LoggedRun, root: Path) -> Path:
    """The run's suite folder: its ``suite.path`` param, else its dataset input's
    source (relative to the project ``root``)."""
    from silas_exp.errors import AnalysisError

    if run.params.get("suite.path"):
        return Path(run.params["suite.path"])
    for uri in run.dataset_sources:
        path = Path(uri)
        return path if path.is_absolute() else root / path
    raise AnalysisError(f"run {run.run_id} does not say where its suite is; pass --suite-dir")
