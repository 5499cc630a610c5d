"""Logged runs as plain values: what a tracking backend's read side hands the
commands that read runs back (the gate, ablation from the store, compare,
report). A backend turns its own run objects into these; nothing above
tracking sees an MLflow object."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoggedRun:
    """One logged run: a job, a study's parent run, or a check's own run."""

    run_id: str
    experiment_id: str
    name: str
    status: str  # FINISHED, RUNNING, FAILED or KILLED
    start_time: int  # milliseconds since the epoch
    tags: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    # where its dataset inputs say they come from, as logged (a suite folder,
    # relative to the project or absolute)
    dataset_sources: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.status == "FINISHED"

    @property
    def is_sweep(self) -> bool:
        """A study's parent run (its jobs are its children)."""
        return self.tags.get("silas.kind") == "sweep"


@dataclass(frozen=True)
class LoggedExperiment:
    experiment_id: str
    name: str
    tags: Mapping[str, str] = field(default_factory=dict)
