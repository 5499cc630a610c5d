"""Baselines (§20.5): promote a configuration with its results on a suite.

``promote`` takes a study (its sweep id or parent run) and one of its
variants, or a job run (which names its study and variant), or a plain run of
the whole suite. It gathers every job of that variant (all blocks, all
repeats), checks they are FINISHED with complete results on the suite's
current version, and builds the ``BaselineRecord``: the configuration (the
job's Hydra overrides without the study's design), suite and version, code
revision, seeds and every per-case result.

Where it is kept:

* ``suites/<suite>/baseline.json`` (the spec's place; committed with the code,
  so CI on a fresh clone finds it). Written atomically: the rename of a
  complete temporary file is the promotion's commit point, so a promotion
  killed before it leaves the previous baseline whole, and one killed after
  it is repaired by promoting again.
* MLflow, where its users look for it: a pointer on the experiment (tag
  ``silas.baseline.<suite>`` = the promoted run; the experiment's description
  links to it, one click from the experiment page), the record as the
  artifact ``baseline.json`` on that run, the run tagged ``silas.baseline=true``
  with its name ending `` · baseline`` and its description opening with
  "**Baseline:**". Not the Model Registry: a baseline is a configuration and
  results, not a model artifact, and a registry alias needs a logged model
  version and sits on a page of its own, away from the experiment's runs.
* The history of promotions and demotions: ``suites/<suite>/baseline_history.jsonl``
  (all of it) and the experiment tag ``silas.baseline.<suite>.history`` (recent).

``demote`` takes the suite's baseline away without a successor: ``baseline.json``
is removed (its commit point; the record stays on its run as the artifact), then
MLflow follows: the run loses its mark and says who demoted it, when and why,
the history gets the entry, and the experiment's pointer goes last, so a
demotion killed after the commit point is finished by demoting again (it
finds the run by the pointer). With no ``baseline.json`` a later study runs the
§19.5 control and ``regress`` asks for a promotion.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from silas_exp.errors import AnalysisError
from silas_exp.metrics.names import chart_names, safe_name
from silas_exp.records import write_bytes_atomic
from silas_exp.schema.baseline import (
    BASELINE_FILE,
    HISTORY_FILE,
    BaselineJob,
    BaselineRecord,
    config_overrides,
    read_history,
)
from silas_exp.tracking.payload import BASELINE_NAME_MARK as NAME_MARK
from silas_exp.tracking.payload import baseline_key
from silas_exp.tracking.permissions import acting_user, require_demote, require_promote
from silas_exp.tracking.reader import Reader
from silas_exp.variants import find_variant

LEGACY_POINTER = "silas.baseline_run_id"  # experiment tag of stores from before per-suite keys
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


@dataclass
class Study:
    """What a promotion names, resolved: the run that stands for it (a study's
    parent run, or a lone job run), its sweep id and variant, and the
    variant's job runs."""

    run: Any
    sweep_id: str | None
    variant: str
    jobs: list[Any]


def _newest_per_job(runs: list[Any]) -> list[Any]:
    """The newest FINISHED run per (repeat, block): a resumed study may hold several."""
    best: dict[tuple[str, str], Any] = {}
    for r in runs:
        key = (r.data.tags.get("silas.repeat", ""), r.data.tags.get("silas.block", "0"))
        if r.info.status == "FINISHED" and (key not in best
                                            or r.info.start_time > best[key].info.start_time):
            best[key] = r
    return [best[k] for k in sorted(best, key=lambda k: (int(k[0] or 0), int(k[1] or 0)))]


def resolve(reader: Reader, source: str, variant: str | None) -> Study:
    """A study's parent run or sweep id plus a variant, a job run (its study and
    variant), or a plain run of the suite."""
    run = None
    if len(source) == 32:  # an MLflow run id; a sweep id has 12 characters
        run = reader.run(source)
    sweep_id = run.data.tags.get("silas.sweep_id") if run is not None else source
    if run is not None and run.data.tags.get("silas.kind") != "sweep":
        own = run.data.tags.get("silas.variant", "")
        if variant and variant != own:
            raise AnalysisError(f"run {source} is a job of variant {own!r}, not {variant!r}; pass "
                                "the study's parent run or sweep id with the variant to promote")
        variant = own
    if not sweep_id:  # a run of its own, not part of a study
        if run.info.status != "FINISHED":
            raise AnalysisError(f"run {source} is {run.info.status}; only a FINISHED run can "
                                "become a baseline")
        return Study(run, None, variant or "", [run])
    parent, children = reader.sweep_runs(sweep_id)
    variants = sorted({c.data.tags.get("silas.variant", "") for c in children})
    if not variant:
        tags = parent.data.tags if parent else {}
        short = chart_names(variants)  # as the parent run names its verdict tags
        verdicts = {v: tags.get(f"silas.verdict.{short[v]}") or tags[f"silas.verdict.{safe_name(v)}"]
                    for v in variants if {f"silas.verdict.{short[v]}",
                                          f"silas.verdict.{safe_name(v)}"} & set(tags)}
        shipped = [v for v, outcome in verdicts.items() if outcome == "ship"]
        raise AnalysisError(
            f"study {sweep_id} has the variants {variants}"
            + (f" (verdicts: {verdicts})" if verdicts else "") + "; name the one to promote: "
            f"`silas-exp baseline promote {source} {(shipped or variants or ['scorer=weights'])[0]}`")
    variant = find_variant(variant, variants) or variant
    jobs = _newest_per_job([c for c in children if c.data.tags.get("silas.variant") == variant])
    if not jobs:
        raise AnalysisError(f"study {sweep_id} has no FINISHED job of variant {variant!r}; its "
                            f"variants: {variants}")
    return Study(parent or jobs[0], sweep_id, variant, jobs)


def _yaml_artifact(reader: Reader, run_id: str, name: str) -> Any:
    import yaml

    text = reader.artifact_text(run_id, name)
    return yaml.safe_load(text) if text else None


def job_setup(reader: Reader, run_id: str) -> tuple[list[str], dict[str, Any]]:
    """A job run's Hydra overrides and composed config (its ``hydra/`` artifacts)."""
    overrides = [str(o) for o in _yaml_artifact(reader, run_id, "hydra/overrides.yaml") or []]
    return overrides, _yaml_artifact(reader, run_id, "hydra/config.yaml") or {}


def study_overrides(reader: Reader, study: Study) -> list[str]:
    """What reruns a job of ``study``'s variant: its overrides with the study's
    seed and blocks made explicit."""
    overrides, config = job_setup(reader, study.jobs[0].info.run_id)
    per_block = config.get("cases_per_block")
    mine = [o for o in overrides if not o.startswith(("seed=", "cases_per_block="))]
    return [*mine, f"seed={config.get('seed', 0)}",
            f"cases_per_block={'null' if per_block is None else per_block}"]


def record_check(reader: Reader, run_id: str, tags: dict[str, str], markdown: str,
                 headline: str, prefix: str) -> None:
    """A regression check on the run it checked (a study's parent run): its
    tags (a column of the runs table), ``regress.md`` and its headline as the
    first line of the run's description."""
    reader.store.log(run_id, tags=tags)
    reader.store.log_text(run_id, markdown, "regress.md")
    reader.store.note_first(run_id, headline, prefix)


def build_record(reader: Reader, study: Study, suite_dir: Path) -> BaselineRecord:
    """The baseline record of ``study``'s variant: every job's per-case results."""
    current = _suite_version(suite_dir)
    jobs = []
    for run in study.jobs:
        tags, run_id = run.data.tags, run.info.run_id
        if tags.get("silas.suite_version", "") != current:
            raise AnalysisError(f"run {run_id} ran suite version {tags.get('silas.suite_version')!r} "
                                f"but {suite_dir} is now {current!r}; re-run the study and promote it")
        result = reader.job_result(run_id)
        if not result.finished or result.run is None:
            raise AnalysisError(f"run {run_id} has no complete result; it cannot be part of a "
                                "baseline")
        jobs.append(BaselineJob(repeat=result.repeat, block=result.block,
                                seed=int(tags["silas.seed"]) if tags.get("silas.seed") else None,
                                run_id=run_id, metrics=result.metrics,
                                results=list(result.run.results)))
    first = study.jobs[0]
    tags, params = first.data.tags, first.data.params
    overrides, config = job_setup(reader, first.info.run_id)
    chosen = config_overrides(overrides) or [p for p in study.variant.split(",") if p]
    return BaselineRecord(
        suite=tags.get("silas.suite", ""), suite_version=current, variant=study.variant,
        overrides=chosen, design=sorted(o for o in set(overrides) - set(chosen)
                                        if not o.startswith(("paths.", "hydra.", "tracking."))),
        config_hash=tags.get("silas.config_hash"), git_revision=tags.get("silas.git_revision"),
        seed=config.get("seed"), cases_per_block=config.get("cases_per_block"),
        judge={"name": params.get("judge.name") or tags.get("judge.kind"),
               "version": tags.get("judge.version") or params.get("judge.version", "1")},
        simulated=tags.get("llm.simulated", "true") == "true",
        source_run_id=study.run.info.run_id, sweep_id=study.sweep_id,
        experiment_id=study.run.info.experiment_id, promoted_by=acting_user(reader.uri), jobs=jobs)


def promote(reader: Reader, source: str, variant: str | None = None,
            suite_dir: Path | None = None) -> BaselineRecord:
    """Make ``source``'s ``variant`` the baseline of its suite (see the module's
    docstring); returns the record written."""
    study = resolve(reader, source, variant)
    suite_dir = Path(suite_dir) if suite_dir else _suite_dir(study.jobs[0])
    record = build_record(reader, study, suite_dir)
    require_promote(reader.uri, study.run.info.experiment_id)  # before anything is written
    run_id = record.source_run_id
    reader.store.log_text(run_id, record.model_dump_json(indent=1), BASELINE_FILE)
    write_bytes_atomic(suite_dir / BASELINE_FILE, record.model_dump_json(indent=1).encode())
    _point_to(reader, record, study.run, suite_dir)  # past the commit point: MLflow follows
    return record


def _point_to(reader: Reader, record: BaselineRecord, run: Any, suite_dir: Path) -> None:
    """MLflow's side of a promotion: the experiment's pointer and history, the
    tags, name and description of the new and the former baseline runs."""
    run_id, suite, now = record.source_run_id, record.suite, record.promoted_at
    exp_id = run.info.experiment_id
    demoted = _demote_others(reader, exp_id, suite, run_id, now)
    history = json.loads(reader.store.experiment_tags(exp_id).get(history_key(suite), "[]"))
    entry = {"action": "promote", "run_id": run_id, "variant": record.variant,
             "overrides": record.overrides, "sweep_id": record.sweep_id, "promoted_at": now,
             "by": record.promoted_by, "replaced": demoted}
    history.append(entry)
    reader.set_experiment_tag(exp_id, baseline_key(suite), run_id)
    reader.set_experiment_tag(exp_id, history_key(suite), _bounded(history))
    reader.store.log(run_id, tags={"silas.baseline": "true", "silas.baseline_promoted_at": now,
                                   "silas.baseline_variant": record.variant,
                                   "mlflow.runName": _named(run.info.run_name, True)})
    what = f"`{record.variant}` of this study" if record.sweep_id else "this run's configuration"
    reader.store.note_first(run_id, f"{MARK} {what} is the current baseline of suite `{suite}` "
                            f"(promoted {now[:16]} UTC by {record.promoted_by}: "
                            f"{len(record.cases())} cases x {len(record.repeats())} repeat(s), "
                            "record `baseline.json`); later studies run it as their control and "
                            "`silas-exp regress` checks changes against it.", MARK)
    reader.store.refresh_experiment_note(exp_id)
    with open(suite_dir / HISTORY_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**entry, "suite": suite, "suite_version": record.suite_version})
                 + "\n")


def _demote_others(reader: Reader, exp_id: str, suite: str, run_id: str, now: str) -> list[str]:
    """Every other run of the suite still tagged as baseline loses the tag."""
    runs = reader.store.search_runs(
        [exp_id], filter_string=f"tags.`silas.baseline` = 'true' and tags.`silas.suite` = '{suite}'")
    others = [r for r in runs if r.info.run_id != run_id]
    for r in others:
        _unmark(reader, r, {"silas.baseline_demoted_at": now, "silas.baseline_superseded_by": run_id},
                f"former baseline of suite `{suite}`, replaced by run `{run_id}` on {now[:16]} UTC.")
    return [r.info.run_id for r in others]


def _unmark(reader: Reader, run: Any, tags: dict[str, str], line: str) -> None:
    """A former baseline run: tagged ``silas.baseline=false`` with ``tags``, its
    name without the mark, ``line`` first in its description."""
    reader.store.log(run.info.run_id, tags={"silas.baseline": "false", **tags,
                                            "mlflow.runName": _named(run.info.run_name, False)})
    reader.store.note_first(run.info.run_id, f"{MARK} {line}", MARK)


def pointer(reader: Reader, exp_id: str, suite: str) -> str | None:
    """The run the experiment's pointer names as ``suite``'s baseline, if any."""
    tags = reader.store.experiment_tags(exp_id)
    return tags.get(baseline_key(suite)) or tags.get(LEGACY_POINTER) or None


def demote(reader: Reader, suite_dir: Path, record: BaselineRecord | None, reason: str, *,
           suite: str, exp_id: str | None, pointed: str | None = None) -> dict[str, Any]:
    """Take ``suite``'s baseline away (see the module's docstring); returns the
    history entry. ``record``: the suite's ``baseline.json`` as read; None when a
    demotion killed after its commit point removed it, and this one finishes
    MLflow's side for the run the pointer still names (``pointed``)."""
    run_id = record.source_run_id if record is not None else pointed
    if not run_id:
        raise AnalysisError(f"suite {suite!r} has no baseline to demote: no {suite_dir / BASELINE_FILE} "
                            "and no baseline pointer on its experiment (`silas-exp baseline show "
                            "--suite-dir DIR` lists its history)")
    if exp_id is not None:
        require_demote(reader.uri, exp_id)  # before anything is written
    entry = {"action": "demote", "run_id": run_id,
             "variant": record.variant if record is not None else _tag(reader, run_id,
                                                                        "silas.baseline_variant"),
             "overrides": record.overrides if record is not None else None,
             "sweep_id": record.sweep_id if record is not None else None,
             "demoted_at": datetime.now(UTC).isoformat(), "by": acting_user(reader.uri), "reason": reason}
    if record is not None:
        (suite_dir / BASELINE_FILE).unlink()  # the commit point: no baseline from here on
    _unpoint(reader, exp_id, suite, entry, suite_dir,
             record.suite_version if record is not None else None)
    return entry


def _tag(reader: Reader, run_id: str, key: str) -> str | None:
    try:
        return reader.run(run_id).data.tags.get(key)
    except Exception:  # noqa: BLE001  (a run deleted from the store: its history entry says less)
        return None


def _unpoint(reader: Reader, exp_id: str | None, suite: str, entry: dict[str, Any],
             suite_dir: Path, suite_version: str | None) -> None:
    """MLflow's side of a demotion and the history; the pointer goes last. Each
    step can run twice (a demotion repeated after a kill): the history gets
    one entry per demotion."""
    def repeated(history: list[dict[str, Any]]) -> bool:
        return bool(history) and history[-1].get("action") == "demote" \
            and history[-1].get("run_id") == entry["run_id"]

    run_id, now, who = entry["run_id"], entry["demoted_at"], entry["by"]
    tags = reader.store.experiment_tags(exp_id) if exp_id is not None else {}
    if exp_id is not None:
        marked = reader.store.search_runs([exp_id], filter_string=(
            f"tags.`silas.baseline` = 'true' and tags.`silas.suite` = '{suite}'"))
        for r in marked:
            _unmark(reader, r, {"silas.baseline_demoted_at": now, "silas.baseline_demoted_by": who,
                                "silas.baseline_demoted_reason": entry["reason"][:5000]},
                    f"former baseline of suite `{suite}`, demoted on {now[:16]} UTC by {who}: "
                    f"{entry['reason']}. The suite has no baseline now: later studies run the "
                    "§19.5 control and `silas-exp regress` needs a new promotion.")
        history = json.loads(tags.get(history_key(suite), "[]"))
        if not repeated(history):
            reader.set_experiment_tag(exp_id, history_key(suite), _bounded([*history, entry]))
    if not repeated(read_history(suite_dir)):
        with open(suite_dir / HISTORY_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({**entry, "suite": suite, "suite_version": suite_version}) + "\n")
    if exp_id is not None:
        for key in (baseline_key(suite), LEGACY_POINTER):
            if tags.get(key) == run_id:
                reader.store.delete_experiment_tag(exp_id, key)
        reader.store.refresh_experiment_note(exp_id)


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


def show(reader: Reader, experiment_name: str, suite: str,
         suite_dir: Path | None = None) -> dict[str, Any]:
    """The suite's current baseline run (None after a demotion) and its history
    of promotions and demotions: all of it from ``suite_dir``'s history file,
    else the recent part the experiment keeps."""
    exp = reader.experiment_by_name(experiment_name)
    tags = exp.tags if exp is not None else {}
    run_id = tags.get(baseline_key(suite)) or tags.get(LEGACY_POINTER) or None
    history = read_history(suite_dir) if suite_dir else json.loads(tags.get(history_key(suite), "[]"))
    if run_id is None and not history:
        current_baseline(reader, experiment_name, suite)  # raises: nothing promoted, ever
    run_tags = reader.run(run_id).data.tags if run_id else {}
    return {"suite": suite, "run_id": run_id, "history": history,
            "tags": {k: v for k, v in run_tags.items() if k.startswith("silas.")}}


__all__ = ["MARK", "build_record", "current_baseline", "demote", "pointer", "promote",
           "record_check", "resolve", "show", "study_overrides"]
