"""One job's MLflow run, on top of ``MlflowStore``: its name, tags, params and
description (``job_payload``), the run opened and always closed around the job
(``JobTracker``), and what a finished job folder logs (``log_job_folder``).

The background uploader uses the same pieces: a job writes its payload to
``job.json`` and the uploader opens and fills the run from the job folder.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from silas_exp.metrics.names import display_name
from silas_exp.metrics.numbers import num, rounded
from silas_exp.metrics.registry import gate_of, run_key
from silas_exp.records import CASES_FILE, PROBE_TABLE, RESULT_FILE, SweepEnd, SweepManifest
from silas_exp.tracking.parent import close_parent
from silas_exp.tracking.payload import (
    BASELINE_RUN_TAG,
    baseline_key,
    code_revision,
    flatten,
    run_params,
    short_run_name,
    standard_tags,
    suite_dataset,
)
from silas_exp.tracking.permissions import SWEEP, require
from silas_exp.tracking.tables import case_tables, probe_table

if TYPE_CHECKING:  # mlflow is imported only where a store is opened (~1.2 s)
    from silas_exp.config import ExperimentConfig
    from silas_exp.tracking.store import MlflowStore


class JobKey(Protocol):
    """Which job of a sweep: the runner's JobSpec fits."""

    @property
    def variant(self) -> str: ...

    @property
    def repeat(self) -> int: ...

    @property
    def seed(self) -> int: ...

    @property
    def block(self) -> int: ...


def experiment_name(cfg: ExperimentConfig) -> str:
    """``tracking.experiment`` (or MLFLOW_EXPERIMENT_NAME), else one per suite."""
    return cfg.tracking.experiment or f"{cfg.tracking.experiment_prefix}-{cfg.suite.name}"


def run_tags(cfg: ExperimentConfig, job: JobKey, sweep: SweepManifest | None) -> dict[str, str]:
    tags = {
        "silas.variant": job.variant,
        "silas.repeat": str(job.repeat),
        "silas.block": str(job.block),
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


def job_description(cfg: ExperimentConfig, job: JobKey, sweep: SweepManifest | None,
                    suite_version: str) -> str:
    where = f" of sweep `{sweep.sweep_id}`" if sweep is not None else ""
    return (f"**{job.variant}**, repeat {job.repeat}{where} (seed {job.seed}): suite "
            f"`{cfg.suite.name}` v{suite_version}, model `{cfg.model.name}`, scorer "
            f"`{cfg.scorer.name}`, eviction `{cfg.eviction.name}`, judge `{cfg.judge.name}`.")


def job_overrides(out_dir: Path) -> list[str]:
    """The job's command-line overrides, as Hydra saved them in its folder."""
    import yaml

    try:
        return [str(o) for o in yaml.safe_load((out_dir / ".hydra" / "overrides.yaml").read_text())
                or []]
    except (OSError, yaml.YAMLError):
        return []


def job_payload(cfg: ExperimentConfig, job: JobKey, sweep: SweepManifest | None,
                suite_version: str, overrides: list[str] | None = None) -> dict[str, Any]:
    """Run name, tags, params, dataset and start time of one job's run (both
    tracking paths use it; the background uploader reads it from job.json)."""
    tags = {**run_tags(cfg, job, sweep), "silas.suite_version": suite_version}
    flat = flatten(cfg.model_dump(mode="json", exclude={"paths", "resume"}))
    params = run_params(flat, sweep.swept_keys if sweep is not None else [], overrides or [])
    params["job.seed"] = str(job.seed)
    return {"run_name": short_run_name(job.variant, job.repeat, job.block), "tags": tags, "params": params,
            "experiment_name": experiment_name(cfg), "log_case_table": cfg.tracking.log_case_table,
            "started_at": time.time(), "description": job_description(cfg, job, sweep, suite_version),
            "dataset": suite_dataset(cfg.suite.path, cfg.suite.name, suite_version, cfg.paths.root),
            "traces": traces_wanted(cfg), "optimize": cfg.metrics.optimize,
            "priced_as": sorted({cfg.model.main_id, cfg.model.scorer_id, cfg.model.judge_id}),
            "simulated": cfg.model.backend == "simulated", "gate": cfg.analysis.gate}


def write_job_file(out_dir: Path, payload: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (JOB_FILE + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(out_dir / JOB_FILE)


def open_job_run(store: MlflowStore, experiment_id: str, payload: dict[str, Any],
                 parent_run_id: str | None, experiment_tags: dict[str, str],
                 finished: dict[str, float] | None = None) -> str:
    """Create a job's run with its own start time, params and dataset input.
    ``finished``: the metrics of a job that has already ended, logged with its
    params in the same batch (``log_job_folder(..., outcome_logged=True)`` then
    logs the rest)."""
    tags = dict(payload["tags"])
    base = experiment_tags.get(baseline_key(tags.get("silas.suite", "")))
    if base:
        tags[BASELINE_RUN_TAG] = base
    tags["mlflow.note.content"] = payload.get("description", "")
    run_id = store.start_run(experiment_id, payload["run_name"], tags, parent_run_id,
                             start_time=payload.get("started_at"))
    metrics, outcome_tags = job_outcome(finished, payload) if finished is not None else ({}, {})
    store.log(run_id, params=payload["params"], metrics=metrics, tags=outcome_tags)
    if payload.get("dataset"):
        store.log_dataset(run_id, payload["dataset"])
    return run_id


class JobTracker:
    """Context manager around one job's MLflow run: the run is created on entry
    (with its config as params, so even a crashed job shows what it ran) and
    always ends FINISHED, FAILED or KILLED on exit — never left RUNNING.
    Without a store (the background uploader logs the job) it only records calls.

    With tracing on (``tracking.traces``), the job's model calls are written to
    ``llm_calls.jsonl`` in ``out_dir`` whether or not this process writes to MLflow."""

    def __init__(self, store: MlflowStore | None, cfg: ExperimentConfig, job: JobKey,
                 sweep: SweepManifest | None, suite_version: str, out_dir: Path) -> None:
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
        if exp_id is None:  # a single run: refused before its first case, in one paragraph
            require(self.store.uri, experiment_name(self.cfg), SWEEP, "log a sweep or a run")
        self.experiment_id = exp_id or self.store.ensure_experiment(experiment_name(self.cfg))
        parent = self.sweep.parent_run_id if self.sweep else None
        self.payload = job_payload(self.cfg, self.job, self.sweep, self.suite_version,
                                   job_overrides(self.out_dir))
        self.run_id = open_job_run(self.store, self.experiment_id, self.payload, parent,
                                   self.store.experiment_tags(self.experiment_id))
        return self

    def _record_calls(self) -> None:
        from silas_exp.llm.calls import JsonlCallLog, recording

        self._calls = contextlib.ExitStack()
        self._calls.enter_context(recording(JsonlCallLog(self.out_dir / CALL_LOG)))

    def _stop_recording(self) -> None:
        if self._calls is not None:
            self._calls.close()
            self._calls = None

    def log_outcome(self, metrics: dict[str, float]) -> None:
        """Log the finished job from its folder (its record is written by now)."""
        self._stop_recording()
        if self.store is None or self.run_id is None:
            return
        log_job_folder(self.store, self.run_id, self.out_dir, metrics,
                       self.cfg.tracking.log_case_table, self.payload)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._stop_recording()
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
        if status == "KILLED" and self.sweep and self.sweep.parent_run_id:  # the sweep stops here
            close_parent(self.store, self.sweep.parent_run_id, self.out_dir.parent,
                         SweepEnd(status="KILLED"))


ARTIFACT_FILES = (RESULT_FILE, CASES_FILE, "feedback.sqlite", "calibration.json")


def job_outcome(metrics: dict[str, float], payload: dict[str, Any]
                ) -> tuple[dict[str, float], dict[str, str]]:
    """A finished job's metrics and tags as its run shows them (the tags complete
    its description)."""
    pass_rate = metrics.get("summary.pass_rate")
    tags = {"silas.pass_rate": f"{pass_rate:.3f}"} if pass_rate is not None else {}
    if "judge.low_agreement" in metrics:
        tags["judge.low_agreement"] = str(bool(metrics["judge.low_agreement"])).lower()
    if payload.get("description"):
        tags["mlflow.note.content"] = payload["description"] + "\n\n" + outcome_line(
            metrics, payload)
    return shown_metrics(metrics, payload.get("gate")), tags


def log_job_folder(store: MlflowStore, run_id: str, out_dir: Path, metrics: dict[str, float],
                   log_case_table: bool, payload: dict[str, Any] | None = None,
                   outcome_logged: bool = False) -> None:
    """Log a finished job's metrics, per-case table (read from its results file,
    in chunks), artifacts and (tracing on) model-call traces from its folder;
    complete the run's description. ``outcome_logged``: its metrics and tags
    went with its params (``open_job_run(..., finished=...)``)."""
    payload = payload or {}
    if not outcome_logged:
        shown, tags = job_outcome(metrics, payload)
        store.log(run_id, metrics=shown, tags=tags)
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


GATED_SECTION = "gated/"  # MLflow's charts: a key's part before "/" is a section, shown first


def shown_metrics(metrics: dict[str, float], gate: list[str] | None = None) -> dict[str, float]:
    """A job's metrics as its run shows them: the gated ones first (the run page
    lists metrics in the order they were logged), the others by key; each at four
    significant digits, whole units from 1,000 (the exact values are the run's
    ``result.json`` and ``results.jsonl``, and the job folder's). The gated ones
    again as ``gated/<key>``: the run's charts open on that section, before
    "Model metrics". ``gate``: ``analysis.gate``, else every suite kind's
    default (a job logs only its own kind's metrics)."""
    gated = [k for k in dict.fromkeys(run_key(m) for m in gate_of("mixed", gate)) if k in metrics]
    ordered = gated + sorted(k for k in metrics if k not in gated)
    shown = {k: rounded(float(metrics[k])) for k in ordered}
    return {**shown, **{f"{GATED_SECTION}{k}": shown[k] for k in gated}}


def outcome_line(metrics: dict[str, float], payload: dict[str, Any]) -> str:
    """The result sentence of a job run's description. A simulated run spends
    nothing: its cost is what the same calls would cost at the named model's prices."""
    optimize = payload.get("optimize")
    parts = [f"{metrics['summary.cases']:.0f} cases"] if "summary.cases" in metrics else []
    if "summary.pass_rate" in metrics:
        parts.append(f"pass rate {metrics['summary.pass_rate']:.0%}")
    if optimize and optimize in metrics:
        parts.append(f"{display_name(optimize)} (`{optimize}`) {num(metrics[optimize])}")
    if metrics.get("llm.cost_usd_simulated"):
        models = ", ".join(f"`{m}`" for m in payload.get("priced_as", [])) or "the named models'"
        parts.append(f"simulated LLM cost ${num(metrics['llm.cost_usd_simulated'])} "
                     f"(`llm.cost_usd_simulated`), an estimate at {models} prices "
                     "(simulated answers: nothing was spent)")
    if metrics.get("llm.cost_usd"):
        parts.append(f"LLM spend ${num(metrics['llm.cost_usd'])}")
    return "Result: " + ", ".join(parts) + "." if parts else "No result."
