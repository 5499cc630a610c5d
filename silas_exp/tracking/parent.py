"""A sweep's parent run: its tags, the unfinished sweep a resume continues, the
finished jobs a resume skips, and the one place where the parent is closed.

Whichever process closes the parent — the background uploader, or the
launching process with ``tracking.background=false`` — calls ``close_parent``
with the sweep's ``SweepEnd`` (what the end-of-sweep analysis hands over: tags,
metrics, params, description, tables, files to attach). No mlflow import here.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from silas_exp.records import SweepEnd, SweepManifest
from silas_exp.tracking.payload import code_revision, standard_tags

if TYPE_CHECKING:
    from silas_exp.config import ExperimentConfig
    from silas_exp.tracking.store import MlflowStore


def command_key(cli_overrides: list[str]) -> str:
    """Identity of a sweep command for resuming: its overrides, sorted, without
    the resume flag and output-folder overrides."""
    keep = [o for o in cli_overrides
            if not o.lstrip("+~").startswith(("resume=", "hydra.sweep.dir=", "hydra.run.dir="))]
    return " ".join(sorted(keep))


def sweep_command(cli_overrides: list[str]) -> str:
    return "python -m silas_exp -m " + " ".join(shlex.quote(o) for o in cli_overrides)


def parent_tags(cfg: ExperimentConfig, manifest: SweepManifest, key: str) -> dict[str, str]:
    return {
        "silas.sweep_id": manifest.sweep_id, "silas.kind": "sweep",
        "silas.command": manifest.command, "silas.command_key": key,
        "silas.swept_keys": ",".join(manifest.swept_keys),
        "silas.suite": cfg.suite.name, "silas.git_revision": code_revision(cfg.paths.root),
        "llm.backend": cfg.model.backend,
        "llm.simulated": str(cfg.model.backend == "simulated").lower(),
        **standard_tags(cfg.paths.root),
    }


def find_resumable_sweep(store: MlflowStore, experiment_id: str, key: str) -> Any | None:
    """Latest parent run of an unfinished sweep with the same command key."""
    runs = store.search_runs(
        [experiment_id], filter_string="tags.`silas.kind` = 'sweep'", max_results=200)
    for run in sorted(runs, key=lambda r: r.info.start_time, reverse=True):
        if run.data.tags.get("silas.command_key") == key and run.info.status != "FINISHED":
            return run
    return None


def latest_sweep(store: MlflowStore, experiment_id: str, key: str) -> Any | None:
    """Latest parent run of a sweep with the same command key, whatever its status."""
    runs = store.search_runs(
        [experiment_id], filter_string="tags.`silas.kind` = 'sweep'", max_results=200)
    same = [r for r in runs if r.data.tags.get("silas.command_key") == key]
    return max(same, key=lambda r: r.info.start_time) if same else None


def own_parent(store: MlflowStore, run_id: str) -> Any | None:
    """The parent run a sweep folder's manifest names (a resume reopens it,
    even one closed just before the kill); None when this store lacks it."""
    try:
        return store.get_run(run_id)
    except Exception:  # gone from this store (another store, deleted): look by command
        return None


def reopen_sweep(store: MlflowStore, parent: Any) -> int:
    """Mark the interrupted children of a sweep KILLED and the parent RUNNING again."""
    children = store.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'", max_results=5000)
    stale = [c for c in children if c.info.status == "RUNNING"]
    for child in stale:
        store.log(child.info.run_id, tags={"silas.error": "interrupted; marked KILLED on resume"})
        store.end_run(child.info.run_id, "KILLED")
    store.set_status(parent.info.run_id, "RUNNING")
    return len(stale)


def find_finished_job(store: MlflowStore, sweep: SweepManifest, config_hash: str, repeat: int,
                      suite_version: str) -> Any | None:
    """A FINISHED run of this sweep with the same (config hash, suite version, repeat)."""
    if not sweep.parent_run_id or not sweep.experiment_id:
        return None
    runs = store.search_runs([sweep.experiment_id], filter_string=(
        f"tags.`mlflow.parentRunId` = '{sweep.parent_run_id}' and "
        f"tags.`silas.config_hash` = '{config_hash}' and tags.`silas.repeat` = '{repeat}' and "
        f"tags.`silas.suite_version` = '{suite_version}' and attributes.status = 'FINISHED'"),
        max_results=10)
    return runs[0] if runs else None


def close_parent(store: MlflowStore, run_id: str, sweep_dir: Path, end: SweepEnd) -> None:
    """Log what the sweep's end hands over to its parent run, then end the run
    with the sweep's status. ``end.artifacts``: paths relative to the sweep
    folder; a folder is logged under its own name, a missing path is skipped."""
    tags = dict(end.tags)
    if end.description:
        tags["mlflow.note.content"] = end.description
    if end.params or end.metrics or tags:
        store.log(run_id, params=end.params, metrics=end.metrics, tags=tags)
    logged = {a.path for a in store.client.list_artifacts(run_id)} if end.tables else set()
    for name, columns in end.tables.items():
        if name not in logged:  # log_table appends: a resumed end logs each table once
            store.log_table(run_id, columns, name)
    for rel in end.artifacts:
        path = sweep_dir / rel
        if path.is_dir():
            store.log_artifacts(run_id, path, rel)
        elif path.is_file():
            parent = str(Path(rel).parent)
            store.log_artifact(run_id, path, None if parent == "." else parent)
    store.end_run(run_id, end.status)
