"""The gate subcommands of ``silas-exp``: promote, demote or show a suite's baseline,
and check a study's variant or a configuration against it (``regress``). The
work is silas_exp.gate's; this module reads the command line, picks the run
reader, the tracking backend's log and the baseline store, prints and exits.
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


def _log(reader):
    from silas_exp.tracking.baseline import MlflowGateLog

    return MlflowGateLog(reader)


def _root() -> Path:
    return Path(os.environ.get("SILAS_EXP_ROOT", os.getcwd()))


def cmd_baseline(args) -> int:
    from silas_exp.baselines import SuiteFolder, suite_version
    from silas_exp.gate import promote
    from silas_exp.gate.ports import suite_dir_of

    reader = _reader(args)
    if args.action == "promote":
        if not args.run:
            raise AnalysisError("baseline promote needs a study (its sweep id or parent run) and "
                                "a variant, or a job run: `silas-exp baseline promote SWEEP "
                                "scorer=weights` (mlflow ui shows the ids)")
        study = promote.resolve(reader, args.run, args.variant)
        suite_dir = Path(args.suite_dir) if args.suite_dir else suite_dir_of(study.jobs[0], _root())
        record = promote.promote(reader, _log(reader), study, SuiteFolder(suite_dir),
                                 suite_version(suite_dir))
        print(f"baseline of suite {record.suite!r} is now {record.summary()}")
        print(f"  promoted from run {record.source_run_id}"
              + (f" (study {record.sweep_id})" if record.sweep_id else "")
              + f"; later studies run `{' '.join(record.overrides)}` as their control")
    elif args.action == "demote":
        return _demote(args, reader)
    else:
        suite = _suite_name(args)
        store = SuiteFolder(args.suite_dir) if args.suite_dir else None
        print(json.dumps(promote.show(reader, _log(reader), _experiment_name(args, suite), suite,
                                      store), indent=1))
    return 0


def _demote(args, reader) -> int:
    """``baseline demote``: the suite's baseline.json (--suite-dir, else the folder of
    the run the experiment's pointer names) and the experiment it was promoted in."""
    from silas_exp.baselines import SuiteFolder
    from silas_exp.gate import promote
    from silas_exp.gate.ports import suite_dir_of

    if args.run or args.variant:
        raise AnalysisError("baseline demote takes no run: it demotes the suite's current "
                            "baseline (`silas-exp baseline demote --suite-dir suites/default "
                            "--reason TEXT`)")
    if not (args.reason or "").strip():
        raise AnalysisError("baseline demote needs --reason TEXT: why the baseline goes (kept in "
                            "its history with who and when)")
    log = _log(reader)
    store = SuiteFolder(args.suite_dir) if args.suite_dir else None
    record = store.read() if store else None
    suite = record.suite if record is not None else _suite_name(args)
    exp = reader.experiment(_experiment_name(args, suite))
    exp_id = (record.experiment_id if record is not None and record.experiment_id
              else exp.experiment_id if exp is not None else None)
    try:
        pointed = log.pointer(exp_id, suite) if exp_id is not None else None
    except Exception:  # noqa: BLE001  (MLflow's "no experiment with id …")
        raise AnalysisError(f"the baseline of suite {suite!r} was promoted in experiment id "
                            f"{exp_id}, which {reader.uri} does not hold; pass the --tracking-uri "
                            "of the store it was promoted in") from None
    if store is None:
        if not pointed:
            raise AnalysisError(f"no baseline of suite {suite!r} in experiment "
                                f"{_experiment_name(args, suite)!r}; pass --suite-dir with the "
                                "suite folder whose baseline.json to demote")
        store = SuiteFolder(suite_dir_of(reader.run(pointed), _root()))
        record = store.read()
    entry = promote.demote(reader, log, store, record, args.reason.strip(), suite=suite,
                           exp_id=exp_id, pointed=pointed)
    print(f"suite {suite!r} has no baseline now: run {entry['run_id']}"
          + (f" (`{entry['variant']}`)" if entry.get("variant") else "")
          + f" demoted by {entry['by']}: {entry['reason']}")
    print(f"  {store.where} removed (the record stays on the run as baseline.json); "
          "later studies run the §19.5 control; `silas-exp baseline promote` sets a new one")
    return 0


def cmd_regress(args) -> int:
    """A study's variant, or a configuration, against the suite's baseline
    (silas_exp.gate.check); exit 1 unless "no regression" (or accepted)."""
    import tempfile
    from datetime import UTC, datetime

    from silas_exp.baselines import SuiteFolder
    from silas_exp.gate.check import (
        CheckRequest,
        check,
        config_suite_dir,
        run_params,
        study_suite_dir,
    )
    from silas_exp.gate.ports import NoLog

    if bool(args.run) == bool(args.config):
        raise AnalysisError("regress checks a study (SWEEP_OR_RUN [VARIANT]) or a configuration "
                            "(--config scorer=weights ...), one of the two")
    reader = None if args.no_log and args.config else _reader(args)
    log = NoLog() if reader is None or args.no_log else _log(reader)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="regress-"))
    study = None
    if args.config:
        suite_dir = Path(args.suite_dir) if args.suite_dir else config_suite_dir(args.config)
    else:
        study, found = study_suite_dir(reader, args.run, args.variant)
        suite_dir = Path(args.suite_dir) if args.suite_dir else found
    started = datetime.now(UTC)
    req = CheckRequest(args.run, args.variant, args.config, args.seeds_from, not args.no_aa,
                       args.workers, work, args.accept_regression, args.fail_under,
                       args.max_cases)
    outcome = check(reader, log, SuiteFolder(suite_dir), req, study, say=print)
    print(outcome.markdown)
    print(outcome.headline)
    if args.out:
        Path(args.out).write_text(outcome.markdown)
    if not isinstance(log, NoLog):
        now = datetime.now(UTC)
        tags = outcome.tags(now.isoformat(timespec="seconds"), log.user())
        target = outcome.target or log.check_run(
            outcome.record, f"regress {' '.join(args.config)[:40]}", tags=tags,
            params=run_params(req, outcome.record), metrics=outcome.report.figures(),
            started=started.timestamp(), ended=now.timestamp())
        log.checked(target, tags, outcome.markdown, outcome.headline)
        print(f"recorded on run {target} (tag silas.regress, regress.md)")
    if any(not g.passed for g in outcome.gates):
        return 1
    if not outcome.passed:
        report = outcome.report
        raise RegressionFound(f"{report.decision}: {report.reasons()}; see the report above "
                              "(--accept-regression REASON accepts it, recorded on the run)")
    return 0
