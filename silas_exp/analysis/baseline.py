"""Baselines (§20.5): the last accepted run of a suite, immutable once promoted.

Promotion records an MLflow experiment tag pointing at the run, a run tag, a
promotion history, and ``suites/<suite>/baseline.json`` (written atomically).
It pins config hash, suite version and judge version."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from silas_exp.errors import AnalysisError
from silas_exp.tracking.reader import Reader

POINTER = "silas.baseline_run_id"
HISTORY = "silas.baseline_history"


def _suite_version(suite_dir: Path) -> str:
    try:
        return json.loads((suite_dir / "suite.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        raise AnalysisError(f"{suite_dir / 'suite.json'}: cannot read the suite version") from None


def promote(reader: Reader, run_id: str, suite_dir: Path | None = None) -> dict[str, Any]:
    run = reader.run(run_id)
    status = run.info.status
    if status != "FINISHED":
        raise AnalysisError(f"run {run_id} is {status}; only a FINISHED run can become a baseline")
    if run.data.tags.get("silas.kind") == "sweep":
        raise AnalysisError(f"run {run_id} is a sweep's parent run; promote one of its job runs")
    result = reader.result_json(run_id)
    if result.get("status") != "finished" or not result.get("run"):
        raise AnalysisError(f"run {run_id} has no complete result; it cannot become a baseline")
    params, tags = run.data.params, run.data.tags
    suite_dir = Path(suite_dir or params.get("suite.path", ""))
    current = _suite_version(suite_dir)
    logged = tags.get("silas.suite_version", "")
    if logged != current:
        raise AnalysisError(f"run {run_id} ran suite version {logged!r} but {suite_dir} is now "
                            f"{current!r}; re-run the suite and promote the new run")
    pins = {
        "run_id": run_id, "suite": tags.get("silas.suite"), "suite_version": current,
        "config_hash": tags.get("silas.config_hash"), "variant": tags.get("silas.variant"),
        "judge": {"name": params.get("judge.name"), "version": params.get("judge.version", "1")},
        "git_revision": tags.get("silas.git_revision"),
        "promoted_at": datetime.now(UTC).isoformat(),
    }
    exp_id = run.info.experiment_id
    exp = reader.store.client.get_experiment(exp_id)
    history = json.loads(exp.tags.get(HISTORY, "[]"))
    history.append({"run_id": run_id, "promoted_at": pins["promoted_at"]})
    reader.set_experiment_tag(exp_id, POINTER, run_id)
    reader.set_experiment_tag(exp_id, HISTORY, json.dumps(history)[-5000:])
    reader.set_run_tag(run_id, "silas.baseline", "true")
    target = suite_dir / "baseline.json"
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"pins": pins, "metrics": result["metrics"], "run": result["run"]},
                              indent=1))
    os.replace(tmp, target)
    return pins


def current_baseline(reader: Reader, experiment_name: str) -> str:
    exp = reader.experiment_by_name(experiment_name)
    if exp is None or POINTER not in exp.tags:
        raise AnalysisError(f"no baseline promoted for experiment {experiment_name!r}; run "
                            "`silas-exp baseline promote RUN` first")
    return exp.tags[POINTER]


def show(reader: Reader, experiment_name: str) -> dict[str, Any]:
    exp = reader.experiment_by_name(experiment_name)
    run_id = current_baseline(reader, experiment_name)
    return {"run_id": run_id, "history": json.loads(exp.tags.get(HISTORY, "[]")),
            "tags": {k: v for k, v in reader.run(run_id).data.tags.items() if k.startswith("silas.")}}
