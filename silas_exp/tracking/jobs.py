"""Per-job and per-sweep tracking, on top of ``MlflowStore``.

The sweep's manifest (``SweepManifest``, ``silas_exp.records``) is written by
the launching process (Hydra callback) to ``<sweep dir>/sweep.json`` and read
by every job, whatever launcher runs it.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from silas_exp.probes.report import PROBE_TABLE, probe_table
from silas_exp.records import CASES_FILE, RESULT_FILE, SweepManifest, read_job_result
from silas_exp.schema.benchmark import BenchmarkResult
from silas_exp.tracking.payload import (
    BASELINE_RUN_TAG,
    baseline_key,
    code_revision,
    default_params,
    flatten,
    run_params,
    standard_tags,
    suite_dataset,
)

if TYPE_CHECKING:  # mlflow is imported only where a store is opened (~1.2 s)
    from silas_exp.config import ExperimentConfig
    from silas_exp.runner import JobOutcome, JobSpec
    from silas_exp.tracking.store import MlflowStore

def command_key(cli_overrides: list[str]) -> str:
    """Identity of a sweep command for resuming: its overrides, sorted, without
    the resume flag and output-folder overrides."""
    keep = [o for o in cli_overrides
            if not o.lstrip("+~").startswith(("resume=", "hydra.sweep.dir=", "hydra.run.dir="))]
    return " ".join(sorted(keep))


def find_resumable_sweep(store: MlflowStore, experiment_id: str, key: str) -> Any | None:
    """Latest parent run of an unfinished sweep with the same command key."""
    runs = store.search_runs(
        [experiment_id], filter_string="tags.`silas.kind` = 'sweep'", max_results=200)
    for run in sorted(runs, key=lambda r: r.info.start_time, reverse=True):
        if run.data.tags.get("silas.command_key") == key and run.info.status != "FINISHED":
            return run
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


def new_sweep_id() -> str:
    return uuid.uuid4().hex[:12]


def experiment_name(cfg: ExperimentConfig) -> str:
    """``tracking.experiment`` (or MLFLOW_EXPERIMENT_NAME), else one per suite."""
    return cfg.tracking.experiment or f"{cfg.tracking.experiment_prefix}-{cfg.suite.name}"


def open_store(cfg: ExperimentConfig) -> MlflowStore | None:
    if not cfg.tracking.enabled:
        return None
    from silas_exp.tracking.store import MlflowStore  # lazy: importing mlflow costs ~1.2 s

    return MlflowStore(cfg.tracking.uri, cfg.tracking.artifact_root)


def run_tags(cfg: ExperimentConfig, job: JobSpec, sweep: SweepManifest | None) -> dict[str, str]:
    tags = {
        "silas.variant": job.variant,
        "silas.repeat": str(job.repeat),
        "silas.seed": str(job.seed),
        "silas.config_hash": cfg.variant_hash(),
        "silas.suite": cfg.suite.name,
        "silas.scorer": cfg.scorer.name,
        "silas.git_revision": code_revision(cfg.paths.root),
        "llm.backend": cfg.model.backend,
        "llm.simulated": str(cfg.model.backend == "simulated").lower(),
        "silas.eviction": cfg.eviction.name,
        "judge.kind": cfg.judge.kind,
        "judge.version": cfg.judge.version,
        **standard_tags(cfg.paths.root),
    }
    if sweep is not None:
        tags["silas.sweep_id"] = sweep.sweep_id
    return tags


JOB_FILE = "job.json"
CALL_LOG = "llm_calls.jsonl"  # the job's model calls (tracing on), turned into MLflow traces


def traces_wanted(cfg: ExperimentConfig) -> bool:
    """tracking.traces: auto = real-model runs only (simulated runs stay fast)."""
    mode = cfg.tracking.traces
    return cfg.tracking.enabled and (mode == "always" or (mode == "auto"
                                                          and cfg.model.backend != "simulated"))


def job_description(cfg: ExperimentConfig, job: JobSpec, sweep: SweepManifest | None,
                    suite_version: str) -> str:
    where = f" of sweep `{sweep.sweep_id}`" if sweep is not None else ""
    return (f"**{job.variant}**, repeat {job.repeat}{where} (seed {job.seed}): suite "
            f"`{cfg.suite.name}` v{suite_version}, model `{cfg.model.name}`, scorer "
            f"`{cfg.scorer.name}`, eviction `{cfg.eviction.name}`, judge `{cfg.judge.name}`.")


def job_payload(cfg: ExperimentConfig, job: JobSpec, sweep: SweepManifest | None,
                suite_version: str) -> dict[str, Any]:
    """Run name, tags, params, dataset and start time of one job's run (both
    tracking paths use it; the background uploader reads it from job.json)."""
    tags = {**run_tags(cfg, job, sweep), "silas.suite_version": suite_version}
    flat = flatten(cfg.model_dump(mode="json", exclude={"paths", "resume"}))
    defaults = sweep.default_params if sweep is not None and sweep.default_params else default_params()
    params = run_params(flat, defaults, sweep.swept_keys if sweep is not None else [])
    params["job.seed"] = str(job.seed)
    return {"run_name": f"{job.variant}#r{job.repeat}", "tags": tags, "params": params,
            "experiment_name": experiment_name(cfg), "log_case_table": cfg.tracking.log_case_table,
            "started_at": time.time(), "description": job_description(cfg, job, sweep, suite_version),
            "dataset": suite_dataset(cfg.suite.path, cfg.suite.name, suite_version, cfg.paths.root),
            "traces": traces_wanted(cfg), "optimize": cfg.metrics.optimize}


def write_job_file(out_dir: Path, payload: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (JOB_FILE + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(out_dir / JOB_FILE)


def open_job_run(store: MlflowStore, experiment_id: str, payload: dict[str, Any],
                 parent_run_id: str | None, experiment_tags: dict[str, str]) -> str:
    """Create a job's run with its own start time, params and dataset input."""
    tags = dict(payload["tags"])
    base = experiment_tags.get(baseline_key(tags.get("silas.suite", "")))
    if base:
        tags[BASELINE_RUN_TAG] = base
    tags["mlflow.note.content"] = payload.get("description", "")
    run_id = store.start_run(experiment_id, payload["run_name"], tags, parent_run_id,
                             start_time=payload.get("started_at"))
    store.log(run_id, params=payload["params"])
    if payload.get("dataset"):
        store.log_dataset(run_id, payload["dataset"])
    return run_id


class JobTracker:
    """Context manager around one job's MLflow run: the run is created on entry
    (with its config as params, so even a crashed job shows what it ran) and
    always ends FINISHED, FAILED or KILLED on exit — never left RUNNING.

    With tracing on (``tracking.traces``), the job's model calls are written to
    ``llm_calls.jsonl`` in ``out_dir`` (default: Hydra's output folder of the
    job) whether or not this process writes to MLflow."""

    def __init__(self, store: MlflowStore | None, cfg: ExperimentConfig, job: JobSpec,
                 sweep: SweepManifest | None, suite_version: str, out_dir: Path | None = None) -> None:
        self.store, self.cfg, self.job, self.sweep = store, cfg, job, sweep
        self.suite_version = suite_version
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self.payload: dict[str, Any] = {}
        self.out_dir = out_dir
        self._calls: contextlib.ExitStack | None = None

    def __enter__(self) -> JobTracker:
        if traces_wanted(self.cfg):
            self._record_calls()
        if self.store is None:
            return self
        exp_id = self.sweep.experiment_id if self.sweep and self.sweep.experiment_id else None
        self.experiment_id = exp_id or self.store.ensure_experiment(experiment_name(self.cfg))
        parent = self.sweep.parent_run_id if self.sweep else None
        self.payload = job_payload(self.cfg, self.job, self.sweep, self.suite_version)
        self.run_id = open_job_run(self.store, self.experiment_id, self.payload, parent,
                                   self.store.experiment_tags(self.experiment_id))
        return self

    def _record_calls(self) -> None:
        from silas_exp.llm.calls import JsonlCallLog, recording

        out_dir = self.out_dir or hydra_output_dir()
        if out_dir is None:
            return
        self._calls = contextlib.ExitStack()
        self._calls.enter_context(recording(JsonlCallLog(Path(out_dir) / CALL_LOG)))

    def log_outcome(self, outcome: JobOutcome, out_dir: Path) -> None:
        if self._calls is not None:
            self._calls.close()
            self._calls = None
        if self.store is None or self.run_id is None:
            return
        log_job_folder(self.store, self.run_id, out_dir, outcome.metrics,
                       self.cfg.tracking.log_case_table, self.payload)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._calls is not None:
            self._calls.close()
            self._calls = None
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


def hydra_output_dir() -> Path | None:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None


ARTIFACT_FILES = (RESULT_FILE, CASES_FILE, "feedback.sqlite", "calibration.json")


def log_job_folder(store: MlflowStore, run_id: str, out_dir: Path, metrics: dict[str, float],
                   log_case_table: bool, payload: dict[str, Any] | None = None) -> None:
    """Log a finished job's metrics, per-case table (read from its results file,
    in chunks), artifacts and (tracing on) model-call traces from its folder;
    complete the run's description."""
    payload = payload or {}
    pass_rate = metrics.get("summary.pass_rate")
    tags = {"silas.pass_rate": f"{pass_rate:.3f}"} if pass_rate is not None else {}
    if "judge.low_agreement" in metrics:
        tags["judge.low_agreement"] = str(bool(metrics["judge.low_agreement"])).lower()
    if payload.get("description"):
        tags["mlflow.note.content"] = payload["description"] + "\n\n" + outcome_line(
            metrics, payload.get("optimize"))
    store.log(run_id, metrics=metrics, tags=tags)
    if log_case_table and (out_dir / RESULT_FILE).is_file():
        for name, table in case_tables(out_dir):
            store.log_table(run_id, table, name)
    probes = out_dir / PROBE_TABLE
    if probes.is_file():
        store.log_table(run_id, probe_table(json.loads(probes.read_text())), PROBE_TABLE)
    hydra_dir = out_dir / ".hydra"
    if hydra_dir.is_dir():
        store.log_artifacts(run_id, hydra_dir, "hydra")
    for name in ARTIFACT_FILES:
        if (out_dir / name).is_file():
            store.log_artifact(run_id, out_dir / name)
    if payload.get("traces") and (out_dir / CALL_LOG).is_file():
        from silas_exp.tracking.traces import log_traces

        log_traces(store, run_id, out_dir / CALL_LOG, probes if probes.is_file() else None)


def outcome_line(metrics: dict[str, float], optimize: str | None) -> str:
    parts = [f"{metrics['summary.cases']:.0f} cases"] if "summary.cases" in metrics else []
    if "summary.pass_rate" in metrics:
        parts.append(f"pass rate {metrics['summary.pass_rate']:.0%}")
    if optimize and optimize in metrics:
        parts.append(f"`{optimize}` = {metrics[optimize]:.4f}")
    if metrics.get("llm.cost_usd"):
        parts.append(f"LLM cost ${metrics['llm.cost_usd']:.4f}")
    return "Result: " + ", ".join(parts) + "." if parts else "No result."


CASE_TABLE_ROWS = 1000  # rows per logged case table: the UI stays usable at any suite size


def case_table(results: Iterable[BenchmarkResult], keys: list[str] | None = None
               ) -> dict[str, list[Any]]:
    """Per-case results as columns for ``log_table``; ``keys``: the metric
    columns (default: every metric these results report)."""
    results = list(results)
    if keys is None:
        keys = sorted({k for r in results for k in r.metrics})
    table: dict[str, list[Any]] = {
        "case_id": [r.case_id for r in results],
        "status": [r.status for r in results],
        "latency_ms": [round(r.latency_ms, 2) for r in results],
        "token_cost": [r.token_cost for r in results],
        "llm_judge_score": [r.llm_judge_score for r in results],
        "error": [r.error or "" for r in results],
    }
    for key in keys:
        table[key] = [r.metrics.get(key) for r in results]
    return table


def case_tables(out_dir: Path, rows: int = CASE_TABLE_ROWS) -> Iterator[tuple[str, dict[str, list[Any]]]]:
    """(artifact name, columns) of a job's case table, read from its results file:
    ``cases.json`` when the job has at most ``rows`` cases, else ``cases/part-0001.json``,
    ``cases/part-0002.json`` … of ``rows`` cases each, all with the same columns
    (the full per-case results are the ``results.jsonl`` artifact)."""
    result = read_job_result(out_dir)
    keys: set[str] = set()
    n = 0
    for r in result.cases(out_dir):
        keys.update(r.metrics)
        n += 1
    columns, again, part = sorted(keys), result.cases(out_dir), 0
    while chunk := list(islice(again, rows)):
        part += 1
        yield (f"cases/part-{part:04d}.json" if n > rows else "cases.json",
               case_table(chunk, columns))
