"""What the rest of silas_exp asks of tracking, and the two answers.

The sweep's own code (``silas_exp.run.callback``, ``silas_exp.run.execute``) decides what
happens and when; it hands plain values (a job's folder and metrics, the
sweep's manifest and its ``SweepEnd``) to a ``Tracker``. Tracking never calls
back: it imports records, config, llm and errors, never the runner, probes,
analysis or the app.

* ``MlflowTracker``: an MLflow store; a sweep's jobs log themselves, or (the
  default, ``tracking.background``) one background uploader process does every
  MLflow write of the sweep.
* ``NullTracker``: ``tracking=none``; results stay in the job folders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from silas_exp.tracking.base import FinishedJob, JobRun, NullTracker, Tracker

if TYPE_CHECKING:
    from silas_exp.config import ExperimentConfig

__all__ = ["FinishedJob", "JobRun", "NullTracker", "Tracker", "make_tracker"]


def make_tracker(cfg: ExperimentConfig | None) -> Tracker:
    """The tracker of a (validated) config; None (a config that does not
    validate: the job reports it) or tracking=none: the null tracker."""
    if cfg is None or not cfg.tracking.enabled:
        return NullTracker()
    from silas_exp.tracking.mlflow_tracker import MlflowTracker

    return MlflowTracker(cfg)
