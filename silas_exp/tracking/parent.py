"""What a sweep's parent run shows beyond its job runs.

The end-of-sweep analysis (in the launching process) fills a ``ParentSummary``
and writes it to ``<sweep dir>/parent.json``; whichever process closes the
parent run — the background uploader or, with ``tracking.background=false``,
the launching process — applies it just before the run ends. The file is the
whole contract between the two: the analysis never imports mlflow, the
uploader never imports the analysis. No mlflow import here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from silas_exp.tracking.store import MlflowStore

PARENT_FILE = "parent.json"
SCHEMA_VERSION = 1


@dataclass
class ParentSummary:
    """``description`` becomes the run's description (``mlflow.note.content``,
    markdown); ``artifacts`` are paths relative to the sweep folder (files or
    folders), logged under the same relative path."""

    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    description: str | None = None
    artifacts: list[str] = field(default_factory=list)
    version: int = SCHEMA_VERSION

    def write(self, sweep_dir: Path) -> Path:
        path = sweep_dir / PARENT_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(path)  # atomic: the uploader never reads half a file
        return path

    @classmethod
    def read(cls, sweep_dir: Path) -> ParentSummary | None:
        path = sweep_dir / PARENT_FILE
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        if data.get("version") != SCHEMA_VERSION:
            raise ValueError(f"{path}: parent summary version {data.get('version')!r}, "
                             f"expected {SCHEMA_VERSION}")
        return cls(**data)


def apply_parent_summary(store: MlflowStore, run_id: str, sweep_dir: Path) -> ParentSummary | None:
    """Log ``parent.json`` of a sweep folder (if any) to its parent run."""
    summary = ParentSummary.read(sweep_dir)
    if summary is None:
        return None
    tags = dict(summary.tags)
    if summary.description:
        tags["mlflow.note.content"] = summary.description
    store.log(run_id, params=summary.params, metrics=summary.metrics, tags=tags)
    for rel in summary.artifacts:
        path = sweep_dir / rel
        if path.is_dir():
            store.log_artifacts(run_id, path, rel)
        elif path.is_file():
            parent = str(Path(rel).parent)
            store.log_artifact(run_id, path, None if parent == "." else parent)
    return summary
