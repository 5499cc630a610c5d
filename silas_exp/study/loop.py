"""The study loop: a sweep run in rounds, each round launched through the
sweep's launcher, the verdicts looked at after the rounds of each planned
look (``silas_exp.study.looks``), until every variant but the control has
stopped. Used by the silas sweeper (adaptive repeats, sequential over cases)
and by tuning's certification on held-out cases.

* **Adaptive repeats** (``repeats=auto``): round r launches repeat r of the
  control and of every variant still open, up to ``repeats_max``; after the
  first ``repeats_min`` rounds a job runs only the cases whose allocated
  repeats (``silas_exp.study.allocation``: repeats where the noise is) exceed
  r, and a round no case needs is not launched.
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
    # its cases are paid for (a real model): what writes its simulated twin
    # (silas_exp.run.twin.write_study_twin, handed by the sweeper: this layer may
    # not import run), whose per-case results correct its looks
    twin: Callable[[Study, int, int], None] | None = None


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
        if batch:  # a round no case needs (repeats where the noise is) launches nothing
            returns.append(launch(batch, index))
        index += len(batch)
        look(at)
        first = at
    return returns




def run_rounds(study: Study, state: AdaptiveState, round_jobs: Callable[[int, list], list],
               launch: Launch, before: Callable[[int], None] | None, what: str,
               after_look: Callable[[AdaptiveState, int], None] | None = None) -> list:
    """Run the study's rounds (:func:`run_looks`) through ``launch``,
    reviewing the verdicts at each look. A look the folder's ``adaptive.json``
    already records (a resumed study) is not taken again: its stops stand, and
    its rounds' jobs are launched only to be found finished. ``after_look(state,
    round)`` runs after each look, a resumed one's too, with the study's state
    (which ``round_jobs`` then plans from)."""
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
        if after_look is not None:
            after_look(state, at)

    return run_looks(state, study.variants, round_jobs, launch_counted, look, before)


def adaptive_repeats(study: Study, repeats_min: int, repeats_max: int, launch: Launch) -> list:
    """Adaptive repeats: round r runs repeat r of every open variant, of the
    cases whose allocated repeats exceed r (every case for the first
    ``repeats_min`` rounds). The allocation is fixed at the look after round
    ``repeats_min`` (:func:`silas_exp.study.allocation.allocate_repeats`,
    whose docstring says why the interval stays valid) and recorded in
    ``adaptive.json``; each job reads it there (``AdaptiveState.runs``)."""
    from silas_exp.study.allocation import allocate_repeats

    current = [AdaptiveState.plan(study.settings, repeats_min, repeats_max)]

    def after_look(state: AdaptiveState, at: int) -> None:
        current[0] = state
        if at >= repeats_min:
            open_ = [v for v in study.variants if v not in state.closed and v != state.control]
            allocate_repeats(study.sweep_dir, study.settings, state, study.suite_path, open_)

    def jobs(r: int, open_jobs: list) -> list:
        counts = current[0].allocation
        if counts is not None and r >= max(counts.values(), default=0):
            return []  # no case gets repeat r
        return [[*job, f"repeat={r}"] for job in open_jobs]

    return run_rounds(study, current[0], jobs, launch, None, "Adaptive repeats", after_look)


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

    if study.twin is not None:
        study.twin(study, repeats, blocks)
    log.info(f"Sequential over cases: {len(pool)} cases in {blocks} blocks of {size} "
             f"(order fixed by seed={seed}), {repeats} repeat(s) each; verdicts looked at "
             f"after blocks {state.looks} at two-sided confidence "
             + ", ".join(f"{c:.2%}" for c in state.confidences or [state.confidence]))
    return run_rounds(study, state, jobs, launch, make_cases, "Sequential over cases")


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
