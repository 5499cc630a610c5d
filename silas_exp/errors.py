"""Exception hierarchy. Every message is written for the user: it names the
file, the field, the bad value and the fix. The entry points turn these into a
one-paragraph error and exit code 2 (``--verbose`` / ``HYDRA_FULL_ERROR=1``
show the traceback)."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError


class SilasExpError(Exception):
    """Base of every error silas_exp raises on purpose."""

    exit_code = 2


class ConfigError(SilasExpError):
    """A composed config value is invalid (bad key, value out of range)."""


class SuiteError(SilasExpError):
    """A suite, case or session file is missing, not JSON, or breaks the schema."""


class SuiteWarning(UserWarning):
    """A suite loads, but something in it is read differently than written."""


class RunError(SilasExpError):
    """A job could not complete with the given (valid) config and data; exit 1."""

    exit_code = 1


class PluginFailure(RunError):
    """A kind (scorer, strategy, metric …), built-in or plug-in, broke at run
    time: it raised, or returned a value its contract forbids. ``cause`` names
    the kind, its source, the problem and the file and line, and is the same
    for every case the same bug breaks (cases are counted per cause);
    ``detail`` is this occurrence's message and ``where`` where it happened
    (case, turn, item)."""

    def __init__(self, cause: str, detail: str = "", where: str = "") -> None:
        self.cause, self.detail, self.where = cause, detail, where
        super().__init__(self._text())

    def _text(self) -> str:
        return (self.cause + (f": {self.detail}" if self.detail else "")
                + (f" ({self.where})" if self.where else ""))

    def at(self, where: str) -> PluginFailure:
        """The same failure, located further out (the case it broke)."""
        self.where = f"{where}, {self.where}" if self.where else where
        self.args = (self._text(),)
        return self


class SweepFailed(RunError):
    """A sweep had failed jobs, or its end-of-sweep summary failed; exit 1."""


class RecordError(SilasExpError):
    """A record on disk (a job's result.json, a sweep's sweep.json) is missing,
    damaged or of a newer schema than this silas_exp reads."""


class LLMError(SilasExpError):
    """A model call failed for good (after retries) or answered garbage.

    ``reason`` is a short category (``rate_limited``, ``overloaded``,
    ``server_error``, ``timeout``, ``malformed``, ``schema``, ``cache_miss``,
    ``bad_request``, ``auth``, ...) counted in the run's metrics; ``retries``
    is how many extra attempts were made before giving up."""

    def __init__(self, message: str, *, reason: str = "error", retries: int = 0) -> None:
        super().__init__(message)
        self.reason, self.retries = reason, retries


class BudgetExceeded(SilasExpError):
    """The configured ``budget.max_usd`` was reached; finished work is kept."""


class TrackingError(SilasExpError):
    """The tracking store is unreachable, read-only or inconsistent."""


class AnalysisError(SilasExpError):
    """A compare / ablation / regression / promotion request cannot be served."""


class RegressionFound(SilasExpError):
    """Raised by gates; exit code 1 so CI distinguishes it from bad input (2)."""

    exit_code = 1


def _value_at(data: Any, loc: tuple) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def pydantic_error_to_config_error(exc: Exception, prefix: str = "", data: Any = None) -> ConfigError:
    if isinstance(exc, ConfigError):
        return exc
    if not isinstance(exc, ValidationError):
        return ConfigError(f"{prefix}: {exc}")
    problems = []
    for err in exc.errors()[:4]:
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        key = ".".join(str(p) for p in ((prefix,) if prefix else ()) + loc)
        value = err.get("input", _value_at(data, loc))
        if not loc:  # a check across fields: its message names them
            problems.append(err["msg"].removeprefix("Value error, "))
        elif err["type"] == "extra_forbidden":
            problems.append(f"{key} is not a known option (remove it or check the spelling)")
        elif err["type"] == "missing":
            problems.append(f"{key} is required but missing")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            problems.append(f"{key} = {value!r}: {msg[:1].lower() + msg[1:]}")
    first = exc.errors()[0]
    example_key = ".".join(str(p) for p in ((prefix,) if prefix else ()) + tuple(first["loc"]))
    example = f" (e.g. {example_key}=<valid value>)" if example_key else ""
    return ConfigError(
        "invalid config: " + "; ".join(problems)
        + f". Fix it on the command line{example} or in the conf/ file that sets it."
    )


def unknown_option_message(group: str, option: str, options: list[str]) -> str:
    """``scorer=mien``: the nearest options of the config group and all of them."""
    near = difflib.get_close_matches(option, options, n=3, cutoff=0.5)
    return (f"{group}={option}: {option!r} is not an option of the config group {group!r}"
            + (f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ".")
            + f" The options are: {', '.join(sorted(options))}. Correct the name on the command "
              "line" + ("; `silas-exp plugins` lists the installed scorers and strategies (a "
                        "plug-in's option exists once its package is installed)."
                        if group in ("scorer", "eviction") else "."))


def hydra_error_to_config_error(exc: Exception) -> ConfigError:
    """One of Hydra's own errors (a config that does not compose, an override it
    cannot parse or apply) as bad input in one paragraph; an unknown option of a
    config group gets the nearest options and the list of them."""
    from hydra.errors import MissingConfigException

    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file and exc.options:
        group, _, option = str(exc.missing_cfg_file).rpartition("/")
        return ConfigError(unknown_option_message(group, option, list(exc.options)))
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    cause = exc.__cause__
    if cause is not None and str(cause) and " ".join(str(cause).split()) not in text:
        text += f" ({' '.join(str(cause).split())})"
    return ConfigError(f"{text.rstrip('.')}. Fix the override on the command line "
                       "(`python -m silas_exp --help` lists the config groups and their options).")
