"""Per-job and per-sweep tracking, on top of ``MlflowStore``.

``SweepInfo`` is written by the launching process (Hydra callback) to
``<sweep dir>/sweep.json`` and read by every job, whatever launcher runs it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from silas_exp.tracking.payload import flatten, git_revision, package_versions

if TYPE_CHECKING:
    from silas_exp.config import ExperimentConfig
    from silas_exp.runner import JobOutcome, JobSpec
    from silas_exp.tracking.store import MlflowStore

SWEEP_FILE = "sweep.json"


@dataclass
class SweepInfo:
    sweep_id: str
    experiment_name: str
    swept_keys: list[str] = field(default_factory=list)
    experiment_id: str | None = None
    parent_run_id: str | None = None
    tracking_uri: str | None = None
    command: str = ""

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / SWEEP_FILE
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def read(cls, folder: Path) -> SweepInfo | None:
        path = folder / SWEEP_FILE
        return cls(**json.loads(path.read_text())) if path.is_file() else None


def new_sweep_id() -> str:
    return uuid.uuid4().hex[:12]


def experiment_name(cfg: ExperimentConfig) -> str:
    return f"{cfg.tracking.experiment_prefix}-{cfg.suite.name}"


def open_store(cfg: ExperimentConfig) -> MlflowStore | None:
    if not cfg.tracking.enabled:
        return None
    from silas_exp.tracking.store import MlflowStore  # lazy: importing mlflow costs ~1.2 s

    return MlflowStore(cfg.tracking.uri, cfg.tracking.artifact_root)


def run_tags(cfg: ExperimentConfig, job: JobSpec, sweep: SweepInfo | None) -> dict[str, str]:
    tags = {
        "silas.variant": job.variant,
        "silas.repeat": str(job.repeat),
        "silas.seed": str(job.seed),
        "silas.config_hash": cfg.variant_hash(),
        "silas.suite": cfg.suite.name,
        "silas.scorer": cfg.scorer.name,
        "silas.git_revision": git_revision(cfg.paths.root),
        "llm.backend": cfg.model.backend,
        "llm.simulated": str(cfg.model.backend == "simulated").lower(),
        "mlflow.source.name": "silas_exp",
    }
    tags.update({f"version.{k}": v for k, v in package_versions().items()})
    if sweep is not None:
        tags["silas.sweep_id"] = sweep.sweep_id
    return tags


class JobTracker:
    """Context manager around one job's MLflow run: the run is created on entry
    (with its config as params, so even a crashed job shows what it ran) and
    always ends FINISHED, FAILED or KILLED on exit — never left RUNNING."""

    def __init__(self, store: MlflowStore | None, cfg: ExperimentConfig, job: JobSpec,
                 sweep: SweepInfo | None) -> None:
        self.store, self.cfg, self.job, self.sweep = store, cfg, job, sweep
        self.run_id: str | None = None
        self.experiment_id: str | None = None

    def __enter__(self) -> JobTracker:
        if self.store is None:
            return self
        exp_id = self.sweep.experiment_id if self.sweep and self.sweep.experiment_id else None
        self.experiment_id = exp_id or self.store.ensure_experiment(experiment_name(self.cfg))
        parent = self.sweep.parent_run_id if self.sweep else None
        name = f"{self.job.variant}#r{self.job.repeat}"
        self.run_id = self.store.start_run(self.experiment_id, name,
                                           run_tags(self.cfg, self.job, self.sweep), parent)
        params = flatten(self.cfg.model_dump(mode="json", exclude={"paths"}))
        params["job.seed"] = str(self.job.seed)
        self.store.log(self.run_id, params=params)
        return self

    def log_outcome(self, outcome: JobOutcome, out_dir: Path) -> None:
        if self.store is None or self.run_id is None:
            return
        tags = {"silas.suite_version": outcome.suite_version,
                "silas.pass_rate": f"{outcome.run.summary.pass_rate:.3f}"}
        self.store.log(self.run_id, metrics=outcome.metrics, tags=tags)
        if self.cfg.tracking.log_case_table:
            self.store.log_table(self.run_id, case_table(outcome), "cases.json")
        hydra_dir = out_dir / ".hydra"
        if hydra_dir.is_dir():
            self.store.log_artifacts(self.run_id, hydra_dir, "hydra")
        for name in ("result.json", "feedback.sqlite", "calibration.json"):
            if (out_dir / name).is_file():
                self.store.log_artifact(self.run_id, out_dir / name)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.store is None or self.run_id is None:
            return
        if exc_type is None:
            status = "FINISHED"
        elif issubclass(exc_type, KeyboardInterrupt | SystemExit) and exc_type is not SystemExit:
            status = "KILLED"
        else:
            status = "FAILED"
        if exc is not None:
            self.store.log(self.run_id, tags={"silas.error": f"{exc_type.__name__}: {exc}"[:4000]})
        self.store.end_run(self.run_id, status)
        if status == "KILLED" and self.sweep and self.sweep.parent_run_id:
            self.store.end_run(self.sweep.parent_run_id, "KILLED")


def case_table(outcome: JobOutcome) -> dict[str, list[Any]]:
    """Per-case results as columns (for ``MlflowClient.log_table``)."""
    results = outcome.run.results
    keys = sorted({k for r in results for k in r.metrics})
    table: dict[str, list[Any]] = {
        "case_id": [r.case_id for r in results],
        "status": [r.status for r in results],
        "latency_ms": [round(r.latency_ms, 2) for r in results],
        "token_cost": [r.token_cost for r in results],
        "error": [r.error or "" for r in results],
    }
    for key in keys:
        table[key] = [r.metrics.get(key) for r in results]
    return table
