"""``regress``: a study's variant, or a configuration, checked against the
suite's baseline — code with code.

A check has two sides (silas_exp.gate.sequential.Side): the checked code and
configuration, and the baseline's. Each runs its own code: the checked side
today's (a configuration) or the study's revision (a study's variant); the
baseline's side the baseline's revision, in this process when the code here is
the same, else from a worktree of its commit (silas_exp.gate.revision). Under
the baseline's own seeds the baseline's logged results are its side (paired
with identical random streams); under other seeds (``--seeds-from N``, a
study run with another seed) its side is run under the same seeds as the
checked one (a concurrent control), or taken from a study's own arm of the
baseline's configuration when that arm ran the baseline's code. The logged
results then give the §20.5 flags.

The check is sequential (silas_exp.gate.sequential): the first look holds the
baseline's cases; when they do not decide, both sides run more blocks of the
pool until the verdict is decided or ``--max-cases`` is reached. Anything that
needs a revision that cannot be run is refused (exit 2) with the check that
still can run. Reads runs through a RunReader, the baseline through a
BaselineStore, and records its outcome through a GateLog.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from silas_exp.analysis.ablation import suite_kind
from silas_exp.analysis.baseline import study_part
from silas_exp.analysis.data import JobData, SweepData, job_data, job_from_result, merge_blocks
from silas_exp.analysis.gates import GateResult, check_gates, parse_gates
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.errors import AnalysisError, ConfigError
from silas_exp.gate import revision
from silas_exp.gate.jobs import (
    AA_REPEATS,
    GridJob,
    Order,
    baseline_design,
    design_of,
    plain,
    run_grid,
)
from silas_exp.gate.ports import BaselineStore, GateLog, RunReader, suite_dir_of
from silas_exp.gate.promote import Study, resolve, study_overrides
from silas_exp.gate.report import CANDIDATE, LOGGED, RERUN, RegressionReport, accepted_text, regress
from silas_exp.gate.revision import NotRunnable, Revision, Site
from silas_exp.gate.sequential import GateRun, Side, run_gate
from silas_exp.metrics.registry import gated_for, spec
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
    max_cases: int | None = None  # None: the pool (or what the sides can reach)
    settings: AnalysisSettings | None = None


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
        tags = {"silas.regress": self.report.tag,
                "silas.regress_baseline": self.record.source_run_id,
                "silas.regress_at": when, "silas.regress_by": by,
                "silas.regress_flags": self.report.flag_line()[:5000]}
        if self.accepted:
            tags["silas.regress_accepted"] = self.accepted[:5000]
        if self.gates:
            tags["silas.regress_gates"] = "pass" if all(g.passed for g in self.gates) else "fail"
        return tags


def run_params(req: CheckRequest, record: BaselineRecord) -> dict[str, str]:
    """What a check of a configuration chose, as its own run's params."""
    return {"regress.config": " ".join(req.config or []), "regress.seeds_from": str(req.seeds_from),
            "regress.max_cases": str(req.max_cases) if req.max_cases else "pool",
            "regress.baseline": record.name, "regress.baseline_run_id": record.source_run_id,
            "regress.baseline_code": record.git_revision or "unknown"}


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


def _logged(jobs: list[tuple[int, int, JobData]]) -> dict[tuple[int, int], JobData]:
    return {(repeat, block): job for repeat, block, job in jobs}


def study_blocks(reader: RunReader, study: Study) -> dict[tuple[int, int], JobData]:
    """A study variant's logged jobs by (repeat, block)."""
    out = {}
    for run in study.jobs:
        result = reader.job_result(run.run_id)
        out[(result.repeat, result.block)] = job_from_result(result, run.run_id)
    return out


def record_blocks(record: BaselineRecord) -> dict[tuple[int, int], JobData]:
    return {(j.repeat, j.block): job_data(record.name, j.repeat, j.metrics, j.results, j.run_id)
            for j in record.jobs}


def record_jobs(record: BaselineRecord) -> list[JobData]:
    """The baseline's jobs, one per repeat (blocks merged), as analysis data."""
    return merge_blocks(list(record_blocks(record).values()))


def baseline_margins(record: BaselineRecord, settings: AnalysisSettings) -> dict[str, float]:
    """Every gated metric's margin, fixed once for the whole check: a relative
    margin from the baseline's logged mean (its repeats' mean of per-case
    means), as the baseline's study fixed it for its control."""
    import numpy as np

    data = SweepData("baseline", "", record_jobs(record))
    margins = {}
    for metric in list(settings.gate or gated_for(suite_kind(data))):
        if metric in settings.margins:
            margins[metric] = settings.margins[metric]
        elif spec(metric).margin_kind == "relative":
            values = data.case_values(record.name, metric)
            if values.size and not np.all(np.isnan(values)):
                margins[metric] = spec(metric).margin_for(float(np.nanmean(np.nanmean(values, 0))))
    return margins


def _site(rev: Revision) -> tuple[Site | None, str]:
    try:
        return revision.site_for(rev), ""
    except NotRunnable as exc:
        return None, str(exc)


def _code_line(side: Side) -> str:
    return side.site.describe() if side.site is not None else f"{side.revision}"


def _refuse(what: str, side: Side, record: BaselineRecord, cases: int) -> ConfigError:
    """Exit 2: the check needs ``side``'s code run, which cannot be run here."""
    return ConfigError(
        f"regress {what}: this check needs {side.what} run with the code of {side.revision}, "
        f"which cannot be run here: {side.why_not}. What still can run: the baseline's own seeds "
        f"and cases against its logged results (`silas-exp regress --config "
        f"{' '.join(record.overrides)}` with today's code, on its {cases} cases), or the same "
        "check from a checkout that holds that revision.")


def check(reader: RunReader | None, log: GateLog, store: BaselineStore, req: CheckRequest,
          study: Study | None = None, say: Callable[[str], None] = print) -> CheckOutcome:
    """Run the check ``req`` asks for (a configuration, or ``study``'s variant)."""
    record = baseline_of(store)
    settings = (req.settings or AnalysisSettings())
    base_design = baseline_design(record)
    base_order = Order.of([*base_design, *record.overrides])
    base_rev = Revision.parse(record.git_revision)
    base_site, base_why = _site(base_rev)
    base_what = f"the baseline `{record.name}` (run {record.source_run_id[:8]})"
    if (base_order.suite, base_order.version) != (record.suite, record.suite_version):
        raise ConfigError(f"{store.where}: the baseline is of suite `{record.suite}` "
                          f"v{record.suite_version}, but its configuration now runs suite "
                          f"`{base_order.suite}` v{base_order.version}; promote a baseline on the "
                          "suite as it is (`silas-exp baseline promote SWEEP VARIANT`)")
    if req.config:
        order, repeats = Order.of([*base_design, *req.config]), record.repeats()
        _same_suite(f"--config {' '.join(req.config)}", order.suite, order.version, record,
                    store)
        now = revision.here()
        checked = Side(CANDIDATE, f"the configuration `{' '.join(req.config)}`",
                       [*base_design, *req.config], now, Site(now), offset=req.seeds_from)
        same_seeds = req.seeds_from == 0
        control_overrides = [*base_design, *record.overrides]
        subject, target = f"configuration `{' '.join(req.config)}`", None
        if req.seeds_from:
            subject += f" (repeats {req.seeds_from}+: other seeds)"
        arm = None
    else:
        assert reader is not None and study is not None
        overrides = study_overrides(reader, study)
        _same_suite(f"of `{study.variant}` of study {study.sweep_id or study.run.run_id}",
                    study.jobs[0].tags.get("silas.suite", ""),
                    study.jobs[0].tags.get("silas.suite_version", ""), record, store)
        order = Order.of(overrides)
        study_rev = Revision.parse(study.jobs[0].tags.get("silas.git_revision"))
        site, why = _site(study_rev)
        logged = study_blocks(reader, study)
        repeats = sorted({r for r, _ in logged})
        checked = Side(CANDIDATE, f"`{study.variant}` of study {study.sweep_id}",
                       [*plain(overrides), *design_of(overrides)], study_rev, site, why,
                       logged=logged, logged_from=f"study {study.sweep_id}'s runs")
        same_seeds = order == base_order
        control_overrides = [*study_part(overrides), *record.overrides]
        subject = (f"`{study.variant}` of study {study.sweep_id}" if study.sweep_id
                   else f"run {study.run.run_id[:8]}")
        target = study.run.run_id
        arm = None if same_seeds else _own_arm(reader, study, record, base_rev)
    control = Side(LOGGED if same_seeds else RERUN, base_what, control_overrides, base_rev,
                   base_site, base_why, offset=checked.offset if not same_seeds else 0)
    if same_seeds:
        control.logged = record_blocks(record)
        control.logged_from = f"its record, run {record.source_run_id[:8]}"
    elif arm is not None:
        control.logged, control.logged_from = arm
    settings = settings.model_copy(update={"control": control.label, "use_baseline": False,
                                           "margins": baseline_margins(record, settings)})
    first, last = _plan(req, checked, control, order, repeats, record, subject)
    run = run_gate(checked, control, order, repeats, first, last, settings,
                   req.work, req.workers, say)
    return _outcome(req, log, record, run, checked, control, repeats, same_seeds, subject, target,
                    settings)


def _same_suite(what: str, suite: str, version: str, record: BaselineRecord,
                store: BaselineStore) -> None:
    """Exit 2 unless the check runs the baseline's suite at its version: no case
    of one suite pairs with a case of another."""
    if (suite, version) == (record.suite, record.suite_version):
        return
    fix = (f"check it against suite `{suite}`'s own baseline (--suite-dir with that suite's "
           f"folder), or run it on suite `{record.suite}`" if suite != record.suite else
           f"promote a baseline on suite `{suite}` v{version} (`silas-exp baseline promote "
           "SWEEP VARIANT`), or check a study run on v" + record.suite_version)
    raise ConfigError(f"regress {what}: it runs suite `{suite}` v{version}, but the baseline in "
                      f"{store.where} is of suite `{record.suite}` v{record.suite_version}, so no "
                      f"case pairs with the baseline's; {fix}")


def _own_arm(reader: RunReader, study: Study, record: BaselineRecord, base_rev: Revision
             ) -> tuple[dict[tuple[int, int], JobData], str] | None:
    """A study's own arm of the baseline's configuration, when the study ran one
    with the baseline's code: the control of its check under its seeds."""
    if not study.sweep_id:
        return None
    try:
        arm = resolve(reader, study.sweep_id, record.name)
    except AnalysisError:
        return None
    if revision.same_code(Revision.parse(arm.jobs[0].tags.get("silas.git_revision")),
                          base_rev) is not True:
        return None  # it ran the baseline's configuration on other code
    return study_blocks(reader, arm), f"study {study.sweep_id}'s own arm of it"


def _plan(req: CheckRequest, checked: Side, control: Side, order: Order, repeats: list[int],
          record: BaselineRecord, subject: str) -> tuple[int, int]:
    """The blocks of the first look and the most the check may run."""
    base_blocks = len({j.block for j in record.jobs})
    first = max(1, base_blocks, checked.prefix(repeats), control.prefix(repeats))
    last = order.blocks
    if req.max_cases is not None:
        last = max((b for b in range(1, order.blocks + 1) if order.cases_in(b) <= req.max_cases),
                   default=1)
    for side in (checked, control):
        if side.site is None:
            reach = side.prefix(repeats)
            if reach == 0 or (req.max_cases is not None and reach < last):
                raise _refuse(subject, side, record, len(record.cases()))
            last = min(last, reach)
    return min(first, last), last


def _outcome(req: CheckRequest, log: GateLog, record: BaselineRecord, run: GateRun,
             checked: Side, control: Side, repeats: list[int], same_seeds: bool, subject: str,
             target: str | None, settings: AnalysisSettings) -> CheckOutcome:
    order, blocks = run.order, run.stopped
    cases = set().union(*[order.block(b) for b in range(blocks)])
    aa: list[JobData] = []
    notes = []
    if same_seeds and req.aa and len(record.repeats()) == 1:
        if control.site is not None:
            grid = [GridJob(j.repeat, j.repeat + AA_REPEATS, j.block) for j in record.jobs]
            aa = run_grid(control.overrides, grid, req.work / "aa", req.workers, control.site)
        else:
            notes.append(f"no A/A for the flags' expected counts: {control.why_not}")
    if not checked.jobs(blocks, repeats) or not control.jobs(blocks, repeats):
        raise ConfigError(f"regress {subject}: no paired case between the checked side (suite "
                          f"`{order.suite}` v{order.version}) and the baseline's (suite "
                          f"`{record.suite}` v{record.suite_version}, {len(record.cases())} "
                          "cases); nothing to decide on")
    looked = settings.model_copy(update={"confidence": run.confidence})
    report = regress(checked.jobs(blocks, repeats),
                     control.jobs(blocks, repeats) if same_seeds else record_jobs(record),
                     subject=subject, baseline_name=f"`{record.name}` (run {record.source_run_id[:8]})",
                     baseline_run_id=record.source_run_id, settings=looked, aa=aa,
                     latency=not record.simulated,
                     control=() if same_seeds else control.jobs(blocks, repeats), cases=cases)
    report.context = [
        f"checked: {checked.what}, code {_code_line(checked)}; results "
        f"{checked.provenance(blocks, repeats, order)}",
        f"baseline: {control.what}" + ("" if same_seeds else ", under the checked side's seeds")
        + f", code {_code_line(control)}; results {control.provenance(blocks, repeats, order)}",
        run.plan_line(), *run.lines]
    if control.site is None and control.why_not:
        report.notes.append(f"the baseline's revision cannot be run here ({control.why_not}): the "
                            "check stays on the cases it has")
    pool = order.cases_in(order.blocks)
    if req.max_cases is not None and req.max_cases > pool:
        notes.append(f"--max-cases {req.max_cases} is more than the pool's {pool} cases, so the "
                     "check stops at the pool's end (a larger pool needs a baseline promoted "
                     "from a study with a larger suite.max_cases)")
    report.notes += notes
    accepted = accepted_text(req.accept, log.user()) if req.accept and report.regressed else None
    md = report.markdown(accepted)
    metrics = checked.jobs(blocks, repeats)[0].metrics if repeats else {}
    gates = check_gates(metrics, parse_gates(req.fail_under))
    md += "".join(f"- gate: {g.line()}\n" for g in gates)
    return CheckOutcome(record, report, md, report.headline(accepted), gates, accepted, target)
