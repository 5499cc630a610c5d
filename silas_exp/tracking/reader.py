"""MLflow's read side: logged runs read back as plain values (``LoggedRun``)
for the gate (silas_exp.gate.ports.RunReader), ablation from the store,
compare, report and the UI command. A new tracking backend's read side is one
class with these methods."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from silas_exp.errors import AnalysisError
from silas_exp.records import RESULT_FILE, JobResult, read_job_result
from silas_exp.schema.runs import LoggedExperiment, LoggedRun
from silas_exp.tracking.store import MlflowStore


def logged(run: Any) -> LoggedRun:
    """An MLflow run as a plain value."""
    sources = []
    for inp in run.inputs.dataset_inputs if run.inputs else []:
        try:
            uri = json.loads(inp.dataset.source).get("uri", "")
        except (ValueError, AttributeError):
            continue
        if uri:
            sources.append(uri)
    return LoggedRun(run.info.run_id, run.info.experiment_id, run.info.run_name or "",
                     run.info.status, int(run.info.start_time or 0), dict(run.data.tags),
                     dict(run.data.params), dict(run.data.metrics), tuple(sources))


class MlflowRunReader:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.store = MlflowStore(uri)

    def experiments(self) -> list[LoggedExperiment]:
        return [LoggedExperiment(e.experiment_id, e.name, dict(e.tags))
                for e in self.store.client.search_experiments()]

    def experiment(self, name: str) -> LoggedExperiment | None:
        exp = self.store.get_experiment_by_name(name)
        return LoggedExperiment(exp.experiment_id, exp.name, dict(exp.tags)) if exp else None

    def run(self, run_id: str) -> LoggedRun:
        try:
            return logged(self.store.get_run(run_id))
        except Exception:
            raise AnalysisError(f"run {run_id!r} not found in {self.uri}; check the id "
                                "(mlflow ui shows it) and --tracking-uri") from None

    def sweep_runs(self, sweep_id: str) -> tuple[LoggedRun | None, list[LoggedRun]]:
        """A study's parent run (None if absent) and its FINISHED job runs."""
        exps = [e.experiment_id for e in self.experiments()]
        runs = [logged(r) for r in
                self.store.search_runs(exps, filter_string=f"tags.`silas.sweep_id` = '{sweep_id}'")]
        if not runs:
            raise AnalysisError(f"no runs with sweep id {sweep_id!r} in {self.uri}")
        parent = next((r for r in runs if r.is_sweep), None)
        return parent, [r for r in runs if not r.is_sweep and r.finished]

    def sweep_parents(self) -> list[LoggedRun]:
        """Every study's parent run in the store."""
        return [logged(r) for e in self.experiments()
                for r in self.store.search_runs([e.experiment_id], "tags.`silas.kind` = 'sweep'")]

    def finished_runs(self, experiment_id: str) -> list[LoggedRun]:
        return [logged(r) for r in
                self.store.search_runs([experiment_id], "attributes.status = 'FINISHED'")]

    def tagged_runs(self, experiment_id: str, tags: dict[str, str]) -> list[LoggedRun]:
        """The experiment's runs carrying every one of ``tags``."""
        where = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
        return [logged(r) for r in self.store.search_runs([experiment_id], filter_string=where)]

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

    def log_artifact(self, run_id: str, path: Path, artifact_path: str | None = None) -> None:
        self.store.log_artifact(run_id, path, artifact_path)
