"""The control arm of a study: an ablation compares each variant with a
control (§19.5: heuristic-only eviction). When a sweep lists options of a group
named in ``analysis.controls`` (``scorer`` → ``heuristic``, ``eviction`` →
``two_tier``) but not the control option, and no ``analysis.control`` is
given, the control option is added to the sweep and recorded in
``control.json`` in the sweep folder, so the report can say so.

:func:`add_control_arm` is the one step that adds it, from the control's
overrides (``{group: option}``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from silas_exp.analysis.baseline import CONTROL_FILE
from silas_exp.records import write_json_atomic

_SIMPLE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def sweep_options(value: str) -> list[str] | None:
    """The options of a plain comma list (``a,b,c``); None for anything else
    (ranges, choice(), quoted or bracketed values are left alone)."""
    parts = [p.strip() for p in value.split(",")]
    if len(parts) < 2 or not all(p and set(p) <= _SIMPLE for p in parts):
        return None
    return parts


def add_control_arm(params: dict[str, str], arguments: list[str],
                    control: dict[str, str]) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """Put each swept group's control option (``control``: the control's
    overrides, group -> option) first in its sweep list when it is missing;
    return the new params, arguments and what was added. A sweep that names
    ``analysis.control=…`` is left as it is."""
    if any(a.lstrip("+~").startswith("analysis.control=") for a in arguments):
        return params, list(arguments), {}
    added: dict[str, str] = {}

    def fix(key: str, value: str) -> str:
        group = key.lstrip("+~")
        opts = sweep_options(value) if group in control else None
        if opts is None or control[group] in opts:
            return value
        added[group] = control[group]
        return ",".join([control[group], *opts])

    new_params = {k: fix(k, str(v)) for k, v in params.items()}
    new_args = []
    for arg in arguments:
        key, sep, value = arg.partition("=")
        new_args.append(f"{key}={fix(key, value)}" if sep else arg)
    return new_params, new_args, added


def record_added_control(sweep_dir: Path, added: dict[str, str]) -> None:
    """``control.json``: the control option(s) the sweep added itself."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(sweep_dir / CONTROL_FILE, {"added": added})  # whole or not at all


def set_planned_jobs(sweep_dir: Path, total: int) -> None:
    """Progress lines count the planned jobs: those left after the sweeper's
    own-settings filter, or, in a study in rounds (planned one round at a
    time), the jobs launched so far and this round's."""
    try:
        from silas_exp.records import update_manifest

        update_manifest(sweep_dir, lambda info: setattr(info, "jobs_total", total))
    except Exception:  # progress is a nicety; never fail a sweep for it
        return


def grow_planned_jobs(sweep_dir: Path, added: dict[str, str], arguments: list[str],
                      params: dict[str, str]) -> None:
    """Progress lines count planned jobs from the command line; count the
    added control's jobs too."""
    def grow(info: Any) -> None:
        if not info.jobs_total:
            return
        for group in added:
            value = dict(a.partition("=")[::2] for a in arguments).get(group, params.get(group))
            n = len(sweep_options(value) or []) if value else 0
            if n > 1:
                info.jobs_total = info.jobs_total * n // (n - 1)

    try:
        from silas_exp.records import update_manifest

        update_manifest(sweep_dir, grow)
    except Exception:  # progress is a nicety; never fail a sweep for it
        return
