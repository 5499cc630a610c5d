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
    """A composed config value is invalid (bad key, value out of range).
    ``problems``: each problem on its own, so that a caller gathering the
    problems of several parts reports them all at once."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


class SuiteError(SilasExpError):
    """A suite, case or session file is missing, not JSON, or breaks the schema.
    ``problems``: each on its own; ``partial``: when every case of a broken
    suite was read, the suite as loaded (a ``LoadedSuite``), so that what the
    jobs need of it can be checked too."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.problems: list[str] = [message]
        self.partial: Any = None


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


# a custom error type: the problems a part validated on its own found (a scorer's settings)
PROBLEMS = "silas_exp_problems"
MAX_PROBLEMS = 20


def _path(loc: tuple, data: Any) -> tuple:
    """``loc`` without pydantic's own parts: validator names (``function-after[…]``)
    and the member tags of a union (``repeats.int``, ``repeats.literal['auto']``),
    which are no keys of the data."""
    out: list = []
    node = data
    for part in loc:
        if isinstance(part, str) and part.startswith("function-"):
            continue
        if isinstance(node, dict) and part in node or \
                isinstance(node, list) and isinstance(part, int) and part < len(node):
            out.append(part)
            node = node[part]
        elif node is None and data is None:
            out.append(part)  # no data to walk: keep the location as pydantic gives it
        elif isinstance(node, dict):
            out.append(part)  # a key the data lacks (missing) or should not have (extra)
            node = None
        # else: a union member's tag under a scalar value
    return tuple(out)


def model_at(model: Any, path: tuple) -> Any:
    """The pydantic model class that validates ``path`` under ``model``, or None."""
    from typing import get_args

    from pydantic import BaseModel

    for part in path:
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return None
        model = fields[part].annotation
        candidates = [model, *get_args(model)]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)),
                     None)
        if model is None:
            return None
    return model


def unknown_setting(key: str, model: Any) -> str:
    """``budget.foo``: the settings ``model`` has there, with the nearest."""
    parent, _, missing = key.rpartition(".")
    known = sorted(getattr(model, "model_fields", {})) if model is not None else []
    near = difflib.get_close_matches(missing, known, n=3, cutoff=0.5)
    where = f"under {parent}" if parent else "at the top of the config"
    return (f"{key}: there is no setting {missing!r} {where}"
            + (f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else "")
            + (f" (the settings there: {', '.join(known)})" if known else ""))


def _should_be(messages: list[str]) -> str:
    """The messages of a union's members as one: "input should be a valid
    integer or 'auto'"."""
    prefix = "Input should be "
    if len(messages) > 1 and all(m.startswith(prefix) for m in messages):
        return "input should be " + " or ".join(m[len(prefix):].split(",")[0] for m in messages)
    text = "; ".join(dict.fromkeys(messages))
    return text[:1].lower() + text[1:]


def pydantic_error_to_config_error(exc: Exception, prefix: str = "", data: Any = None,
                                   model: Any = None) -> ConfigError:
    """Every problem of a pydantic ``ValidationError`` in one paragraph: each
    key (as written in the config, ``prefix.``…), its value and what is
    allowed; an unknown key with the nearest settings of ``model`` (the class
    validated) there."""
    if isinstance(exc, ConfigError):
        return exc
    if not isinstance(exc, ValidationError):
        return ConfigError(f"{prefix}: {exc}")
    found: list[str | list] = []  # a value problem: [key, value, messages] (a union's members merge)
    by_key: dict[str, list] = {}
    first_value_key = None
    for err in exc.errors():
        path = _path(tuple(err["loc"]), data)
        key = ".".join(str(p) for p in ((prefix,) if prefix else ()) + path)
        if err["type"] == PROBLEMS:
            found += list((err.get("ctx") or {}).get("problems") or [err["msg"]])
        elif not path:  # a check across fields: its message names them
            found.append(err["msg"].removeprefix("Value error, "))
        elif err["type"] == "extra_forbidden":
            found.append(unknown_setting(key, model_at(model, path[:-1])))
        elif err["type"] == "missing":
            found.append(f"{key} is required but missing")
        elif key in by_key:
            by_key[key][2].append(err["msg"].removeprefix("Value error, "))
        else:
            by_key[key] = [key, err.get("input", _value_at(data, path)),
                           [err["msg"].removeprefix("Value error, ")]]
            found.append(by_key[key])
            first_value_key = first_value_key or key
    texts = list(dict.fromkeys(f"{p[0]} = {p[1]!r}: {_should_be(p[2])}" if isinstance(p, list)
                               else p for p in found))
    shown = texts[:MAX_PROBLEMS] + ([f"and {len(texts) - MAX_PROBLEMS} more"]
                                   if len(texts) > MAX_PROBLEMS else [])
    example = f" (e.g. {first_value_key}=<valid value>)" if first_value_key else ""
    return ConfigError(
        "invalid config: " + "; ".join(shown)
        + f". Fix it on the command line{example} or in the conf/ file that sets it.",
        problems=texts)


def problems_error(exc: ConfigError) -> Exception:
    """A ConfigError raised inside a pydantic validator, as a validation error
    of its field that keeps each of its problems (``pydantic_error_to_config_error``
    reports them with the other fields' problems)."""
    from pydantic_core import PydanticCustomError

    return PydanticCustomError(PROBLEMS, "{text}", {"text": str(exc), "problems": exc.problems})


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
