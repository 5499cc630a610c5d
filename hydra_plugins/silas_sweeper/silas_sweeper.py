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

* **The control runs with every sweep** (``silas_exp.study.control``): the
  control option of a swept group is added when missing, and recorded in
  ``control.json`` in the sweep folder.
* **A group's own settings go with its options.** A sweep of several options
  of a group and of a setting that only some of them have
  (``scorer=heuristic,my_scorer scorer.keyword_weight=0.2,0.8``) gives that
  setting only to the jobs whose option has it: the control runs once per
  repeat, each value of the setting once with ``my_scorer``.
* **No empty sweep.** ``repeats`` below 1 would give zero jobs and a silent
  exit 0; it is bad input instead.
* **Studies in rounds.** With ``repeats=auto`` (adaptive repeats) or a suite
  larger than ``cases_per_block`` (sequential over cases) the sweep runs the
  study loop of ``silas_exp.study``: rounds launched through the configured
  launcher, so joblib and Ray run a round's jobs in parallel, the verdicts
  looked at between them. This class only turns the command line into the
  study's variants and launches its batches.
"""

# No ``from __future__ import annotations`` here: Hydra loads plugin modules
# outside sys.modules, and OmegaConf needs the dataclass's real types.
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
from silas_exp.run.preflight import PER_JOB, check_sweep

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
        self.preflighted: set[tuple[str, ...]] = set()  # job shapes the pre-flight checked

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction,
              config: DictConfig) -> None:
        if self.check == "distinct":
            hydra_context = replace(hydra_context,
                                    config_loader=SharedCompositions(hydra_context.config_loader))
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        from silas_exp.study import control, loop

        assert self.config is not None
        from silas_exp.analysis.baseline import baseline_arm
        from silas_exp.baselines import SuiteFolder
        from silas_exp.eviction.two_tier import ahead
        from silas_exp.gate.revision import code_note

        ahead.start()  # a first run's compile of the replay loop, beside what follows
        record = SuiteFolder(str(self.config.suite.path)).read()
        self.arm = baseline_arm(self.config.get("analysis") or {}, record,
                                Path(str(self.config.hydra.sweep.dir)),
                                code_note(record.git_revision) if record else "")
        try:
            checked = check_sweep(self, arguments)  # every job's config and suite, first
            self.preflighted = {self._loose_shape(job) for job in checked}
            self._carry_plan()  # a real-model study: its plan before its first call
        except Exception:
            from silas_exp.run.sweep_folder import release_unstarted

            release_unstarted(Path(str(self.config.hydra.sweep.dir)))  # no job ran: free it
            raise
        if self.arm is not None:
            log.info(f"Control: {self.arm.name}, {self.arm.reason}")
        cfg = self.config
        per_block = cfg.get("cases_per_block")
        pool = loop.study_pool(str(cfg.suite.path), cfg.suite.get("max_cases")) if per_block else None
        kind = loop.design(cfg.get("repeats"), per_block, pool)
        if kind == "adaptive":
            return loop.adaptive_repeats(self._study(arguments), int(cfg.repeats_min),
                                         int(cfg.repeats_max), self._launch)
        if kind == "sequential":
            return loop.sequential_cases(self._study(arguments), pool, int(per_block),
                                         int(cfg.seed), int(cfg.repeats), self._launch)
        analysis = cfg.get("analysis") or {}
        controls = dict(analysis.get("controls") or {})
        if analysis.get("control") or self.arm:  # a control named or promoted: nothing to add
            controls = {}
        self.params, arguments, added = control.add_control_arm(dict(self.params),
                                                                list(arguments), controls)
        if added:
            sweep_dir = Path(str(cfg.hydra.sweep.dir))
            control.record_added_control(sweep_dir, added)
            control.grow_planned_jobs(sweep_dir, added, arguments, self.params)
            log.info("Added the control " + ", ".join(f"{k}={v}" for k, v in added.items())
                     + " to the sweep (to compare with another, set analysis.control=...)")
        return super().sweep(arguments)

    def _carry_plan(self) -> None:
        """The study's plan (silas_exp.plan.carry): printed before the first
        job, refused over ``llm.max_usd``. Not for repeats=auto."""
        from silas_exp.plan.carry import carries, carry_plan
        from silas_exp.run.callback import _experiment

        assert self.config is not None
        cfg = _experiment(self.config)
        if cfg is None or str(cfg.repeats) == "auto" or not carries(cfg):
            return
        overrides = [o for o in self.config.hydra.overrides.task
                     if o.partition("=")[0] not in ("resume",)]
        carry_plan(cfg, overrides, Path(str(self.config.hydra.sweep.dir)),
                   say=lambda line: print(line, flush=True))

    def split_arguments(self, overrides: Any, max_batch_size: int | None) -> Any:
        """The basic sweeper's jobs, each with only its own options' settings."""
        jobs = [job for batch in BasicSweeper.split_arguments(overrides, None) for job in batch]
        own = own_settings_only(jobs, self._is_group, self._has_key)
        if self.arm is not None and self.config is not None:
            from silas_exp.analysis.baseline import with_control_arm

            own = with_control_arm(own, self.arm, Path(str(self.config.hydra.sweep.dir)))
        if len(own) != len(jobs) and self.config is not None \
                and str(self.config.get("repeats")) != "auto":  # adaptive: no planned total
            from silas_exp.study.control import set_planned_jobs

            set_planned_jobs(Path(str(self.config.hydra.sweep.dir)), len(own))
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

    def _loose_shape(self, job: Sequence[str]) -> tuple[str, ...]:
        """A job's shape without ``repeat``/``block``, the values the sweeper sets."""
        return job_shape([o for o in job if o.partition("=")[0] not in PER_JOB], self._is_group)

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Compose one job of each distinct shape the pre-flight has not already
        composed and validated (``check=all``: every job)."""
        if self.check == "all":
            return super().validate_batch_is_legal(batch)
        tic = time.perf_counter()
        shapes = distinct_jobs(batch, self._is_group)
        chosen = [job for job in shapes if self._loose_shape(job) not in self.preflighted]
        if chosen:
            super().validate_batch_is_legal(chosen)
        log.info(f"Checked {len(chosen)} distinct job config(s) for {len(batch)} jobs "
                 f"in {time.perf_counter() - tic:.2f} s"
                 + (f" ({len(shapes) - len(chosen)} checked by the pre-flight)"
                    if len(chosen) < len(shapes) else ""))

    def _study(self, arguments: List[str]) -> Any:  # noqa: UP006
        """The study in rounds of this sweep: its analysis settings, sweep
        folder and variants (the sweep points without their repeat, the
        control added)."""
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from omegaconf import OmegaConf

        from silas_exp.analysis.settings import AnalysisSettings
        from silas_exp.records import read_manifest
        from silas_exp.study.control import add_control_arm, record_added_control
        from silas_exp.study.loop import Study
        from silas_exp.variants import variant_name

        cfg = self.config
        settings = AnalysisSettings.model_validate(OmegaConf.to_container(cfg.analysis,
                                                                          resolve=True))
        controls = {} if settings.control or self.arm else dict(settings.controls)
        params = {k: v for k, v in self.params.items() if k not in ("repeat", "block")}
        params, arguments, added = add_control_arm(params, list(arguments), controls)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        overrides = parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + arguments)
        base = self.split_arguments(overrides, None)[0]
        sweep_dir = Path(str(cfg.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(cfg, sweep_dir / "multirun.yaml")
        if added:
            record_added_control(sweep_dir, added)
        info = read_manifest(sweep_dir)
        swept = list(info.swept_keys) if info else [
            o.get_key_element() for o in overrides if o.is_sweep_override()]
        paid = (settings.twin and str(cfg.model.backend) != "simulated"
                and not bool(cfg.llm.get("dry_run")))
        return Study(settings, sweep_dir, Path(str(cfg.suite.path)),
                     {variant_name(job, swept, ""): job for job in base}, paid=paid)

    def _launch(self, batch: List[List[str]], index: int) -> Any:  # noqa: UP006
        """One batch of a study's jobs through the configured launcher."""
        self.validate_batch_is_legal(batch)
        results = self.launcher.launch(batch, initial_job_idx=index)
        for res in results:
            _ = res.return_value  # a failed job fails the sweep, as in the basic sweeper
        return results
