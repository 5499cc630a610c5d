"""Hydra entry point: compose → validate once → ``silas_exp.run.execute.execute`` → exit code.

Exit codes: 0 ok; 1 a job failed, a case errored from code, a sweep had failed
jobs or a verdict gate asked for failed; 2 bad input (unknown config option,
invalid value, broken suite file), before any job. Errors print one paragraph,
whatever layer raised them (a sweeper, a launcher, Hydra itself); ``--verbose``
or ``HYDRA_FULL_ERROR=1`` shows the traceback.
How an error crosses Hydra to the exit code: ``silas_exp.exits``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from silas_exp.cli.overrides import check_overrides, settings_follow_options
from silas_exp.config import validate
from silas_exp.errors import (
    ConfigError,
    RunError,
    SilasExpError,
    SuiteError,
    SuiteWarning,
    hydra_error_to_config_error,
)
from silas_exp.exits import BAD_INPUT, FAILED, OK, VERBOSE_ENV, Reported
from silas_exp.run.console import first_report, report
from silas_exp.run.execute import execute
from silas_exp.run.exit_policy import after_run

CONF_DIR = str(Path(__file__).resolve().parents[2] / "conf")


def run_task(dcfg: DictConfig) -> float:
    """One Hydra job: validate the composed config, run it; errors are reported
    here and leave as ``Reported`` (silas_exp.exits)."""
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    try:
        cfg = validate(OmegaConf.to_container(dcfg, resolve=True))  # type: ignore[arg-type]
        value = execute(cfg, Path(hc.runtime.output_dir), list(hc.overrides.task), multirun,
                        hc.job.num if multirun else 0)
        if not multirun:  # a sweep's case errors count when it ends (run/callback.py)
            after_run(Path(hc.runtime.output_dir), cfg)
        return value
    except (ConfigError, SuiteError) as exc:
        if not multirun or first_report(Path(hc.sweep.dir), exc):
            report(exc, "bad input")
        raise Reported(exc) from None
    except SilasExpError as exc:
        report(exc, "run failed")
        raise Reported(exc) from None
    except Exception as exc:
        report(exc, "run failed")
        raise Reported(RunError(f"{type(exc).__name__}: {exc}")) from None


@dataclass
class Invocation:
    """What ``main`` learns while Hydra runs: whether a job started in this
    process. Hydra reports its own failures (a config that does not compose, a
    sweeper's error) only as exit status 1; before any job that is bad input (2)."""

    job_started: bool = False


def hydra_main(invocation: Invocation) -> Callable[[], object]:
    """The Hydra application, noting in ``invocation`` when a job starts."""

    @hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
    def silas_exp_task(dcfg: DictConfig) -> float:
        invocation.job_started = True
        return run_task(dcfg)

    return silas_exp_task


PLUGINS = {"sweeper": "hydra_plugins.silas_sweeper", "launcher": "hydra_plugins.silas_launcher"}


def missing_plugin() -> str | None:
    """conf/config.yaml selects ``hydra/sweeper=silas`` and ``hydra/launcher=silas``;
    an install made before a plugin existed cannot see it, and Hydra would only
    say it cannot find 'hydra/launcher/silas'. Say what to do instead."""
    for kind, module in PLUGINS.items():
        if importlib.util.find_spec(module) is None:
            return (f"error: Hydra cannot see silas_exp's {kind} plugin ({module}): this "
                    "environment's install of silas_exp predates it.\n"
                    "  fix: pip install -e . (from the repository root), then run the command again")
    return None


def _run_hydra(invocation: Invocation) -> int:
    """Run the Hydra application and report whatever escapes it in one paragraph:
    exit 2 for bad input, 1 for anything else (a bug: ``--verbose`` shows its
    traceback)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        hydra_main(invocation)()
    except Reported as exc:  # already reported to the user
        return exc.exit_code
    except SilasExpError as exc:  # raised by a sweeper, a launcher, a callback's setup
        report(exc, "bad input" if exc.exit_code == BAD_INPUT else "run failed")
        return exc.exit_code
    except (HydraException, OmegaConfBaseException) as exc:
        ours = exc.__cause__
        if isinstance(ours, SilasExpError):  # a plugin's refusal, wrapped by Hydra's instantiate
            report(ours, "bad input" if ours.exit_code == BAD_INPUT else "run failed")
            return ours.exit_code
        if invocation.job_started:
            report(exc, "run failed")
            return FAILED
        error = hydra_error_to_config_error(exc)
        error.__cause__ = exc
        report(error, "bad input")
        return BAD_INPUT
    except SystemExit as exc:
        # Hydra exits 1 when composing fails (unknown group option, bad override):
        # that is bad input, so 2 — unless a job was running when it happened.
        if exc.code == FAILED and not invocation.job_started:
            return BAD_INPUT
        raise
    except Exception as exc:  # not a refusal: a bug, named by its innermost frame
        error = RunError(crash_line(exc))
        error.__cause__ = exc  # --verbose prints its traceback
        report(error, "run failed")
        return FAILED
    return OK


def crash_line(exc: BaseException) -> str:
    """``Type: message (at module.py:line)`` for an exception nobody reported."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}{where}"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """A suite's warning (cases skipped, kinds read as generic) as one line for
    the user, not as a source location; other warnings as Python shows them."""
    if issubclass(category, SuiteWarning):
        print(f"warning: {message}", file=file or sys.stderr)
    else:
        _python_warning(message, category, filename, lineno, file, line)


_python_warning = warnings.showwarning


def main(argv: list[str] | None = None) -> None:
    """``python -m silas_exp``: Hydra's command line plus ``--verbose``.

    Hydra is asked to let every exception through (``HYDRA_FULL_ERROR=1``: else
    it prints a traceback and exits 1, whatever the error); they are reported
    here, one paragraph each. ``--verbose`` (or an exported ``HYDRA_FULL_ERROR=1``)
    adds the traceback, in this process and in the jobs' workers
    (``SILAS_EXP_VERBOSE``)."""
    problem = missing_plugin()
    if problem:
        print(problem, file=sys.stderr)
        raise SystemExit(BAD_INPUT)
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = os.environ.get("HYDRA_FULL_ERROR") == "1"
    if "--verbose" in args:
        args.remove("--verbose")
        verbose = True
    warnings.showwarning = _show_warning
    saved = {name: os.environ.get(name) for name in (VERBOSE_ENV, "HYDRA_FULL_ERROR")}
    os.environ[VERBOSE_ENV] = "1" if verbose else "0"
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        try:
            check_overrides(args, CONF_DIR)  # a misspelt key or option, a plug-in that does not load
        except ConfigError as exc:
            report(exc, "bad input")
            raise SystemExit(BAD_INPUT) from None
        sys.argv = [sys.argv[0], *settings_follow_options(args)]
        code = _run_hydra(Invocation())
    finally:  # called in-process (tests): leave the environment as it was
        warnings.showwarning = _python_warning
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    if code != OK:
        raise SystemExit(code)
