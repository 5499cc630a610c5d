"""Baselines (§20.5): the last accepted run of a suite, immutable once promoted.

One baseline per suite at a time. Promotion points the experiment tag
``silas.baseline.<suite>`` at the run, tags it ``silas.baseline=true``, demotes
the previous one (``silas.baseline=false``, ``silas.baseline_demoted_at``,
``silas.baseline_superseded_by``), and keeps the history: in the experiment
tag ``silas.baseline.<suite>.history`` (recent entries) and in full in
``suites/<suite>/baseline_history.jsonl``. ``suites/<suite>/baseline.json``
(written atomically) pins config hash, suite version and judge version. Runs
logged later carry ``silas.baseline_run_id``: the baseline they ran against."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from silas_exp.errors import AnalysisError
from silas_exp.tracking.payload import BASELINE_NAME_MARK as NAME_MARK
from silas_exp.tracking.payload import baseline_key
from silas_exp.tracking.permissions import require_promote
from silas_exp.tracking.reader import Reader

LEGACY_POINTER = "silas.baseline_run_id"  # experiment tag of stores from before per-suite keys
HISTORY_FILE = "baseline_history.jsonl"
TAG_LIMIT = 5000  # MLflow experiment tag values are capped; the file keeps everything
MARK = "**Baseline:**"  # first line of a (former) baseline run's description


def history_key(suite: str) -> str:
    return baseline_key(suite) + ".history"


def _suite_version(suite_dir: Path) -> str:
    try:
        return json.loads((suite_dir / "suite.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        raise AnalysisError(f"{suite_dir / 'suite.json'}: cannot read the suite version; pass "
                            "--suite-dir with the suite folder") from None


def _suite_dir(run: Any) -> Path:
    """The run's suite folder: its dataset input's source (relative to the project
    root, $SILAS_EXP_ROOT or the current folder), else an older run's suite.path."""
    if run.data.params.get("suite.path"):
        return Path(run.data.params["suite.path"])
    for inp in run.inputs.dataset_inputs if run.inputs else []:
        try:
            uri = json.loads(inp.dataset.source).get("uri", "")
        except ValueError:
            continue
        path = Path(uri)
        return path if path.is_absolute() else Path(os.environ.get("SILAS_EXP_ROOT", os.getcwd())) / path
    raise AnalysisError(f"run {run.info.run_id} does not say where its suite is; pass --suite-dir")


def _bounded(history: list[dict[str, Any]]) -> str:
    while len(json.dumps(history)) > TAG_LIMIT and len(history) > 1:
        history = history[1:]  # the oldest go first; the history file keeps them
    return json.dumps(history)


def promote(reader: Reader, run_id: str, suite_dir: Path | None = None) -> dict[str, Any]:
    run = reader.run(run_id)
    require_promote(reader.uri, run.info.experiment_id)
    status = run.info.status
    if status != "FINISHED":
        raise AnalysisError(f"run {run_id} is {status}; only a FINISHED run can become a baseline")
    if run.data.tags.get("silas.kind") == "sweep":
        raise AnalysisError(f"run {run_id} is a sweep's parent run; promote one of its job runs")
    result = reader.job_result(run_id)
    if not result.finished or result.run is None:
        raise AnalysisError(f"run {run_id} has no complete result; it cannot become a baseline")
    params, tags = run.data.params, run.data.tags
    suite_dir = Path(suite_dir) if suite_dir else _suite_dir(run)
    current = _suite_version(suite_dir)
    logged = tags.get("silas.suite_version", "")
    if logged != current:
        raise AnalysisError(f"run {run_id} ran suite version {logged!r} but {suite_dir} is now "
                            f"{current!r}; re-run the suite and promote the new run")
    suite = tags.get("silas.suite", "")
    now = datetime.now(UTC).isoformat()
    pins = {
        "run_id": run_id, "suite": suite, "suite_version": current,
        "config_hash": tags.get("silas.config_hash"), "variant": tags.get("silas.variant"),
        "judge": {"name": params.get("judge.name") or tags.get("judge.kind"),
                  "version": tags.get("judge.version") or params.get("judge.version", "1")},
        "git_revision": tags.get("silas.git_revision"),
        "promoted_at": now,
    }
    exp_id = run.info.experiment_id
    exp_tags = reader.store.experiment_tags(exp_id)
    demoted = _demote_others(reader, exp_id, suite, run_id, now)
    history = json.loads(exp_tags.get(history_key(suite), "[]"))
    entry = {"run_id": run_id, "promoted_at": now, "replaced": demoted}
    history.append(entry)
    reader.set_experiment_tag(exp_id, baseline_key(suite), run_id)
    reader.set_experiment_tag(exp_id, history_key(suite), _bounded(history))
    reader.store.log(run_id, tags={"silas.baseline": "true", "silas.baseline_promoted_at": now,
                                   "mlflow.runName": _named(run.info.run_name, True)})
    reader.store.note_first(run_id, f"{MARK} the current baseline of suite `{suite}` "
                            f"(promoted {now[:16]} UTC); `silas-exp regress RUN` checks runs "
                            "against it.", MARK)
    reader.store.refresh_experiment_note(exp_id)
    target = suite_dir / "baseline.json"
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"pins": pins, "metrics": result.metrics,
                               "run": result.run.model_dump(mode="json")},
                              indent=1))
    os.replace(tmp, target)
    with open(suite_dir / HISTORY_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**entry, "suite": suite, "suite_version": current}) + "\n")
    return pins


def _demote_others(reader: Reader, exp_id: str, suite: str, run_id: str, now: str) -> list[str]:
    """Every other run of the suite still tagged as baseline loses the tag."""
    runs = reader.store.search_runs(
        [exp_id], filter_string=f"tags.`silas.baseline` = 'true' and tags.`silas.suite` = '{suite}'")
    others = [r for r in runs if r.info.run_id != run_id]
    for r in others:
        old = r.info.run_id
        reader.store.log(old, tags={"silas.baseline": "false", "silas.baseline_demoted_at": now,
                                    "silas.baseline_superseded_by": run_id,
                                    "mlflow.runName": _named(r.info.run_name, False)})
        reader.store.note_first(old, f"{MARK} former baseline of suite `{suite}`, replaced by run "
                                f"`{run_id}` on {now[:16]} UTC.", MARK)
    return [r.info.run_id for r in others]


def _named(name: str | None, baseline: bool) -> str:
    """The run's name with (or without) the baseline mark."""
    plain = (name or "").removesuffix(NAME_MARK)
    return plain + NAME_MARK if baseline else plain


def current_baseline(reader: Reader, experiment_name: str, suite: str) -> str:
    exp = reader.experiment_by_name(experiment_name)
    tags = exp.tags if exp is not None else {}
    run_id = tags.get(baseline_key(suite)) or tags.get(LEGACY_POINTER)
    if not run_id:
        raise AnalysisError(f"no baseline promoted for suite {suite!r} in experiment "
                            f"{experiment_name!r}; run `silas-exp baseline promote RUN` first")
    return run_id


def show(reader: Reader, experiment_name: str, suite: str) -> dict[str, Any]:
    run_id = current_baseline(reader, experiment_name, suite)
    exp = reader.experiment_by_name(experiment_name)
    return {"run_id": run_id, "history": json.loads(exp.tags.get(history_key(suite), "[]")),
            "tags": {k: v for k, v in reader.run(run_id).data.tags.items() if k.startswith("silas.")}}
