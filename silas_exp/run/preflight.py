"""Pre-flight: every job a sweep will launch is checked before the first starts.

A sweeper calls :func:`check_sweep` (the silas sweeper) or :func:`check_jobs`
(the tuning sweeper, with a trial for each end of every search dimension) at
the start of its ``sweep()``. Every distinct job of the sweep — every option
of every swept group, the control the sweep adds, every value of every swept
setting, built-in or a plug-in's — is composed through the sweeper's own
config loader and validated as the job would validate it
(``silas_exp.config.validate``); every suite the jobs read is loaded, and
what each job needs of its suite is checked (``run/suite_needs.py``: the
cases a calibrated scorer fits on). So a
bad value of the second variant stops the sweep before the first job, not
after it. Jobs that differ only in their ``repeat`` or ``block`` are checked
once (the first repeat stands for the others). All problems are reported together, each with the variants it breaks:
one ``ConfigError`` (or the ``SuiteError``), exit 2.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from silas_exp.errors import (
    ConfigError,
    SilasExpError,
    SuiteError,
    hydra_error_to_config_error,
)

log = logging.getLogger(__name__)
PER_JOB = ("repeat", "block")  # set per job by the sweeper: never decide whether a job is valid


def _key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def _first(parser: Any, line: str) -> str | None:
    """``repeat=range(0,5)`` -> ``repeat=0``: the jobs checked are the sweep's
    first repeat, so the sweeper's cache of compositions serves the real ones;
    None when the value is not a sweep Hydra can read (``repeats=auto``)."""
    try:
        override = parser.parse_override(line)
        if not override.is_sweep_override():
            return line
        return f"{override.key_or_group}={next(iter(override.sweep_string_iterator()))}"
    except Exception:
        return None


def sweep_jobs(params: Mapping[str, Any], arguments: Sequence[str], loader: Any,
               controls: Mapping[str, str],
               split: Callable[[Any, int | None], Any] | None = None) -> list[list[str]]:
    """The distinct jobs of a sweep (without ``repeat``/``block``): its grid, as
    the sweeper splits it (``split``: the sweeper's ``split_arguments``), with
    each swept group's control option added to a plain list of options that
    lacks it, as the sweeper adds it (``controls``: group -> option)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    split = split or BasicSweeper.split_arguments
    parser = OverridesParser.create(config_loader=loader)
    lines = [_first(parser, f"{k}={v}") if k in PER_JOB else f"{k}={v}" for k, v in params.items()]
    lines = [line for line in lines if line] + [a for a in arguments if _key(a) not in PER_JOB]
    for i, override in enumerate(parser.parse_overrides(lines)):
        group, value = override.key_or_group, override.value()
        if group in controls and getattr(value, "simple_form", False) and \
                controls[group] not in [str(v) for v in override.sweep_string_iterator()]:
            lines[i] = f"{lines[i].partition('=')[0]}={controls[group]},{lines[i].partition('=')[2]}"
    jobs: dict[tuple[str, ...], list[str]] = {}
    for batch in split(parser.parse_overrides(lines), None):
        for job in batch:
            jobs.setdefault(tuple(job), list(job))
    return list(jobs.values())


def check_jobs(config: Any, loader: Any, jobs: Iterable[Sequence[str]],
               label: Callable[[Sequence[str]], str]) -> None:
    """Compose and validate every job as it would run, load every suite they
    read and check what each job needs of its suite (``run/suite_needs.py``);
    raise one error naming every problem and the jobs it breaks."""
    from omegaconf import OmegaConf

    from silas_exp.config import validate
    from silas_exp.data.suites.memo import load_suite_cached
    from silas_exp.run.suite_needs import suite_needs

    problems: dict[str, tuple[SilasExpError, list[str]]] = {}

    def found(exc: SilasExpError, names: list[str], text: str | None = None) -> None:
        problems.setdefault(text or str(exc), (exc, []))[1].extend(names)

    suites: dict[str, list[tuple[str, Any]]] = {}
    for job in jobs:
        name = label(job)
        try:
            try:
                composed = loader.load_sweep_config(config, list(job))
                task = OmegaConf.masked_copy(composed, [k for k in composed if k != "hydra"])
                raw = OmegaConf.to_container(task, resolve=True)
            except SilasExpError:
                raise
            except Exception as exc:  # Hydra's or OmegaConf's: does not compose or resolve
                ours = exc.__cause__
                raise (ours if isinstance(ours, SilasExpError)
                       else hydra_error_to_config_error(exc)) from None
            cfg = validate(raw)  # type: ignore[arg-type]
            suites.setdefault(cfg.suite.path, []).append((name, cfg))
        except SilasExpError as exc:
            found(exc, [name])
    for path, configs in suites.items():
        try:
            loaded = load_suite_cached(path)
        except SuiteError as exc:
            for text in exc.problems:  # each of the suite's problems on its own line
                found(exc if len(exc.problems) == 1 else SuiteError(text),
                      [n for n, _ in configs], text)
            loaded = exc.partial  # every case read: what the jobs need of it is checked too
        if loaded is None:
            continue
        for name, cfg in configs:
            try:
                needs = suite_needs(cfg, loaded)
            except SilasExpError as exc:
                found(exc, [name])
                continue
            for text in needs:
                found(SuiteError(text), [name])
    if problems:
        raise _one_error(list(problems.values()))


DEFAULTS = "(the defaults)"  # the label of a job that sets none of the swept keys


def _jobs_text(names: list[str]) -> str:
    names = list(dict.fromkeys(names))
    if names == [DEFAULTS]:
        return "the sweep's one job"
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"the sweep's {'job' if len(names) == 1 else 'jobs'} {shown}"


def _one_error(found: list[tuple[SilasExpError, list[str]]]) -> SilasExpError:
    if len(found) == 1:
        exc, names = found[0]
        text = f"{str(exc).rstrip()} (in {_jobs_text(names)}; no job was started)"
        return type(exc)(text) if type(exc) in (ConfigError, SuiteError) else ConfigError(text)
    lines = "\n".join(f"  {n}. {exc} (in {_jobs_text(names)})"
                      for n, (exc, names) in enumerate(found, 1))
    kind = SuiteError if all(isinstance(e, SuiteError) for e, _ in found) else ConfigError
    return kind(f"the sweep has {len(found)} problems; no job was started. Fix them all:\n{lines}")


def _variant(swept: set[str]) -> Callable[[Sequence[str]], str]:
    def label(job: Sequence[str]) -> str:
        parts = [o.lstrip("+~") for o in job if _key(o) in swept]
        return ",".join(parts) or DEFAULTS

    return label


def check_sweep(sweeper: Any, arguments: Sequence[str]) -> list[list[str]]:
    """Check every job of the silas sweeper's sweep before the first runs
    (``sweeper``: a Hydra ``BasicSweeper`` after ``setup``); returns the
    distinct jobs it checked (without ``repeat``/``block``)."""
    from omegaconf import OmegaConf

    config = sweeper.config
    analysis = OmegaConf.to_container(config.get("analysis") or {}, resolve=True)
    controls = {} if not isinstance(analysis, dict) or analysis.get("control") or any(
        _key(a) == "analysis.control" for a in arguments) else dict(analysis.get("controls") or {})
    loader = sweeper.hydra_context.config_loader
    jobs = sweep_jobs(dict(sweeper.params or {}), arguments, loader, controls,
                      getattr(sweeper, "split_arguments", None))
    tic = time.perf_counter()
    values: dict[str, set[str]] = {}
    for job in jobs:
        for override in job:
            values.setdefault(_key(override), set()).add(override)
    swept = {key for key, seen in values.items()
             if len(seen) > 1 or any(key not in {_key(o) for o in job} for job in jobs)}
    if not swept:  # one job: named by the options it chooses that make a variant (scorer=weights)
        from silas_exp.variants import NOT_VARIANT

        repository = getattr(loader, "repository", None)
        swept = {key for key in values if repository is not None and repository.group_exists(key)
                 and not key.startswith(NOT_VARIANT)}
    check_jobs(config, loader, jobs, _variant(swept))
    log.info(f"Pre-flight: {len(jobs)} distinct job config(s) of the sweep composed, validated and "
             f"their suites loaded in {time.perf_counter() - tic:.2f} s")
    return jobs


def check_tune(config: Any, loader: Any, jobs: Callable[[list[str], str, str | None], list[str]],
               dims: Sequence[Any], control: str) -> None:
    """A tuning study's jobs before the first trial: a trial at each end of every
    search dimension (each option of a choice), and a certification job of the
    control (``jobs(extra_overrides, part, scorer)``)."""
    todo = [jobs([], "train", None), jobs([], "holdout", control)]
    for dim in dims:
        dist = dim.distribution
        values = list(dist.choices) if hasattr(dist, "choices") else [dist.low, dist.high]
        todo += [jobs([dim.override(v)], "train", None) for v in values]

    def label(job: Sequence[str]) -> str:
        searched = {d.key for d in dims} | {"scorer", "suite.split"}
        return ",".join(o.lstrip("+~") for o in job if _key(o) in searched)

    check_jobs(config, loader, todo, label)
