"""The end of a sweep, in the launching process: the per-variant summary, the
failed jobs, the dry-run estimate and the ablation report, printed and written
to the sweep folder; then the sweep's end record (``SweepEnd``, ``sweep.done``)
that the tracker logs to the sweep's parent run.

Works with or without tracking: everything comes from the job folders' records.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from silas_exp.analysis.planned import PLAN_FILE
from silas_exp.analysis.summary import JobRecord, failures, read_job_records, variant_table
from silas_exp.config import ExperimentConfig
from silas_exp.errors import SilasExpError
from silas_exp.records import ADAPTIVE_FILE, MANIFEST_FILE, SweepEnd, read_manifest, write_sweep_end
from silas_exp.run.console import spend
from silas_exp.run.look_spend import SPEND_TABLE, plan_against_actual, sweep_spend
from silas_exp.tune.record import is_study

if TYPE_CHECKING:  # the analysis imports scipy and matplotlib: only when a sweep has two variants
    from silas_exp.analysis.parent import ParentReport

SUMMARY_FILE = "summary.md"
ABLATION_FILE, ABLATION_DIR = "ablation.md", "ablation"  # as analysis.pipeline writes them
PARENT_FILES = (SUMMARY_FILE, MANIFEST_FILE, ABLATION_FILE, ADAPTIVE_FILE,  # on the parent run
                PLAN_FILE)


@dataclass
class SweepOutcome:
    end: SweepEnd
    failed: list[str]  # one line per failed job
    broken: BaseException | None = None  # the summary itself failed

    @property
    def ok(self) -> bool:
        return not self.failed and self.broken is None


def end_of_sweep(sweep_dir: Path, cfg: ExperimentConfig | None) -> SweepOutcome:
    """Summarise the sweep and write its end record. Never raises: a summary
    that fails is reported here and fails the sweep."""
    records: list[JobRecord] = []
    failed: list[str] = []
    report: ParentReport | None = None
    broken: BaseException | None = None
    spent = against = None
    try:
        records = read_job_records(sweep_dir)
        failed, report = summarise(sweep_dir, cfg, records)
        spent = sweep_spend(sweep_dir, cfg.model.backend if cfg else None,
                            [(r.variant, r.block, r.metrics) for r in records if r.status == "finished"])
        if spent is not None:  # calls and cost per look, and what stopping early saved
            print("\n" + "\n".join(spent.lines()))
        against = plan_against_actual(sweep_dir, records, _started(sweep_dir))
        if against is not None:  # the study carried a plan: set it beside what was spent
            print("\n" + "\n".join(against[0]))
    except Exception as exc:  # reported here and fails the command, never swallowed
        broken = exc
        print(f"error: end-of-sweep summary failed: {type(exc).__name__}: {exc}\n"
              f"  every job result is kept in {sweep_dir}", file=sys.stderr)
    end = sweep_end_record(sweep_dir, len(records), len(failed), broken is not None, report)
    if spent is not None:
        end.tables[SPEND_TABLE] = spent.table()
    if against is not None:
        end.tables.update(against[1])
        end.description = (end.description or "") + against[2]
    write_sweep_end(sweep_dir, end)
    return SweepOutcome(end, failed, broken)


def _started(sweep_dir: Path) -> float:
    manifest = read_manifest(sweep_dir)
    return manifest.started_at if manifest else 0.0


def sweep_end_record(sweep_dir: Path, jobs: int, failed_jobs: int, broken: bool,
                     report: ParentReport | None) -> SweepEnd:
    """What the parent run gets: status, job counts, the files of the sweep
    folder and (when there was an ablation) its verdicts."""
    artifacts = [name for name in PARENT_FILES if (sweep_dir / name).is_file()]
    if (sweep_dir / ABLATION_DIR).is_dir():
        artifacts.append(ABLATION_DIR)
    end = SweepEnd(status="FAILED" if failed_jobs or broken else "FINISHED", artifacts=artifacts,
                   metrics={"sweep.jobs": float(jobs), "sweep.failed_jobs": float(failed_jobs)})
    if report is not None:
        end.params, end.tags, end.description = report.params, report.tags, report.description
        end.tables = report.tables
        end.metrics = {**report.metrics, **end.metrics}  # the run page lists gated ones first
        end.artifacts += report.artifacts
    return end


def recorded_end(sweep_dir: Path) -> SweepEnd:
    """The end record of a sweep whose end was never recorded (it was cut
    short): from its job records alone."""
    records = read_job_records(sweep_dir)
    return sweep_end_record(sweep_dir, len(records), len(failures(records)), False, None)


def summarise(sweep_dir: Path, cfg: ExperimentConfig | None, records: Sequence[JobRecord]
              ) -> tuple[list[str], ParentReport | None]:
    """Print and write the end-of-sweep summary and ablation; return the
    failures and what the ablation tells the parent run."""
    manifest = read_manifest(sweep_dir)
    table = variant_table(records)
    failed = failures(records)
    print(f"\nSweep {manifest.sweep_id if manifest else ''}: {len(records)} job(s) in {sweep_dir}")
    if failed:
        print(f"\n{len(failed)} job(s) failed:")
        for line in failed:
            print("  -", line)
    (sweep_dir / SUMMARY_FILE).write_text(table + "\n")
    if cfg is not None and cfg.llm.dry_run:
        print(dry_run_total(records, cfg.model.name))
    if is_study(sweep_dir):  # a tuning study reports its search and certification instead
        from silas_exp.tune.report import tune_report

        print(table)
        return failed, tune_report(sweep_dir)
    report = write_ablation(sweep_dir, records, cfg)  # with an ablation, it prints paired means
    if report is None:
        print(table)
    return failed, report


def dry_run_total(records: Sequence[JobRecord], model_name: str) -> str:
    spent = [spend(r.metrics) for r in records]
    calls, tokens, usd = (sum(s[i] for s in spent) for i in range(3))
    return (f"\nDry run ({len(records)} jobs, model={model_name}): {calls:.0f} model calls, "
            f"{tokens:.0f} tokens, estimated ${usd:.2f}. Estimated from simulated answers: real "
            "answer lengths differ; cached answers would cost nothing.")


def prepare() -> None:
    """Import what the ablation report needs (the analysis, matplotlib: ~0.6 s
    of CPU) ahead of time. The default launcher calls this in the launching
    process while its workers run the jobs (``hydra.launcher.while_waiting``),
    so the report after the last job does not wait for the imports."""
    import silas_exp.analysis.pipeline  # noqa: F401
    from silas_exp.analysis.plots import load_pyplot

    load_pyplot()


def no_control_note(variant: str, controls: dict[str, str]) -> str:
    """Why a sweep of one variant ends without an ablation, and the command that has one."""
    parts = dict(p.partition("=")[::2] for p in variant.split(","))
    swap = {g: o for g, o in parts.items() if g in controls and o != controls[g]}
    how = " ".join(f"{g}={controls[g]},{o}" for g, o in swap.items()) or "<group>=<control>,<variant>"
    return (f"(no ablation: the sweep ran one variant, {variant}, and no control. A single option "
            "is the sweep's fixed choice, so the sweeper adds the control only to a sweep that lists "
            f"two or more options of a group. Compare it with the control in one command: "
            f"python -m silas_exp -m {how} (or analysis.control=<variant> names a logged one).)")


def write_ablation(sweep_dir: Path, records: Sequence[JobRecord], cfg: ExperimentConfig | None
                   ) -> ParentReport | None:
    """Ablation of the finished jobs against the control, when the sweep has
    more than one variant: ablation.md, ablation.html and plots in the sweep
    folder; returns what the parent run shows of it."""
    variants = {r.variant for r in records if r.status == "finished"}
    if len(variants) < 2:
        if len(variants) == 1 and cfg is not None:
            print(no_control_note(variants.pop(), cfg.analysis.controls))
        return None
    from silas_exp.analysis.data import load_sweep_dir
    from silas_exp.analysis.pipeline import console_lines, report_ablation
    from silas_exp.analysis.report import paired_table
    from silas_exp.run.failures import sweep_markdown
    from silas_exp.study.state import AdaptiveState, read_as_decided

    try:
        data = load_sweep_dir(sweep_dir, Path(cfg.suite.path) if cfg else None)
        # each variant read at the confidence of the look it stopped at
        state = AdaptiveState.read(sweep_dir)
        settings, own, notes = read_as_decided(state, cfg.analysis if cfg else None)
        report = report_ablation(data, sweep_dir, settings, confidence_of=own, notes=notes,
                                 appendix=sweep_markdown(sweep_dir),  # case errors by cause
                                 pool_cases=state.pool_cases if state else None)
        parent = report.parent
        if data.control_arm is not None and report.result.control == data.control_arm.name:
            parent.tags.update(data.control_arm.tags())  # the study links to its baseline
            parent.description = data.control_arm.linked(parent.description or "")
        (sweep_dir / SUMMARY_FILE).write_text(paired_table(report.result) + "\n")
        print("\n".join(console_lines(report, data, cfg.suite.path if cfg else None)))
        return parent
    except SilasExpError as exc:
        print(f"(no ablation report: {exc})")
        return None
