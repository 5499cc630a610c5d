"""Hydra's basic sweeper, checking each distinct job shape once before launch.

Hydra's ``BasicSweeper`` composes every job's config in the launching process
before it launches a batch, so that a bad override fails early. That costs
~0.15 s a job, serial, before the first job starts: 2.9 s for a 20-job sweep,
~15 s for 100 jobs. Whether a config composes depends on which config-group
options and which keys the overrides name, not on the scalar values a sweep
varies (``repeat=0..4``, ``seed=…``, ``scorer.weights.zone.chronicle=…``): jobs
that differ only in such values compose alike, so one of them is checked for
all. Overrides of config groups and of ``hydra.*`` keys (typed) keep their
values in the check, and a list or dict value counts apart from a scalar.
``hydra.sweeper.check=all`` checks every job, as the basic sweeper does. Jobs
are generated, batched and launched exactly as by the basic sweeper.

The launcher composes each job's config where it runs, through the same
loader: with ``check=distinct`` that loader composes each shape once per
process and derives the other jobs of that shape from it
(``_compositions.SharedCompositions``), so a 20-job sweep on the basic launcher
composes 4 configs instead of 24. ``check=all`` composes every job from scratch.

Two more things the basic sweeper cannot know:

* **The control runs with every sweep.** An ablation compares each variant
  with a control (§19.5: heuristic-only eviction). When a sweep lists options
  of a group named in ``analysis.controls`` (``scorer`` → ``heuristic``,
  ``eviction`` → ``two_tier``) but not the control option, and no
  ``analysis.control`` is given, the control option is added to the sweep and
  recorded in ``control.json`` in the sweep folder, so the report can say so.
* **A group's own settings go with its options.** A sweep of several options
  of a group and of a setting that only some of them have
  (``scorer=heuristic,my_scorer scorer.keyword_weight=0.2,0.8``) gives that
  setting only to the jobs whose option has it: the control runs once per
  repeat, each value of the setting once with ``my_scorer``.
* **No empty sweep.** ``repeats`` below 1 would give zero jobs and a silent
  exit 0; it is bad input instead.
* **Adaptive repeats.** With ``repeats=auto`` the sweep runs in rounds: round
  r launches repeat r of the control and of every variant still open, then
  ``silas_exp.analysis.adaptive.review`` closes the variants whose verdict is
  settled (Bonferroni alpha spending over the planned looks) or that more
  repeats cannot decide, up to ``repeats_max``. Each round goes through the
  configured launcher, so joblib and Ray run a round's jobs in parallel, and
  ``resume=true`` skips finished jobs as in any sweep.
"""

# No ``from __future__ import annotations`` here: Hydra loads plugin modules
# outside sys.modules, and OmegaConf needs the dataclass's real types.
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional  # noqa: UP035  (OmegaConf reads these types)

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from hydra_plugins.silas_sweeper._compositions import SharedCompositions

log = logging.getLogger(__name__)
CHECKS = ("distinct", "all")


@dataclass
class SilasSweeperConf:
    _target_: str = "hydra_plugins.silas_sweeper.silas_sweeper.SilasSweeper"
    max_batch_size: Optional[int] = None  # noqa: UP045
    params: Optional[Dict[str, str]] = None  # noqa: UP006, UP045
    check: str = "distinct"  # distinct | all


ConfigStore.instance().store(group="hydra/sweeper", name="silas", node=SilasSweeperConf,
                             provider="silas_exp")


def _value_kind(value: str) -> str:
    value = value.strip()
    if value.startswith("["):
        return "list"
    if value.startswith("{"):
        return "dict"
    return "null" if value == "null" else "scalar"


def job_shape(overrides: Sequence[str], is_group: Callable[[str], bool]) -> tuple[str, ...]:
    """What decides whether a job's config composes: group choices and hydra.*
    overrides with their values, other overrides by key and kind of value."""
    parts = []
    for override in overrides:
        key, sep, value = override.partition("=")
        name = key.lstrip("+~").split("@")[0]
        if not sep or name.startswith(("hydra.", "hydra/")) or is_group(name):
            parts.append(override)
        else:
            parts.append(f"{key}=<{_value_kind(value)}>")
    return tuple(sorted(parts))


def distinct_jobs(batch: Sequence[Sequence[str]],
                  is_group: Callable[[str], bool]) -> list[Sequence[str]]:
    """One job per distinct shape, in batch order."""
    seen: dict[tuple[str, ...], Sequence[str]] = {}
    for overrides in batch:
        seen.setdefault(job_shape(overrides, is_group), overrides)
    return list(seen.values())


def own_settings_only(jobs: Sequence[Sequence[str]], is_group: Callable[[str], bool],
                      has_key: Callable[[str, str, str], bool]) -> list[list[str]]:
    """Each job without the ``group.key=value`` overrides that its option of
    ``group`` lacks (``has_key(group, option, key)``), when another job's
    option has them; jobs that become identical are left once, in order."""
    def choices(job: Sequence[str]) -> dict[str, str]:
        return {k: v for k, _, v in (o.partition("=") for o in job) if is_group(k)}

    def split(override: str) -> tuple[str, str] | None:
        key = override.partition("=")[0]
        group, dot, rest = key.partition(".")
        if not dot or key.startswith(("+", "~", "hydra")) or not is_group(group):
            return None
        return group, rest

    somewhere = {sk for job in jobs for o in job if (sk := split(o))
                 and has_key(sk[0], choices(job).get(sk[0], ""), sk[1])}
    out: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for job in jobs:
        chosen = choices(job)
        kept = [o for o in job
                if (sk := split(o)) is None or sk[0] not in chosen or sk not in somewhere
                or has_key(sk[0], chosen[sk[0]], sk[1])]
        if tuple(kept) not in seen:
            seen.add(tuple(kept))
            out.append(kept)
    return out


CONTROL_FILE = "control.json"
_SIMPLE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def _options(value: str) -> list[str] | None:
    """The options of a plain comma list (``a,b,c``); None for anything else
    (ranges, choice(), quoted or bracketed values are left alone)."""
    parts = [p.strip() for p in value.split(",")]
    if len(parts) < 2 or not all(p and set(p) <= _SIMPLE for p in parts):
        return None
    return parts


def add_controls(params: dict[str, str], arguments: List[str],  # noqa: UP006
                 controls: dict[str, str]) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """Put each swept group's control option first in its sweep list when it is
    missing; return the new params, arguments and what was added."""
    if any(a.lstrip("+~").startswith("analysis.control=") for a in arguments):
        return params, list(arguments), {}
    added: dict[str, str] = {}

    def fix(key: str, value: str) -> str:
        group = key.lstrip("+~")
        opts = _options(value) if group in controls else None
        if opts is None or controls[group] in opts:
            return value
        added[group] = controls[group]
        return ",".join([controls[group], *opts])

    new_params = {k: fix(k, str(v)) for k, v in params.items()}
    new_args = []
    for arg in arguments:
        key, sep, value = arg.partition("=")
        new_args.append(f"{key}={fix(key, value)}" if sep else arg)
    return new_params, new_args, added


class SilasSweeper(BasicSweeper):
    def __init__(self, max_batch_size: int | None, params: dict[str, str] | None = None,
                 check: str = "distinct") -> None:
        if check not in CHECKS:
            from silas_exp.errors import ConfigError

            raise ConfigError(f"hydra.sweeper.check={check!r} is not one of {CHECKS}; "
                             "use distinct (the default) or all")
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.check = check
        self.arm: Any = None  # the promoted baseline's configuration as the control arm

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction,
              config: DictConfig) -> None:
        if self.check == "distinct":
            hydra_context = replace(hydra_context,
                                    config_loader=SharedCompositions(hydra_context.config_loader))
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        assert self.config is not None
        repeats = self.config.get("repeats")
        if isinstance(repeats, int) and repeats < 1:
            from silas_exp.errors import ConfigError

            raise ConfigError(f"repeats={repeats}: a sweep needs at least one repeat per variant; "
                             "use repeats=1 or more (default 5)")
        from silas_exp.analysis.baseline import baseline_arm

        self.arm = baseline_arm(self.config.get("analysis") or {}, str(self.config.suite.path),
                                Path(str(self.config.hydra.sweep.dir)))
        if self.arm is not None:
            log.info(f"Control: {self.arm.name}, {self.arm.reason}")
        per_block = self.config.get("cases_per_block")
        pool = self._pool() if per_block else None
        sequential = pool is not None and len(pool) > int(per_block)
        if str(repeats) == "auto":
            if sequential:
                from silas_exp.errors import ConfigError

                raise ConfigError(
                    f"repeats=auto adds repeats of the same cases, but this suite's {len(pool)} "
                    f"cases run sequentially in blocks of cases_per_block={per_block}, which "
                    "adds cases instead; use one: cases_per_block=null repeats=auto, or a "
                    "number of repeats (repeats=2)")
            return self._adaptive(arguments)
        if sequential:
            return self._sequential(arguments, pool)
        analysis = self.config.get("analysis") or {}
        controls = dict(analysis.get("controls") or {})
        if analysis.get("control") or self.arm:  # a control named or promoted: nothing to add
            controls = {}
        self.params, arguments, added = add_controls(dict(self.params), list(arguments), controls)
        if added:
            sweep_dir = Path(str(self.config.hydra.sweep.dir))
            sweep_dir.mkdir(parents=True, exist_ok=True)
            (sweep_dir / CONTROL_FILE).write_text(json.dumps({"added": added}))
            _grow_planned_jobs(sweep_dir, added, arguments, self.params)
            log.info("Added the control " + ", ".join(f"{k}={v}" for k, v in added.items())
                     + " to the sweep (analysis.control=... names another)")
        return super().sweep(arguments)

    def split_arguments(self, overrides: Any, max_batch_size: int | None) -> Any:
        """The basic sweeper's jobs, each with only its own options' settings."""
        jobs = [job for batch in BasicSweeper.split_arguments(overrides, None) for job in batch]
        own = own_settings_only(jobs, self._is_group, self._has_key)
        if self.arm is not None and self.config is not None:
            from silas_exp.analysis.baseline import with_control_arm

            own = with_control_arm(own, self.arm, Path(str(self.config.hydra.sweep.dir)))
        if len(own) != len(jobs) and self.config is not None \
                and str(self.config.get("repeats")) != "auto":  # adaptive: no planned total
            _set_planned_jobs(Path(str(self.config.hydra.sweep.dir)), len(own))
        if max_batch_size is None:
            return [own]
        return list(BasicSweeper.split_overrides_to_chunks(own, max_batch_size))

    def _has_key(self, group: str, option: str, key: str) -> bool:
        from omegaconf import OmegaConf

        repository: Any = getattr(self.hydra_context.config_loader, "repository", None)
        found = repository.load_config(f"{group}/{option}") if repository and option else None
        if found is None:
            return True  # unknown to this check: Hydra decides
        node: Any = OmegaConf.to_container(found.config, resolve=False)  # no interpolation read
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    def _is_group(self, name: str) -> bool:
        repository: Any = getattr(self.hydra_context.config_loader, "repository", None)
        if repository is None:  # unknown loader: treat every key as a group (check all)
            return True
        return bool(repository.group_exists(name.replace(".", "/")))

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        if self.check == "all":
            return super().validate_batch_is_legal(batch)
        tic = time.perf_counter()
        chosen = distinct_jobs(batch, self._is_group)
        super().validate_batch_is_legal(chosen)
        log.info(f"Checked {len(chosen)} distinct job config(s) for {len(batch)} jobs "
                 f"in {time.perf_counter() - tic:.2f} s")

    def _study(self, arguments: List[str]) -> Any:  # noqa: UP006
        """What a study in rounds needs: its analysis settings, sweep folder and
        variants (the sweep points without their repeat, the control added)."""
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from omegaconf import OmegaConf

        from silas_exp.analysis.settings import AnalysisSettings
        from silas_exp.records import read_manifest
        from silas_exp.variants import variant_name

        cfg = self.config
        settings = AnalysisSettings.model_validate(OmegaConf.to_container(cfg.analysis,
                                                                          resolve=True))
        controls = {} if settings.control or self.arm else dict(settings.controls)
        params = {k: v for k, v in self.params.items() if k not in ("repeat", "block")}
        params, arguments, added = add_controls(params, list(arguments), controls)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        overrides = parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + arguments)
        base = self.split_arguments(overrides, None)[0]
        sweep_dir = Path(str(cfg.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(cfg, sweep_dir / "multirun.yaml")
        if added:
            (sweep_dir / CONTROL_FILE).write_text(json.dumps({"added": added}))
        info = read_manifest(sweep_dir)
        swept = list(info.swept_keys) if info else [
            o.get_key_element() for o in overrides if o.is_sweep_override()]
        return settings, sweep_dir, {variant_name(job, swept, ""): job for job in base}

    def _rounds(self, settings: Any, sweep_dir: Path, variants: dict, state: Any,
                round_jobs: Callable[[int, list], list], before: Optional[Callable[[int], None]],  # noqa: UP045
                what: str) -> Any:
        """Run the study's rounds (``run_looks``) through the configured
        launcher, reviewing the verdicts at each look."""
        from silas_exp.analysis.adaptive import review, run_looks

        state.write(sweep_dir)

        def launch(batch: list, index: int) -> Any:
            _set_planned_jobs(sweep_dir, index + len(batch))  # progress counts these jobs
            self.validate_batch_is_legal(batch)
            results = self.launcher.launch(batch, initial_job_idx=index)
            for res in results:
                _ = res.return_value  # a failed job fails the sweep, as in the basic sweeper
            return results

        def look(at: int) -> None:
            review(sweep_dir, settings, state, at, Path(str(self.config.suite.path)))
            for v, why in state.closed.items():
                if why["round"] == at:
                    log.info(f"{what}: {v} stops after {state.unit} {at}: "
                             f"{why['outcome']} — {why['why']}")

        return run_looks(state, variants, round_jobs, launch, look, before)

    def _adaptive(self, arguments: List[str]) -> Any:  # noqa: UP006
        from silas_exp.analysis.adaptive import AdaptiveState

        settings, sweep_dir, variants = self._study(arguments)
        state = AdaptiveState.plan(settings, int(self.config.repeats_min),
                                   int(self.config.repeats_max))
        return self._rounds(settings, sweep_dir, variants, state,
                            lambda r, jobs: [[*job, f"repeat={r}"] for job in jobs], None,
                            "Adaptive repeats")

    def _sequential(self, arguments: List[str], pool: Any) -> Any:  # noqa: UP006
        """Sequential over cases: round b runs block b of the suite's cases,
        every repeat, for the control and every variant still open."""
        from silas_exp.analysis.adaptive import AdaptiveState
        from silas_exp.data.suites.blocks import block_of, n_blocks

        cfg = self.config
        settings, sweep_dir, variants = self._study(arguments)
        size, seed, repeats = int(cfg.cases_per_block), int(cfg.seed), int(cfg.repeats)
        blocks = n_blocks(len(pool), size)
        state = AdaptiveState.plan_blocks(settings, blocks, size, len(pool), seed)

        def jobs(b: int, open_jobs: list) -> list:
            return [[*job, f"repeat={r}", f"block={b}"] for r in range(repeats) for job in open_jobs]

        def make_cases(b: int) -> None:  # the block's pool cases, made in parallel, once
            from silas_exp.data.suites.pool import materialize

            if pool.loaded.pool is not None:
                ids = [pool.ids[i] for i in block_of(len(pool), b, size, seed)]
                made = materialize(pool.loaded.pool, ids)
                if made:
                    log.info(f"Generated {made} case(s) of block {b} of the pool")

        log.info(f"Sequential over cases: {len(pool)} cases in {blocks} blocks of {size} "
                 f"(order fixed by seed={seed}), {repeats} repeat(s) each; verdicts looked at "
                 f"after blocks {state.looks} at two-sided confidence "
                 + ", ".join(f"{c:.2%}" for c in state.confidences or [state.confidence]))
        return self._rounds(settings, sweep_dir, variants, state, jobs, make_cases,
                            "Sequential over cases")

    def _pool(self) -> Any:
        """The suite's evaluation cases a study draws from (None when the suite
        does not load here: each job reports that itself)."""
        from silas_exp.data.suites.memo import load_suite_cached
        from silas_exp.errors import SilasExpError

        try:
            loaded = load_suite_cached(str(self.config.suite.path))
        except SilasExpError:
            return None
        return loaded.eval_cases[:self.config.suite.get("max_cases")]


def _set_planned_jobs(sweep_dir: Path, total: int) -> None:
    """Progress lines count the planned jobs: those left after
    :func:`own_settings_only`, or, in a study in rounds (planned one round at
    a time), the jobs launched so far and this round's."""
    try:
        from silas_exp.records import update_manifest

        update_manifest(sweep_dir, lambda info: setattr(info, "jobs_total", total))
    except Exception:  # progress is a nicety; never fail a sweep for it
        return


def _grow_planned_jobs(sweep_dir: Path, added: dict[str, str], arguments: list[str],
                       params: dict[str, str]) -> None:
    """Progress lines count planned jobs from the command line; count the
    added control's jobs too."""
    def grow(info: Any) -> None:
        if not info.jobs_total:
            return
        for group in added:
            value = dict(a.partition("=")[::2] for a in arguments).get(group, params.get(group))
            n = len(_options(value) or []) if value else 0
            if n > 1:
                info.jobs_total = info.jobs_total * n // (n - 1)

    try:
        from silas_exp.records import update_manifest

        update_manifest(sweep_dir, grow)
    except Exception:  # progress is a nicety; never fail a sweep for it
        return
