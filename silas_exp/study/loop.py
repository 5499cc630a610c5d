"""The study loop: a sweep run in rounds, each round launched through the
sweep's launcher, the verdicts looked at after the rounds of each planned
look (``silas_exp.study.looks``), until every variant but the control has
stopped. Used by the silas sweeper (adaptive repeats, sequential over cases)
and by tuning's certification on held-out cases.

* **Adaptive repeats** (``repeats=auto``): round r launches repeat r of the
  control and of every variant still open, up to ``repeats_max``.
* **Sequential over cases** (a suite larger than ``cases_per_block``): round b
  runs block b of the suite's cases, every repeat, for the control and every
  variant still open.

Nothing here knows Hydra: the caller hands over the study's variants (each
with its job overrides) and a way to launch a batch of jobs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.stats import Outcome
from silas_exp.study.control import set_planned_jobs
from silas_exp.study.looks import review
from silas_exp.study.state import AdaptiveState

log = logging.getLogger(__name__)
# a batch of jobs (each a list of overrides) and the index of its first job
Launch = Callable[[list, int], Any]


@dataclass
class Study:
    """What a study in rounds needs: its analysis settings, sweep folder,
    suite folder and variants (each variant's job overrides, without its
    repeat or block; the control included)."""

    settings: AnalysisSettings
    sweep_dir: Path
    suite_path: Path
    variants: dict[str, list[str]]
    # its cases are paid for (a real model): the simulated twin corrects its looks
    paid: bool = False


def run_looks(state: AdaptiveState, variants: Mapping[str, Any],
              round_jobs: Callable[[int, list], list], launch: Callable[[list, int], Any],
              look: Callable[[int], None], before: Callable[[int], None] | None = None,
              follow: Collection[str] = ()) -> list:
    """Run a study in rounds: the rounds up to each planned look in one launch
    (no variant can close between looks, so the launcher gets every job it
    could run in parallel), for the control and every variant still open,
    until every variant but the control is closed or the rounds run out.
    ``round_jobs(r, jobs)``: round r of the open variants' jobs;
    ``launch(batch, first_index)``; ``look(round)`` reviews the verdicts after
    each look, closing variants in ``state``; ``before(r)`` runs as round r is
    planned. ``follow``: variants that, like the control, run while another
    one is open and never keep the study going by themselves. Returns what
    each launch returned."""
    returns, index, first = [], 0, 0
    for at in state.looks:
        # closed by the looks so far (a resumed study's state also holds later ones)
        closed = {v for v, c in state.closed.items() if c["round"] <= first}
        open_ = [v for v in variants if v not in closed and v != state.control and v not in follow]
        if not open_:
            break
        jobs = [job for v, job in variants.items() if v not in closed]
        batch = []
        for r in range(first, at):
            batch += round_jobs(r, jobs)
            if before is not None:
                before(r)
        returns.append(launch(batch, index))
        index += len(batch)
        look(at)
        first = at
    return returns




def run_rounds(study: Study, state: AdaptiveState, round_jobs: Callable[[int, list], list],
               launch: Launch, before: Callable[[int], None] | None, what: str) -> list:
    """Run the study's rounds (:func:`run_looks`) through ``launch``,
    reviewing the verdicts at each look. A look the folder's ``adaptive.json``
    already records (a resumed study) is not taken again: its stops stand, and
    its rounds' jobs are launched only to be found finished."""
    sweep_dir = study.sweep_dir
    state = state.continued(sweep_dir)
    state.write(sweep_dir)

    def launch_counted(batch: list, index: int) -> Any:
        set_planned_jobs(sweep_dir, index + len(batch))  # progress counts these jobs
        return launch(batch, index)

    def look(at: int) -> None:
        if at in state.looked:
            log.info(f"{what}: the look after {state.unit} {at} was taken before; as recorded")
        else:
            review(sweep_dir, study.settings, state, at, study.suite_path)
        for v, why in state.closed.items():
            if why["round"] == at:
                log.info(f"{what}: {v} stops after {state.unit} {at}: "
                         f"{Outcome(why['outcome']).words} — {why['why']}")

    return run_looks(state, study.variants, round_jobs, launch_counted, look, before)


def adaptive_repeats(study: Study, repeats_min: int, repeats_max: int, launch: Launch) -> list:
    """Adaptive repeats: round r runs repeat r of every open variant."""
    state = AdaptiveState.plan(study.settings, repeats_min, repeats_max)
    return run_rounds(study, state, lambda r, jobs: [[*job, f"repeat={r}"] for job in jobs],
                      launch, None, "Adaptive repeats")


def sequential_cases(study: Study, pool: Any, cases_per_block: int, seed: int, repeats: int,
                     launch: Launch) -> list:
    """Sequential over cases: round b runs block b of the suite's cases,
    every repeat, for the control and every variant still open."""
    from silas_exp.data.suites.blocks import block_of, n_blocks

    size = cases_per_block
    blocks = n_blocks(len(pool), size)
    state = AdaptiveState.plan_blocks(study.settings, blocks, size, len(pool), seed)

    def jobs(b: int, open_jobs: list) -> list:
        return [[*job, f"repeat={r}", f"block={b}"] for r in range(repeats) for job in open_jobs]

    def make_cases(b: int) -> None:  # the block's pool cases, made in parallel, once
        from silas_exp.data.suites.pool import make_while, materialize
        from silas_exp.eviction.two_tier import ahead

        if pool.loaded.pool is not None:
            ids = [pool.ids[i] for i in block_of(len(pool), b, size, seed)]
            made = materialize(pool.loaded.pool, ids)
            if made:
                log.info(f"Generated {made} case(s) of block {b} of the pool")
            if ahead.compiling():  # a core to spare until the loop is compiled: later cases now
                later = [c for c in pool.loaded.pool.ids() if c in pool.loaded.calibration_ids] + [
                    pool.ids[i] for c in range(b + 1, blocks) for i in block_of(len(pool), c, size, seed)]
                made = make_while(pool.loaded.pool, later, ahead.compiling)
                if made:
                    log.info(f"Generated {made} later case(s) of the pool while the replay loop compiles")

    if study.paid:
        write_twin(study, repeats, blocks)
    log.info(f"Sequential over cases: {len(pool)} cases in {blocks} blocks of {size} "
             f"(order fixed by seed={seed}), {repeats} repeat(s) each; verdicts looked at "
             f"after blocks {state.looks} at two-sided confidence "
             + ", ".join(f"{c:.2%}" for c in state.confidences or [state.confidence]))
    return run_rounds(study, state, jobs, launch, make_cases, "Sequential over cases")


def write_twin(study: Study, repeats: int, blocks: int) -> None:
    """The study's simulated twin (``silas_exp.study.twin``: every arm on every
    block of the pool, free) written to the sweep folder (``twin.json``), where
    every look and the report read it as the control variate of the paid
    differences (``silas_exp.stats.control_variate``). Written once: a resumed
    study keeps the twin it had."""
    from silas_exp.analysis.data import TWIN_FILE, write_twin_file
    from silas_exp.study.twin import TwinSpec, default_workers, simulated_twin

    if (study.sweep_dir / TWIN_FILE).is_file():
        return
    arms = dict(study.variants)
    controls = [v for v in arms if any(f"{k}={o}" in v.split(",")
                                       for k, o in study.settings.controls.items())]
    spec = TwinSpec(arms=arms, control=(controls or list(arms))[0], repeats=repeats,
                    blocks=blocks)
    twin = simulated_twin(spec, workers=default_workers())
    write_twin_file(study.sweep_dir, twin.job_data())
    log.info(f"Simulated twin: {len(arms)} arm(s) on all {blocks} block(s) of the pool "
             f"({twin.replayed} job(s) replayed, {twin.seconds:.0f} s): the control variate "
             "of the paid differences")


def study_pool(suite_path: str, max_cases: int | None) -> Any:
    """The suite's evaluation cases a study draws from (None when the suite
    does not load here: each job reports that itself)."""
    from silas_exp.data.suites.memo import load_suite_cached
    from silas_exp.errors import SilasExpError

    try:
        loaded = load_suite_cached(suite_path)
    except SilasExpError:
        return None
    return loaded.eval_cases[:max_cases]


def design(repeats: Any, cases_per_block: int | None, pool: Any) -> str:
    """How a sweep runs: "adaptive" (repeats=auto), "sequential" (``pool``,
    the cases drawn in blocks of ``cases_per_block``, is larger than one block)
    or "grid" (every job at once). Bad input raises ConfigError."""
    from silas_exp.errors import ConfigError

    if isinstance(repeats, int) and repeats < 1:
        raise ConfigError(f"repeats={repeats}: a sweep needs at least one repeat per variant; "
                          "use repeats=1 or more (default 5)")
    sequential = pool is not None and len(pool) > int(cases_per_block or 0)
    if str(repeats) == "auto":
        if sequential:
            raise ConfigError(
                f"repeats=auto adds repeats of the same cases, but this suite's {len(pool)} "
                f"cases run sequentially in blocks of cases_per_block={cases_per_block}, which "
                "adds cases instead; use one: cases_per_block=null repeats=auto, or a "
                "number of repeats (repeats=2)")
        return "adaptive"
    return "sequential" if sequential else "grid"
