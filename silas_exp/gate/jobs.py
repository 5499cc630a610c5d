"""Run a configuration on the cases and seeds a regression check needs: the
baseline's blocks and repeats (or a study's missing blocks), in this process
or a few worker processes, without Hydra's launcher or tracking. Each job is
composed and run as ``python -m silas_exp <overrides> repeat=R block=B`` would
run it (``compose_config`` + ``run_job``), so its cases and random streams are
those of the same job in a sweep."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from silas_exp.analysis.data import JobData, job_data, merge_blocks
from silas_exp.schema.baseline import BaselineRecord


@dataclass(frozen=True)
class GridJob:
    pairs_with: int  # the baseline repeat its results pair with
    repeat: int  # the repeat it runs as (its seed: ``job_seed(seed, repeat)``)
    block: int


def _one(args: tuple[list[str], GridJob, str]) -> JobData:
    from silas_exp.config import compose_config
    from silas_exp.run.job import make_job, run_job

    overrides, job, out = args
    cfg = compose_config([*overrides, f"repeat={job.repeat}", f"repeats={job.repeat + 1}",
                          f"block={job.block}", "tracking=none"])
    spec = make_job(cfg, "checked")
    outcome = run_job(cfg, spec, Path(out) / f"r{job.repeat}-b{job.block}")
    return job_data("checked", job.pairs_with, outcome.metrics, list(outcome.results()))


def run_grid(overrides: Sequence[str], grid: Sequence[GridJob], out_dir: Path,
             workers: int = 1) -> list[JobData]:
    """The configuration ``overrides`` run on every job of ``grid``; one
    ``JobData`` per baseline repeat, its blocks merged."""
    args = [(list(overrides), job, str(out_dir)) for job in grid]
    if workers > 1 and len(args) > 1:
        with ProcessPoolExecutor(min(workers, len(args))) as ex:
            jobs = list(ex.map(_one, args))
    else:
        jobs = [_one(a) for a in args]
    return merge_blocks(jobs)


AA_REPEATS = 1000  # an A/A runs the baseline's configuration as repeats 1000+: other seeds


def _plain(overrides: Sequence[str]) -> list[str]:
    return [o for o in overrides if not o.startswith(("repeat=", "block=", "seed=",
                                                      "cases_per_block=", "tracking"))]


def baseline_design(record: BaselineRecord) -> list[str]:
    """The overrides that reproduce the baseline's study design: its suite size,
    model and judge, its seed and blocks (so block b holds the same cases)."""
    return [*_plain(record.design), f"seed={record.seed or 0}",
            f"cases_per_block={'null' if record.cases_per_block is None else record.cases_per_block}"]


def baseline_grid(record: BaselineRecord, offset: int = 0) -> list[GridJob]:
    """Every job of the baseline, run as repeat ``repeat + offset`` (other seeds,
    same cases)."""
    return [GridJob(j.repeat, j.repeat + offset, j.block) for j in record.jobs]


@dataclass
class CheckRuns:
    """What a check ran: the checked configuration, and either the baseline's
    configuration under the same (other) seeds, the decision's control, or an
    A/A for the flags' expected counts."""

    checked: list[JobData]
    control: list[JobData]  # empty: the logged results are the control (the baseline's seeds)
    aa: list[JobData]


def check_configuration(record: BaselineRecord, config: Sequence[str], out_dir: Path,
                        offset: int = 0, aa: bool = True, workers: int = 1) -> CheckRuns:
    """A configuration on every case and repeat of the baseline: under its
    seeds, or ``offset`` repeats further on. Under other seeds the baseline's
    configuration runs on the same grid (the control, paired by seed);
    under the baseline's own, an A/A (``aa``, one baseline repeat only) says
    how many flags noise alone gives."""
    checked = run_grid([*baseline_design(record), *config], baseline_grid(record, offset),
                       out_dir / "checked", workers)
    if offset:
        return CheckRuns(checked, rerun_baseline(record, offset, out_dir / "control", workers), [])
    return CheckRuns(checked, [], aa_jobs(record, out_dir, workers) if aa else [])


def rerun_baseline(record: BaselineRecord, offset: int, out_dir: Path, workers: int = 1
                   ) -> list[JobData]:
    """The baseline's configuration on its cases, as repeats ``offset`` further on."""
    return run_grid([*baseline_design(record), *record.overrides],
                    baseline_grid(record, offset), out_dir, workers)


def aa_jobs(record: BaselineRecord, out_dir: Path, workers: int = 1) -> list[JobData]:
    """The A/A that says how many flags noise alone gives: the baseline's own
    configuration on its cases under other seeds (none needed when the
    baseline has two or more repeats: they are compared with each other)."""
    if len(record.repeats()) > 1:
        return []
    return rerun_baseline(record, AA_REPEATS, out_dir / "aa", workers)


def study_control(overrides: Sequence[str], record: BaselineRecord, out_dir: Path,
                  workers: int = 1) -> list[JobData]:
    """The baseline's configuration with a study's design (its seed, blocks,
    suite size …) on the cases the baseline covers: the control of a check of
    a study run under other seeds than the baseline's."""
    from silas_exp.analysis.baseline import study_part

    jobs, _ = complete_study([*study_part(overrides), *record.overrides], [], record, out_dir,
                             workers)
    return jobs


def missing_blocks(overrides: Sequence[str], have: dict[int, set[str]], wanted: dict[int, set[str]]
                   ) -> list[GridJob]:
    """The jobs a study did not run that hold cases the baseline covers: for each
    repeat, the blocks (in the study's own order, from its ``overrides``) with
    a wanted case the study has no result for."""
    from silas_exp.config import compose_config
    from silas_exp.data.suites.blocks import block_of, n_blocks
    from silas_exp.data.suites.memo import load_suite_cached
    from silas_exp.tune.split import suite_cases

    cfg = compose_config([*overrides, "tracking=none"])
    pool = suite_cases(load_suite_cached(cfg.suite.path).eval_cases, cfg.suite)
    ids = list(getattr(pool, "ids", None) or [c.case_id for c in pool])
    grid = []
    for repeat, cases in sorted(wanted.items()):
        missing = cases - have.get(repeat, set())
        for b in range(n_blocks(len(ids), cfg.cases_per_block) if missing else 0):
            if {ids[i] for i in block_of(len(ids), b, cfg.cases_per_block, cfg.seed)} & missing:
                grid.append(GridJob(repeat, repeat, b))
    return grid


def complete_study(overrides: Sequence[str], jobs: list[JobData], record: BaselineRecord,
                   out_dir: Path, workers: int = 1) -> tuple[list[JobData], int]:
    """A study variant's jobs (one per repeat, blocks merged) completed with the
    cases the baseline covers that the study stopped before: the missing
    blocks run with the study's own configuration and seeds. Returns the jobs
    and how many were run."""
    wanted: dict[int, set[str]] = {}
    for j in record.jobs:
        wanted.setdefault(j.repeat, set()).update(r.case_id for r in j.results)
    have = {j.repeat: set(j.cases) for j in jobs}
    grid = missing_blocks(_plain(overrides) + _design_of(overrides), have, wanted)
    if not grid:
        return jobs, 0
    extra = run_grid([*_plain(overrides), *_design_of(overrides)], grid, out_dir, workers)
    for j in extra:  # the study's own variant: its blocks merge with these
        j.variant = jobs[0].variant if jobs else j.variant
    return merge_blocks([*jobs, *extra]), len(grid)


def _design_of(overrides: Sequence[str]) -> list[str]:
    return [o for o in overrides if o.startswith(("seed=", "cases_per_block="))]
