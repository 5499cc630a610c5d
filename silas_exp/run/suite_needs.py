"""What a job needs of its suite beyond the suite's own validity.

A suite can load and still not serve a variant: a calibrated scorer (weights,
prompt, online, a plug-in declaring ``calibration``) fits on the cases tagged
``calibration`` before it runs, and a suite with none would fail that job
only when it starts. The pre-flight (``run/preflight.py``) asks this of every
job of a sweep, and a single run asks it before it starts (``run/execute.py``),
so such a problem is bad input found before the first job (exit 2), together
with every other problem.
"""

from __future__ import annotations

from silas_exp.config import ExperimentConfig
from silas_exp.data.suites.loader import LoadedSuite
from silas_exp.data.suites.memo import load_suite_cached
from silas_exp.errors import SuiteError
from silas_exp.schema.benchmark import CALIBRATION_TAG
from silas_exp.scorers.base import SCORERS


def no_calibration_cases(loaded: LoadedSuite) -> str:
    return (f"{loaded.root}: no case of the suite is tagged {CALIBRATION_TAG!r}, and a calibrated "
            "scorer fits on those cases before it runs. Tag one or more cases "
            f"\"{CALIBRATION_TAG}\" (they calibrate and are not evaluated; suites/smoke has two), "
            "or run only scorers that need none (scorer=heuristic).")


def no_evaluation_cases(loaded: LoadedSuite) -> str:
    return (f"{loaded.root}: every case of the suite is tagged {CALIBRATION_TAG!r}, so no case is "
            "left to evaluate. Remove the tag from the cases the study should score.")


def suite_needs(cfg: ExperimentConfig, loaded: LoadedSuite) -> list[str]:
    """Each problem the job of ``cfg`` would meet in ``loaded`` once started;
    the messages do not name the job (the pre-flight lists the jobs beside
    each problem)."""
    found = []
    if loaded.files and not loaded.eval_cases:
        found.append(no_evaluation_cases(loaded))
    # the kind's declaration, not its calibration spec: no plug-in code runs before the jobs
    if "calibration" in SCORERS.kind_of(cfg.scorer).needs and not loaded.calibration_ids:
        found.append(no_calibration_cases(loaded))
    return found


def checked_suite(cfg: ExperimentConfig) -> LoadedSuite:
    """The suite of a single run, loaded, with what the run needs of it: one
    SuiteError naming every problem (the suite's own and the run's needs)."""
    try:
        loaded = load_suite_cached(cfg.suite.path)
        found: list[str] = []
    except SuiteError as exc:
        if exc.partial is None:
            raise
        loaded, found = exc.partial, list(exc.problems)
    found += [f"{text} (this run: scorer={cfg.scorer.name})" for text in suite_needs(cfg, loaded)]
    if len(found) == 1:
        raise SuiteError(found[0])
    if found:
        raise SuiteError(f"{len(found)} problems; nothing was run. Fix them all:\n"
                         + "\n".join(f"  {n}. {text}" for n, text in enumerate(found, 1)))
    return loaded
