"""A study's design from its command line, before any job: its arms (every
variant the sweep would run and the control it would add or take from the
promoted baseline), its pool of cases, blocks, repeats and the plan of looks
(``AdaptiveState``) its sweep would follow. The same rules as the sweeper's:
the sweep's grid (``preflight.sweep_jobs``), the control it adds
(``analysis.controls``) or the baseline's arm (``analysis.baseline``), the
control it picks (``ablation.pick_control``), the design (``study.loop.design``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silas_exp.config import ExperimentConfig
from silas_exp.errors import ConfigError
from silas_exp.run.twin import TwinSpec
from silas_exp.study.state import AdaptiveState

PER_JOB = ("repeat", "block")
FLAGS = ("-m", "--multirun")


class NotAStudy(ConfigError):
    """The command runs one configuration: there is no decision to plan."""


@dataclass
class StudyDesign:
    command: list[str]  # the overrides as given (the sweep flag left out)
    arms: dict[str, list[str]]  # variant name -> job overrides (no repeat/block), control included
    control: str
    control_reason: str
    cfg: ExperimentConfig  # the control's composed config (model, llm, plan, analysis, paths …)
    kind: str  # "sequential" | "grid"
    pool_cases: int
    cases_per_block: int  # the pool's cases in one block for a grid
    blocks: int
    repeats: int
    seed: int
    state: AdaptiveState  # the looks the study takes (a grid: one look at the end)
    baseline: Any = None  # the promoted baseline record when it is the control

    @property
    def variants(self) -> list[str]:
        return [a for a in self.arms if a != self.control]

    def twin_spec(self) -> TwinSpec:
        return TwinSpec(self.arms, self.control, self.repeats, self.blocks)

    def cases_at(self, look_round: int) -> int:
        """Cases a study has run after ``look_round`` rounds (blocks)."""
        return min(look_round * self.cases_per_block, self.pool_cases)


def _key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


@contextlib.contextmanager
def _hydra() -> Iterator[Any]:
    """Hydra's config loader: the running one (inside a sweep), else one on
    silas_exp's config folder for the block."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        yield GlobalHydra.instance().config_loader()
        return
    conf = str(Path(__file__).resolve().parents[2] / "conf")
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        yield GlobalHydra.instance().config_loader()


def _jobs(args: list[str], controls: dict[str, str]) -> list[list[str]]:
    from silas_exp.run.preflight import sweep_jobs

    with _hydra() as loader:
        try:
            return sweep_jobs({}, args, loader, controls)
        except Exception as exc:  # Hydra's own words on a command it cannot read
            from silas_exp.errors import hydra_error_to_config_error

            raise hydra_error_to_config_error(exc) from None


def study_design(args: Sequence[str]) -> StudyDesign:
    """The design of ``python -m silas_exp -m <args>``. Bad input raises ConfigError."""
    from silas_exp.analysis.ablation import pick_control
    from silas_exp.analysis.baseline import study_part
    from silas_exp.analysis.data import JobData, SweepData
    from silas_exp.baselines import read_baseline
    from silas_exp.config import compose_config
    from silas_exp.errors import AnalysisError
    from silas_exp.schema.baseline import config_overrides
    from silas_exp.study import loop
    from silas_exp.variants import swept_keys, variant_name

    command = [a for a in args if a not in FLAGS]
    plain = [a for a in command if _key(a) not in PER_JOB]
    first = _jobs(plain, {})
    cfg0 = compose_config(first[0])
    settings = cfg0.analysis
    record = None
    if not settings.control and settings.use_baseline:
        record = read_baseline(cfg0.suite.path)
    jobs = first if record is not None or settings.control else _jobs(plain, settings.controls)
    swept = set(swept_keys(plain, {}))
    arm = None
    if record is not None:
        from silas_exp.analysis.baseline import control_arm

        arm = control_arm(record)
        have = {(tuple(study_part(j)), tuple(config_overrides(j))) for j in jobs}
        for job in list(jobs):
            part = tuple(study_part(job))
            if (part, tuple(sorted(arm.overrides))) not in have:
                have.add((part, tuple(sorted(arm.overrides))))
                jobs.append([*part, *arm.overrides])
        swept |= {_key(o) for j in jobs for o in config_overrides(j)}
    arms: dict[str, list[str]] = {}
    for job in jobs:
        arms.setdefault(variant_name(job, swept, cfg0.scorer.name), list(job))
    if len(arms) < 2:
        raise NotAStudy(f"{' '.join(command) or '(no overrides)'}: a study compares variants "
                          f"with a control, and this command runs one configuration "
                          f"({next(iter(arms))}); plan a sweep of two or more options, e.g. "
                          "-m scorer=weights,prompt (the sweep adds the control)")
    stub = SweepData("plan", " ".join(command),
                     [JobData(name, 0, {}, {}) for name in arms], sorted(swept),
                     added_control=None, control_arm=arm)
    try:
        control, reason = pick_control(stub, settings)
    except AnalysisError as exc:
        raise ConfigError(f"the study has no control to plan against: {exc}") from None
    cfg = compose_config(arms[control])
    if str(cfg.repeats) == "auto":
        raise ConfigError("repeats=auto: the plan covers sequential studies over cases and fixed "
                          "designs (a number of repeats); plan with repeats=1 (the default) or "
                          "repeats=N")
    pool = loop.study_pool(cfg.suite.path, cfg.suite.max_cases)
    if pool is None:
        from silas_exp.data.suites.memo import load_suite_cached

        load_suite_cached(cfg.suite.path)  # its own error (SuiteError, exit 2)
        raise ConfigError(f"suite.path={cfg.suite.path}: the suite did not load")
    # as the sweeper does: without blocks, the whole suite runs at once
    kind = loop.design(cfg.repeats, cfg.cases_per_block, pool if cfg.cases_per_block else None)
    n = len(pool)
    if kind == "sequential":
        from silas_exp.data.suites.blocks import n_blocks

        size = int(cfg.cases_per_block or n)
        blocks = n_blocks(n, size)
        state = AdaptiveState.plan_blocks(settings, blocks, size, n, cfg.seed)
    else:
        size, blocks = n, 1
        state = AdaptiveState.plan_blocks(settings, 1, n, n, cfg.seed)
    return StudyDesign(command, arms, control, reason, cfg, kind, n, size, blocks,
                       int(cfg.repeats), cfg.seed, state, record if arm and control == arm.name
                       else None)
