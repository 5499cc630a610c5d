"""Sweep progress: how many of a sweep's jobs are done and about how long the
rest will take, for the line each job prints when it ends."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from silas_exp.records import RESULT_FILE, count_job_results

# sweepers whose jobs are the cartesian product of the overrides
_GRID_SWEEPERS = ("BasicSweeper", "SilasSweeper")


def planned_jobs(task_overrides: Iterable[str], sweeper_params: Mapping[str, Any] | None,
                 sweeper_target: str) -> int | None:
    """Number of jobs a grid sweep will launch, as Hydra's basic sweeper counts
    them; None for other sweepers (Optuna decides as it goes) or on any doubt."""
    if not sweeper_target.endswith(_GRID_SWEEPERS):
        return None
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = [f"{k}={v}" for k, v in (sweeper_params or {}).items()]
    try:
        overrides = OverridesParser.create().parse_overrides([*params, *task_overrides])
        return sum(len(batch) for batch in BasicSweeper.split_arguments(overrides, None))
    except Exception:  # a progress count is never worth failing a sweep for
        return None


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def progress_note(sweep_dir: Path, total: int | None, started_at: float, now: float) -> str:
    """'8/20 done, ~9 s left' from the job folders that hold a result. Of
    the numbered job folders (Hydra's ``${hydra.job.num}``) only jobs
    ``0..total-1`` count: a resumed study re-plans its rounds one at a time,
    and the later rounds' folders left from before are not yet this count's."""
    if not total:
        return f"{count_job_results(sweep_dir)} done"
    done = sum(1 for p in sweep_dir.glob(f"*/{RESULT_FILE}")
               if not p.parent.name.isdigit() or int(p.parent.name) < total)
    left = max(total - done, 0)
    if done == 0 or left == 0 or not started_at:
        return f"{done}/{total} done"
    return f"{done}/{total} done, ~{_duration((now - started_at) / done * left)} left"
