"""The gate subcommands of ``silas-exp``: promote, demote or show a suite's baseline,
and check a study's variant or a configuration against it (``regress``).
Registered with the other analysis commands by silas_exp.cli.analysis."""

from __future__ import annotations

import json
import os
from pathlib import Path

from silas_exp.cli.store import reader as _reader
from silas_exp.errors import AnalysisError, RegressionFound


def _experiment_name(args, suite: str | None = None) -> str:
    """--experiment, else MLFLOW_EXPERIMENT_NAME, else the suite's own experiment."""
    return (args.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME")
            or f"{args.prefix}-{suite or args.suite or 'default'}")


def _suite_name(args) -> str:
    """--suite, else the name in --suite-dir's suite.json, else "default"."""
    if args.suite:
        return args.suite
    if args.suite_dir:
        try:
            return json.loads((Path(args.suite_dir) / "suite.json").read_text())["name"]
        except (OSError, ValueError, KeyError):
            return Path(args.suite_dir).name
    return "default"


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
    elif args.action == "demote":
        return _demote(args, reader)
    else:
        suite = _suite_name(args)
        print(json.dumps(baseline.show(reader, _experiment_name(args, suite), suite,
                                       Path(args.suite_dir) if args.suite_dir else None), indent=1))
    return 0


def _demote(args, reader) -> int:
    """``baseline demote``: the suite's baseline.json (--suite-dir, else the folder of
    the run the experiment's pointer names) and the experiment it was promoted in."""
    from silas_exp.analysis.baseline import read_baseline
    from silas_exp.tracking import baseline

    if args.run or args.variant:
        raise AnalysisError("baseline demote takes no run: it demotes the suite's current "
                            "baseline (`silas-exp baseline demote --suite-dir suites/default "
                            "--reason TEXT`)")
    if not (args.reason or "").strip():
        raise AnalysisError("baseline demote needs --reason TEXT: why the baseline goes (kept in "
                            "its history with who and when)")
    suite_dir = Path(args.suite_dir) if args.suite_dir else None
    record = read_baseline(suite_dir) if suite_dir else None
    suite = record.suite if record is not None else _suite_name(args)
    exp = reader.experiment_by_name(_experiment_name(args, suite))
    exp_id = (record.experiment_id if record is not None and record.experiment_id
              else exp.experiment_id if exp is not None else None)
    try:
        pointed = baseline.pointer(reader, exp_id, suite) if exp_id is not None else None
    except Exception:  # noqa: BLE001  (MLflow's "no experiment with id …")
        raise AnalysisError(f"the baseline of suite {suite!r} was promoted in experiment id "
                            f"{exp_id}, which {reader.uri} does not hold; pass the --tracking-uri "
                            "of the store it was promoted in") from None
    if suite_dir is None:
        if not pointed:
            raise AnalysisError(f"no baseline of suite {suite!r} in experiment "
                                f"{_experiment_name(args, suite)!r}; pass --suite-dir with the "
                                "suite folder whose baseline.json to demote")
        suite_dir = baseline._suite_dir(reader.run(pointed))
        record = read_baseline(suite_dir)
    entry = baseline.demote(reader, suite_dir, record, args.reason.strip(), suite=suite,
                            exp_id=exp_id, pointed=pointed)
    print(f"suite {suite!r} has no baseline now: run {entry['run_id']}"
          + (f" (`{entry['variant']}`)" if entry.get("variant") else "")
          + f" demoted by {entry['by']}: {entry['reason']}")
    print(f"  {suite_dir / 'baseline.json'} removed (the record stays on the run as baseline.json); "
          "later studies run the §19.5 control; `silas-exp baseline promote` sets a new one")
    return 0


def cmd_regress(args) -> int:
    """A study's variant, or a configuration, against the suite's baseline
    (silas_exp.gate.report); exit 1 unless "no regression" (or accepted)."""
    import tempfile

    from silas_exp.analysis.baseline import read_baseline
    from silas_exp.analysis.gates import check_gates, parse_gates
    from silas_exp.gate import jobs as runs
    from silas_exp.gate.report import NOTE_MARK, accepted_text, regress
    from silas_exp.tracking import baseline
    from silas_exp.tracking.permissions import acting_user

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
        study = baseline.resolve(reader, args.run, args.variant)
        suite_dir = Path(args.suite_dir) if args.suite_dir else baseline._suite_dir(study.jobs[0])
        record = _baseline_of(read_baseline(suite_dir), suite_dir)
        overrides = baseline.study_overrides(reader, study)
        checked, n_run = runs.complete_study(overrides, _study_jobs(reader, study), record, work,
                                             args.workers)
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
    accepted = accepted_text(args.accept_regression, acting_user(args.tracking_uri)) \
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
                "silas.regress_at": _now(), "silas.regress_by": acting_user(args.tracking_uri),
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
    from silas_exp.gate import jobs as runs
    from silas_exp.tracking import baseline

    if study.sweep_id:
        try:
            arm = baseline.resolve(reader, study.sweep_id, record.name)
        except AnalysisError:
            arm = None
        if arm is not None:
            return runs.complete_study(baseline.study_overrides(reader, arm),
                                       _study_jobs(reader, arm), record, out, workers)[0]
    return runs.study_control(overrides, record, out, workers)


def _study_jobs(reader, study):
    """A study variant's logged jobs as analysis data, one per repeat (blocks merged)."""
    from silas_exp.analysis.data import job_from_result, merge_blocks

    return merge_blocks([job_from_result(reader.job_result(r.info.run_id), r.info.run_id)
                         for r in study.jobs])


def record_jobs(record):
    """The baseline's jobs, one per repeat (blocks merged), as analysis data."""
    from silas_exp.analysis.data import job_data, merge_blocks

    return merge_blocks([job_data(record.name, j.repeat, j.metrics, j.results, j.run_id)
                         for j in record.jobs])


def _baseline_of(record, suite_dir: Path):
    if record is None:
        from silas_exp.schema.baseline import read_history

        last = (read_history(suite_dir) or [{}])[-1]
        why = (f" (run {last.get('run_id', '')[:8]}, the last one, was demoted "
               f"{str(last.get('demoted_at', ''))[:16]} UTC by {last.get('by')}: {last.get('reason')})"
               if last.get("action") == "demote" else "")
        raise AnalysisError(f"no baseline: promote one first. {suite_dir} has no baseline.json"
                            f"{why}; `silas-exp baseline promote SWEEP scorer=weights`")
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
