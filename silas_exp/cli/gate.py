"""The gate subcommands of ``silas-exp``: promote or show a suite's baseline,
and check a study's variant or a configuration against it (``regress``).
Registered with the other analysis commands by silas_exp.cli.analysis."""

from __future__ import annotations

import json
import os
from pathlib import Path

from silas_exp.cli.store import reader as _reader
from silas_exp.errors import AnalysisError, RegressionFound


def _experiment_name(args) -> str:
    """--experiment, else MLFLOW_EXPERIMENT_NAME, else the suite's own experiment."""
    return args.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or f"{args.prefix}-{args.suite}"


def cmd_baseline(args) -> int:
    from silas_exp.tracking import baseline

    reader = _reader(args)
    if args.action == "promote":
        if not args.run:
            raise AnalysisError("baseline promote needs a study (its sweep id or parent run) and "
                                "a variant, or a job run: `silas-exp baseline promote SWEEP "
                                "scorer=weights` (mlflow ui shows the ids)")
        record = baseline.promote(reader, args.run, args.variant,
                                  Path(args.suite_dir) if args.suite_dir else None)
        print(f"baseline of suite {record.suite!r} is now {record.summary()}")
        print(f"  promoted from run {record.source_run_id}"
              + (f" (study {record.sweep_id})" if record.sweep_id else "")
              + f"; later studies run `{' '.join(record.overrides)}` as their control")
    else:
        print(json.dumps(baseline.show(reader, _experiment_name(args), args.suite), indent=1))
    return 0


def cmd_regress(args) -> int:
    """A study's variant, or a configuration, against the suite's baseline
    (silas_exp.analysis.regress); exit 1 unless "no regression" (or accepted)."""
    import tempfile

    from silas_exp.analysis.baseline import read_baseline
    from silas_exp.analysis.gates import check_gates, parse_gates
    from silas_exp.analysis.regress import NOTE_MARK, accepted_text, regress
    from silas_exp.run import regress as runs
    from silas_exp.tracking import baseline
    from silas_exp.tracking.payload import user_name

    if bool(args.run) == bool(args.config):
        raise AnalysisError("regress checks a study (SWEEP_OR_RUN [VARIANT]) or a configuration "
                            "(--config scorer=weights ...), one of the two")
    reader = None if args.no_log and args.config else _reader(args)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="regress-"))
    if args.config:
        suite_dir = Path(args.suite_dir) if args.suite_dir else _config_suite_dir(args.config)
        record = _baseline_of(read_baseline(suite_dir), suite_dir)
        ran = runs.check_configuration(record, args.config, work, args.seeds_from,
                                       not args.no_aa, args.workers)
        subject, target = f"configuration `{' '.join(args.config)}`", None
        if args.seeds_from:
            subject += f" (repeats {args.seeds_from}+: other seeds)"
    else:
        from silas_exp.analysis.data import job_from_result, merge_blocks

        study = baseline.resolve(reader, args.run, args.variant)
        suite_dir = Path(args.suite_dir) if args.suite_dir else baseline._suite_dir(study.jobs[0])
        record = _baseline_of(read_baseline(suite_dir), suite_dir)
        jobs = merge_blocks([job_from_result(reader.job_result(r.info.run_id), r.info.run_id)
                             for r in study.jobs])
        overrides = baseline.study_overrides(reader, study)
        checked, n_run = runs.complete_study(overrides, jobs, record, work, args.workers)
        if f"seed={record.seed or 0}" in overrides:  # the baseline's seeds: the logged results
            ran = runs.CheckRuns(checked, [], [] if args.no_aa else
                                 runs.aa_jobs(record, work, workers=args.workers))
        else:  # another seed: the baseline's configuration under the study's seeds
            ran = runs.CheckRuns(checked, _study_control(reader, study, overrides, record,
                                                         work / "control", args.workers), [])
        subject = (f"`{study.variant}` of study {study.sweep_id}" if study.sweep_id
                   else f"run {study.run.info.run_id[:8]}")
        if n_run:
            subject += f" ({n_run} job(s) of missing blocks run for the check)"
        target = study.run.info.run_id
    report = regress(ran.checked, record_jobs(record), subject=subject,
                     baseline_name=f"`{record.name}` (run {record.source_run_id[:8]})",
                     baseline_run_id=record.source_run_id, aa=ran.aa, latency=not record.simulated,
                     control=ran.control)
    accepted = accepted_text(args.accept_regression, user_name()) \
        if args.accept_regression and report.regressed else None
    md = report.markdown(accepted)
    gates = check_gates(ran.checked[0].metrics if ran.checked else {}, parse_gates(args.fail_under))
    md += "".join(f"- gate: {g.line()}\n" for g in gates)
    print(md)
    print(report.headline(accepted))
    if args.out:
        Path(args.out).write_text(md)
    if reader is not None and not args.no_log:
        if target is None:
            target = _regress_run(reader, record, subject)
        tags = {"silas.regress": "pass" if not report.regressed else
                "regression" if report.outcome.value == "do_not_ship" else "inconclusive",
                "silas.regress_baseline": record.source_run_id,
                "silas.regress_at": _now(), "silas.regress_by": user_name(),
                "silas.regress_flags": report.flag_line()[:5000]}
        if accepted:
            tags["silas.regress_accepted"] = accepted[:5000]
        if gates:
            tags["silas.regress_gates"] = "pass" if all(g.passed for g in gates) else "fail"
        baseline.record_check(reader, target, tags, md, report.headline(accepted), NOTE_MARK)
        print(f"recorded on run {target} (tag silas.regress, regress.md)")
    if any(not g.passed for g in gates):
        return 1
    if report.regressed and not accepted:
        raise RegressionFound(f"{report.decision}: {report.reasons()}; see the report above "
                              "(--accept-regression REASON accepts it, recorded on the run)")
    return 0


def _study_control(reader, study, overrides, record, out: Path, workers: int):
    """The control of a study checked under its own seeds: the study's own arm
    of the baseline's configuration when it ran one (a study after the
    promotion), completed to the cases the baseline covers; else that
    configuration run afresh with the study's design."""
    from silas_exp.analysis.data import job_from_result, merge_blocks
    from silas_exp.run import regress as runs
    from silas_exp.tracking import baseline

    if study.sweep_id:
        try:
            arm = baseline.resolve(reader, study.sweep_id, record.name)
        except AnalysisError:
            arm = None
        if arm is not None:
            jobs = merge_blocks([job_from_result(reader.job_result(r.info.run_id), r.info.run_id)
                                 for r in arm.jobs])
            return runs.complete_study(baseline.study_overrides(reader, arm), jobs, record, out,
                                       workers)[0]
    return runs.study_control(overrides, record, out, workers)


def record_jobs(record):
    """The baseline's jobs, one per repeat (blocks merged), as analysis data."""
    from silas_exp.analysis.data import job_data, merge_blocks

    return merge_blocks([job_data(record.name, j.repeat, j.metrics, j.results, j.run_id)
                         for j in record.jobs])


def _baseline_of(record, suite_dir: Path):
    if record is None:
        raise AnalysisError(f"{suite_dir}: no baseline.json; promote one first: `silas-exp "
                            "baseline promote SWEEP scorer=weights`")
    return record


def _config_suite_dir(config: list[str]) -> Path:
    from silas_exp.config import compose_config

    return Path(compose_config([*config, "tracking=none"]).suite.path)


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _regress_run(reader, record, subject: str) -> str:
    """A run of its own for the check of a configuration (no study to hold it)."""
    exp_id = record.experiment_id or reader.store.ensure_experiment(f"silas-{record.suite}")
    run_id = reader.store.start_run(exp_id, f"regress {subject.split('`')[1][:40]}",
                                    {"silas.kind": "regress", "silas.suite": record.suite,
                                     "silas.baseline_run_id": record.source_run_id})
    reader.store.end_run(run_id)
    return run_id
