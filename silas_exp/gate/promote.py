"""Baselines (§20.5): promote a configuration with its results on a suite,
demote it, show it.

``promote`` takes a study (its sweep id or parent run) and one of its
variants, or a job run (which names its study and variant), or a plain run of
the whole suite. It gathers every job of that variant (all blocks, all
repeats), checks they are FINISHED with complete results on the suite's
current version, and builds the ``BaselineRecord``: the configuration (the
job's Hydra overrides without the study's design), suite and version, code
revision, seeds and every per-case result.

Where it goes: the baseline store (silas_exp.gate.ports.BaselineStore; the
suite folder's ``baseline.json``), whose write is the promotion's commit
point, so a promotion killed before it leaves the previous baseline whole and
one killed after it is repaired by promoting again; then what the tracking
backend shows of it (silas_exp.gate.ports.GateLog: MLflow's pointer and
marks), then the store's history.

``demote`` takes the suite's baseline away without a successor: the store
removes the record (its commit point; the record stays on its run), then the
backend's marks and history follow, the store's history, and the backend's
pointer last, so a demotion killed after the commit point is finished by
demoting again (it finds the run by the pointer). With no baseline a later
study runs the §19.5 control and ``regress`` asks for a promotion.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from silas_exp.errors import AnalysisError
from silas_exp.gate.ports import BaselineStore, GateLog, RunReader
from silas_exp.metrics.names import chart_names, safe_name
from silas_exp.schema.baseline import BaselineJob, BaselineRecord, config_overrides
from silas_exp.schema.runs import LoggedRun
from silas_exp.variants import find_variant


@dataclass
class Study:
    """What a promotion or a check names, resolved: the run that stands for it
    (a study's parent run, or a lone job run), its sweep id and variant, and
    the variant's job runs."""

    run: LoggedRun
    sweep_id: str | None
    variant: str
    jobs: list[LoggedRun]


def _newest_per_job(runs: list[LoggedRun]) -> list[LoggedRun]:
    """The newest FINISHED run per (repeat, block): a resumed study may hold several."""
    best: dict[tuple[str, str], LoggedRun] = {}
    for r in runs:
        key = (r.tags.get("silas.repeat", ""), r.tags.get("silas.block", "0"))
        if r.finished and (key not in best or r.start_time > best[key].start_time):
            best[key] = r
    return [best[k] for k in sorted(best, key=lambda k: (int(k[0] or 0), int(k[1] or 0)))]


def resolve(reader: RunReader, source: str, variant: str | None) -> Study:
    """A study's parent run or sweep id plus a variant, a job run (its study and
    variant), or a plain run of the suite."""
    run = None
    if len(source) == 32:  # an MLflow run id; a sweep id has 12 characters
        run = reader.run(source)
    sweep_id = run.tags.get("silas.sweep_id") if run is not None else source
    if run is not None and not run.is_sweep:
        own = run.tags.get("silas.variant", "")
        if variant and variant != own:
            raise AnalysisError(f"run {source} is a job of variant {own!r}, not {variant!r}; pass "
                                "the study's parent run or sweep id with the variant to promote")
        variant = own
    if not sweep_id:  # a run of its own, not part of a study
        if not run.finished:
            raise AnalysisError(f"run {source} is {run.status}; only a FINISHED run can "
                                "become a baseline")
        return Study(run, None, variant or "", [run])
    parent, children = reader.sweep_runs(sweep_id)
    variants = sorted({c.tags.get("silas.variant", "") for c in children})
    if not variant:
        tags = parent.tags if parent else {}
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
    jobs = _newest_per_job([c for c in children if c.tags.get("silas.variant") == variant])
    if not jobs:
        raise AnalysisError(f"study {sweep_id} has no FINISHED job of variant {variant!r}; its "
                            f"variants: {variants}")
    return Study(parent or jobs[0], sweep_id, variant, jobs)


def _yaml_artifact(reader: RunReader, run_id: str, name: str) -> Any:
    text = reader.artifact_text(run_id, name)
    return yaml.safe_load(text) if text else None


def job_setup(reader: RunReader, run_id: str) -> tuple[list[str], dict[str, Any]]:
    """A job run's Hydra overrides and composed config (its ``hydra/`` artifacts)."""
    overrides = [str(o) for o in _yaml_artifact(reader, run_id, "hydra/overrides.yaml") or []]
    return overrides, _yaml_artifact(reader, run_id, "hydra/config.yaml") or {}


def study_overrides(reader: RunReader, study: Study) -> list[str]:
    """What reruns a job of ``study``'s variant: its overrides with the study's
    seed and blocks made explicit."""
    overrides, config = job_setup(reader, study.jobs[0].run_id)
    per_block = config.get("cases_per_block")
    mine = [o for o in overrides if not o.startswith(("seed=", "cases_per_block="))]
    return [*mine, f"seed={config.get('seed', 0)}",
            f"cases_per_block={'null' if per_block is None else per_block}"]


def build_record(reader: RunReader, study: Study, suite_version: str, by: str) -> BaselineRecord:
    """The baseline record of ``study``'s variant: every job's per-case results
    (the suite at ``suite_version``, its current one)."""
    jobs = []
    for run in study.jobs:
        tags, run_id = run.tags, run.run_id
        if tags.get("silas.suite_version", "") != suite_version:
            raise AnalysisError(f"run {run_id} ran suite version {tags.get('silas.suite_version')!r} "
                                f"but the suite is now {suite_version!r}; re-run the study and "
                                "promote it")
        result = reader.job_result(run_id)
        if not result.finished or result.run is None:
            raise AnalysisError(f"run {run_id} has no complete result; it cannot be part of a "
                                "baseline")
        jobs.append(BaselineJob(repeat=result.repeat, block=result.block,
                                seed=int(tags["silas.seed"]) if tags.get("silas.seed") else None,
                                run_id=run_id, metrics=result.metrics,
                                results=list(result.run.results)))
    first = study.jobs[0]
    tags, params = first.tags, first.params
    overrides, config = job_setup(reader, first.run_id)
    chosen = config_overrides(overrides) or [p for p in study.variant.split(",") if p]
    return BaselineRecord(
        suite=tags.get("silas.suite", ""), suite_version=suite_version, variant=study.variant,
        overrides=chosen, design=sorted(o for o in set(overrides) - set(chosen)
                                        if not o.startswith(("paths.", "hydra.", "tracking."))),
        config_hash=tags.get("silas.config_hash"), git_revision=tags.get("silas.git_revision"),
        seed=config.get("seed"), cases_per_block=config.get("cases_per_block"),
        judge={"name": params.get("judge.name") or tags.get("judge.kind"),
               "version": tags.get("judge.version") or params.get("judge.version", "1")},
        simulated=tags.get("llm.simulated", "true") == "true",
        source_run_id=study.run.run_id, sweep_id=study.sweep_id,
        experiment_id=study.run.experiment_id, promoted_by=by, jobs=jobs)


def promote(reader: RunReader, log: GateLog, study: Study, store: BaselineStore,
            suite_version: str) -> BaselineRecord:
    """Make ``study``'s variant the baseline of its suite (see the module's
    docstring); returns the record written."""
    record = build_record(reader, study, suite_version, log.user())
    log.may_change_baseline(study.run.experiment_id, "promote")  # before anything is written
    text = record.model_dump_json(indent=1)
    log.attach_record(record.source_run_id, text)
    store.write(record)  # the commit point: MLflow and the history follow
    entry = log.promoted(record, study.run)
    store.append_history({**entry, "suite": record.suite, "suite_version": record.suite_version})
    return record


def demote(reader: RunReader, log: GateLog, store: BaselineStore, record: BaselineRecord | None,
           reason: str, *, suite: str, exp_id: str | None, pointed: str | None = None
           ) -> dict[str, Any]:
    """Take ``suite``'s baseline away (see the module's docstring); returns the
    history entry. ``record``: the store's baseline as read; None when a
    demotion killed after its commit point removed it, and this one finishes
    the backend's side for the run its pointer still names (``pointed``)."""
    run_id = record.source_run_id if record is not None else pointed
    if not run_id:
        raise AnalysisError(f"suite {suite!r} has no baseline to demote: no {store.where} and no "
                            "baseline pointer on its experiment (`silas-exp baseline show "
                            "--suite-dir DIR` lists its history)")
    if exp_id is not None:
        log.may_change_baseline(exp_id, "demote")  # before anything is written
    entry = {"action": "demote", "run_id": run_id,
             "variant": record.variant if record is not None else _tag(reader, run_id,
                                                                        "silas.baseline_variant"),
             "overrides": record.overrides if record is not None else None,
             "sweep_id": record.sweep_id if record is not None else None,
             "demoted_at": datetime.now(UTC).isoformat(), "by": log.user(), "reason": reason}
    if record is not None:
        store.remove()  # the commit point: no baseline from here on
    if exp_id is not None:
        log.demoted(entry, exp_id, suite)
    history = store.history()
    if not (history and history[-1].get("action") == "demote"
            and history[-1].get("run_id") == run_id):
        store.append_history({**entry, "suite": suite,
                              "suite_version": record.suite_version if record else None})
    if exp_id is not None:
        log.unpoint(exp_id, suite, run_id)
    return entry


def _tag(reader: RunReader, run_id: str, key: str) -> str | None:
    try:
        return reader.run(run_id).tags.get(key)
    except AnalysisError:  # a run deleted from the store: its history entry says less
        return None


def show(reader: RunReader, log: GateLog, experiment_name: str, suite: str,
         store: BaselineStore | None = None) -> dict[str, Any]:
    """The suite's current baseline run (None after a demotion) and its history
    of promotions and demotions: all of it from ``store``, else the recent part
    the backend keeps."""
    exp = reader.experiment(experiment_name)
    run_id = log.pointer(exp.experiment_id, suite) if exp is not None else None
    history = store.history() if store is not None else (
        log.history(exp.experiment_id, suite) if exp is not None else [])
    if run_id is None and not history:
        raise AnalysisError(f"no baseline promoted for suite {suite!r} in experiment "
                            f"{experiment_name!r}; run `silas-exp baseline promote RUN` first")
    tags = reader.run(run_id).tags if run_id else {}
    return {"suite": suite, "run_id": run_id, "history": history,
            "tags": {k: v for k, v in tags.items() if k.startswith("silas.")}}
