"""``regress``: a study's variant, or a configuration, checked against the
suite's baseline (the decision and the report: silas_exp.gate.report; the jobs
it runs: silas_exp.gate.jobs). Reads runs through a RunReader, the baseline
through a BaselineStore, and records its outcome through a GateLog."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from silas_exp.analysis.data import JobData, job_data, job_from_result, merge_blocks
from silas_exp.analysis.gates import GateResult, check_gates, parse_gates
from silas_exp.errors import AnalysisError
from silas_exp.gate import jobs as runs
from silas_exp.gate.ports import BaselineStore, GateLog, RunReader, suite_dir_of
from silas_exp.gate.promote import Study, resolve, study_overrides
from silas_exp.gate.report import RegressionReport, accepted_text, regress
from silas_exp.schema.baseline import BaselineRecord


@dataclass
class CheckRequest:
    """What to check and how (the command line of ``regress``)."""

    source: str | None = None  # a study (sweep id or parent run) or one of its job runs
    variant: str | None = None
    config: list[str] | None = None  # or a configuration, run for the check
    seeds_from: int = 0
    aa: bool = True
    workers: int = 1
    work: Path = field(default_factory=lambda: Path("regress"))
    accept: str | None = None
    fail_under: list[str] = field(default_factory=list)


@dataclass
class CheckOutcome:
    record: BaselineRecord
    report: RegressionReport
    markdown: str
    headline: str
    gates: list[GateResult]
    accepted: str | None
    target: str | None  # the run it checked (a study's parent run); None: a configuration

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates) and (not self.report.regressed
                                                       or self.accepted is not None)

    def tags(self, when: str, by: str) -> dict[str, str]:
        tags = {"silas.regress": "pass" if not self.report.regressed else
                "regression" if self.report.outcome.value == "do_not_ship" else "inconclusive",
                "silas.regress_baseline": self.record.source_run_id,
                "silas.regress_at": when, "silas.regress_by": by,
                "silas.regress_flags": self.report.flag_line()[:5000]}
        if self.accepted:
            tags["silas.regress_accepted"] = self.accepted[:5000]
        if self.gates:
            tags["silas.regress_gates"] = "pass" if all(g.passed for g in self.gates) else "fail"
        return tags


def baseline_of(store: BaselineStore) -> BaselineRecord:
    """The store's baseline, or AnalysisError naming the last demotion."""
    record = store.read()
    if record is None:
        last = (store.history() or [{}])[-1]
        why = (f" (run {last.get('run_id', '')[:8]}, the last one, was demoted "
               f"{str(last.get('demoted_at', ''))[:16]} UTC by {last.get('by')}: {last.get('reason')})"
               if last.get("action") == "demote" else "")
        raise AnalysisError(f"no baseline: promote one first. There is no {store.where}{why}; "
                            "`silas-exp baseline promote SWEEP scorer=weights`")
    return record


def config_suite_dir(config: list[str]) -> Path:
    """The suite folder of a configuration, as it composes."""
    from silas_exp.config import compose_config

    return Path(compose_config([*config, "tracking=none"]).suite.path)


def study_suite_dir(reader: RunReader, source: str, variant: str | None) -> tuple[Study, Path]:
    study = resolve(reader, source, variant)
    return study, suite_dir_of(study.jobs[0], Path(os.environ.get("SILAS_EXP_ROOT", os.getcwd())))


def study_jobs(reader: RunReader, study: Study) -> list[JobData]:
    """A study variant's logged jobs as analysis data, one per repeat (blocks merged)."""
    return merge_blocks([job_from_result(reader.job_result(r.run_id), r.run_id)
                         for r in study.jobs])


def record_jobs(record: BaselineRecord) -> list[JobData]:
    """The baseline's jobs, one per repeat (blocks merged), as analysis data."""
    return merge_blocks([job_data(record.name, j.repeat, j.metrics, j.results, j.run_id)
                         for j in record.jobs])


def _study_control(reader: RunReader, study: Study, overrides: list[str], record: BaselineRecord,
                   out: Path, workers: int) -> list[JobData]:
    """The control of a study checked under its own seeds: the study's own arm
    of the baseline's configuration when it ran one (a study after the
    promotion), completed to the cases the baseline covers; else that
    configuration run afresh with the study's design."""
    if study.sweep_id:
        try:
            arm = resolve(reader, study.sweep_id, record.name)
        except AnalysisError:
            arm = None
        if arm is not None:
            return runs.complete_study(study_overrides(reader, arm), study_jobs(reader, arm),
                                       record, out, workers)[0]
    return runs.study_control(overrides, record, out, workers)


def check(reader: RunReader | None, log: GateLog, store: BaselineStore, req: CheckRequest,
          study: Study | None = None) -> CheckOutcome:
    """Run the check ``req`` asks for (a configuration, or ``study``'s variant)."""
    record = baseline_of(store)
    if req.config:
        ran = runs.check_configuration(record, req.config, req.work, req.seeds_from, req.aa,
                                       req.workers)
        subject, target = f"configuration `{' '.join(req.config)}`", None
        if req.seeds_from:
            subject += f" (repeats {req.seeds_from}+: other seeds)"
    else:
        assert reader is not None and study is not None
        overrides = study_overrides(reader, study)
        checked, n_run = runs.complete_study(overrides, study_jobs(reader, study), record,
                                             req.work, req.workers)
        if f"seed={record.seed or 0}" in overrides:  # the baseline's seeds: the logged results
            ran = runs.CheckRuns(checked, [], [] if not req.aa else
                                 runs.aa_jobs(record, req.work, workers=req.workers))
        else:  # another seed: the baseline's configuration under the study's seeds
            ran = runs.CheckRuns(checked, _study_control(reader, study, overrides, record,
                                                         req.work / "control", req.workers), [])
        subject = (f"`{study.variant}` of study {study.sweep_id}" if study.sweep_id
                   else f"run {study.run.run_id[:8]}")
        if n_run:
            subject += f" ({n_run} job(s) of missing blocks run for the check)"
        target = study.run.run_id
    report = regress(ran.checked, record_jobs(record), subject=subject,
                     baseline_name=f"`{record.name}` (run {record.source_run_id[:8]})",
                     baseline_run_id=record.source_run_id, aa=ran.aa, latency=not record.simulated,
                     control=ran.control)
    accepted = accepted_text(req.accept, log.user()) if req.accept and report.regressed else None
    md = report.markdown(accepted)
    gates = check_gates(ran.checked[0].metrics if ran.checked else {}, parse_gates(req.fail_under))
    md += "".join(f"- gate: {g.line()}\n" for g in gates)
    return CheckOutcome(record, report, md, report.headline(accepted), gates, accepted, target)
