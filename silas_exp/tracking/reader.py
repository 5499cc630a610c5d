"""Read logged runs back for analysis (compare, ablation, baselines)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from silas_exp.errors import AnalysisError
from silas_exp.records import RESULT_FILE, JobResult, read_job_result
from silas_exp.tracking.store import MlflowStore


class Reader:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.store = MlflowStore(uri)

    def experiments(self) -> list[Any]:
        return self.store.client.search_experiments()

    def run(self, run_id: str) -> Any:
        try:
            return self.store.get_run(run_id)
        except Exception:
            raise AnalysisError(f"run {run_id!r} not found in {self.uri}; check the id "
                                "(mlflow ui shows it) and --tracking-uri") from None

    def sweep_runs(self, sweep_id: str) -> tuple[Any | None, list[Any]]:
        exps = [e.experiment_id for e in self.experiments()]
        runs = self.store.search_runs(exps, filter_string=f"tags.`silas.sweep_id` = '{sweep_id}'")
        if not runs:
            raise AnalysisError(f"no runs with sweep id {sweep_id!r} in {self.uri}")
        parent = next((r for r in runs if r.data.tags.get("silas.kind") == "sweep"), None)
        children = [r for r in runs if r.data.tags.get("silas.kind") != "sweep"
                    and r.info.status == "FINISHED"]
        return parent, children

    def job_result(self, run_id: str) -> JobResult:
        """The run's job record with its per-case results inside ``run.results``."""
        with tempfile.TemporaryDirectory() as tmp:
            try:
                path = self.store.download_artifact(run_id, RESULT_FILE, Path(tmp))
            except Exception:
                raise AnalysisError(f"run {run_id} has no {RESULT_FILE} artifact") from None
            result = read_job_result(path)
            if result.results_file:
                try:
                    self.store.download_artifact(run_id, result.results_file, Path(tmp))
                except Exception:
                    raise AnalysisError(f"run {run_id} has no {result.results_file} artifact "
                                        "(its per-case results)") from None
            return result.with_cases(path.parent)

    def artifact_text(self, run_id: str, name: str) -> str | None:
        """A text artifact of a run, or None when the run has none of that name."""
        with tempfile.TemporaryDirectory() as tmp:
            try:
                return self.store.download_artifact(run_id, name, Path(tmp)).read_text()
            except Exception:
                return None

    def experiment_by_name(self, name: str) -> Any:
        return self.store.get_experiment_by_name(name)

    def set_experiment_tag(self, experiment_id: str, key: str, value: str) -> None:
        self.store.set_experiment_tag(experiment_id, key, value)

    def set_run_tag(self, run_id: str, key: str, value: str) -> None:
        self.store.log(run_id, tags={key: value})

    def log_artifact(self, run_id: str, path: Path, artifact_path: str | None = None) -> None:
        self.store.log_artifact(run_id, path, artifact_path)

