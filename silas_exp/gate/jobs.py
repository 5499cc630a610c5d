"""Run a configuration on the cases and seeds a regression check needs, without
Hydra's launcher or tracking. Each job is run as ``python -m silas_exp
<overrides> repeat=R block=B`` would run it, so its cases and random streams
are those of the same job in a sweep:

* with the code here, in this process or a few worker processes
  (``compose_config`` + ``run_job``);
* with another revision's code (silas_exp.gate.revision.Site with a tree),
  as that command itself, one process per job with the worktree's code,
  ``tracking=none``; its record (``result.json`` and its per-case results) is
  read back from the job folder.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from silas_exp.analysis.data import JobData, job_data, job_from_result, merge_blocks
from silas_exp.errors import AnalysisError, RecordError
from silas_exp.gate.revision import Site, tree_command
from silas_exp.records import RESULT_FILE, read_job_result
from silas_exp.schema.baseline import BaselineRecord

AA_REPEATS = 1000  # an A/A runs the baseline's configuration as repeats 1000+: other seeds


@dataclass(frozen=True)
class GridJob:
    pairs_with: int  # the repeat its results pair with
    repeat: int  # the repeat it runs as (its seed: ``job_seed(seed, repeat)``)
    block: int


def _job_overrides(overrides: Sequence[str], job: GridJob) -> list[str]:
    return [*overrides, f"repeat={job.repeat}", f"repeats={job.repeat + 1}",
            f"block={job.block}", "tracking=none"]


def _one(args: tuple[list[str], GridJob, str]) -> JobData:
    from silas_exp.config import compose_config
    from silas_exp.run.job import make_job, run_job

    overrides, job, out = args
    cfg = compose_config(_job_overrides(overrides, job))
    spec = make_job(cfg, "checked")
    outcome = run_job(cfg, spec, Path(out) / f"r{job.repeat}-b{job.block}")
    return job_data("checked", job.pairs_with, outcome.metrics, list(outcome.results()))


def _one_in_tree(tree: Path, overrides: list[str], job: GridJob, out: Path) -> JobData:
    """One job with the code of ``tree``, in a process of its own."""
    folder = out / f"r{job.repeat}-b{job.block}"
    cmd, env = tree_command(tree, "silas_exp", *_job_overrides(overrides, job),
                            f"hydra.run.dir={folder}")
    proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    try:
        result = read_job_result(folder / RESULT_FILE)
    except RecordError:
        raise AnalysisError(f"the job `{' '.join(_job_overrides(overrides, job))}` run with the "
                            f"code of {tree} wrote no readable record (exit {proc.returncode}): "
                            f"{(proc.stderr or proc.stdout).strip()[-1500:]}") from None
    data = job_from_result(result, folder=folder)
    data.variant, data.repeat = "checked", job.pairs_with
    return data


def run_jobs(overrides: Sequence[str], grid: Sequence[GridJob], out_dir: Path,
             workers: int = 1, site: Site | None = None) -> dict[tuple[int, int], JobData]:
    """The configuration ``overrides`` run on every job of ``grid`` with the code
    of ``site`` (default: here); one ``JobData`` per (pairs_with, block)."""
    args = [(list(overrides), job, str(out_dir)) for job in grid]
    if site is not None and site.tree is not None:
        tree = site.tree
        with ThreadPoolExecutor(max(1, min(workers, len(args)))) as ex:
            jobs = list(ex.map(lambda a: _one_in_tree(tree, a[0], a[1], Path(a[2])), args))
    elif workers > 1 and len(args) > 1:
        with ProcessPoolExecutor(min(workers, len(args))) as ex:
            jobs = list(ex.map(_one, args))
    else:
        jobs = [_one(a) for a in args]
    return {(job.pairs_with, job.block): data for job, data in zip(grid, jobs, strict=True)}


def run_grid(overrides: Sequence[str], grid: Sequence[GridJob], out_dir: Path,
             workers: int = 1, site: Site | None = None) -> list[JobData]:
    """``run_jobs``, one ``JobData`` per repeat (its blocks merged)."""
    return merge_blocks(list(run_jobs(overrides, grid, out_dir, workers, site).values()))


def plain(overrides: Sequence[str]) -> list[str]:
    """Overrides without the ones a check sets per job or for the whole check."""
    return [o for o in overrides if not o.startswith(("repeat=", "block=", "seed=",
                                                      "cases_per_block=", "tracking"))]


def baseline_design(record: BaselineRecord) -> list[str]:
    """The overrides that reproduce the baseline's study design: its suite size,
    model and judge, its seed and blocks (so block b holds the same cases)."""
    return [*plain(record.design), f"seed={record.seed or 0}",
            f"cases_per_block={'null' if record.cases_per_block is None else record.cases_per_block}"]


def design_of(overrides: Sequence[str]) -> list[str]:
    """A job's design overrides: its seed and block size."""
    return [o for o in overrides if o.startswith(("seed=", "cases_per_block="))]


@dataclass(frozen=True)
class Order:
    """The pool of a design and the order its blocks take: which case ids block
    ``b`` holds for a study with ``seed`` and ``cases_per_block``."""

    ids: tuple[str, ...]
    cases_per_block: int | None
    seed: int
    suite: str = ""  # the suite's name and version
    version: str = ""

    @classmethod
    def of(cls, overrides: Sequence[str]) -> Order:
        from silas_exp.config import compose_config
        from silas_exp.data.suites.memo import load_suite_cached
        from silas_exp.tune.split import suite_cases

        cfg = compose_config([*overrides, "tracking=none"])
        loaded = load_suite_cached(cfg.suite.path)
        pool = suite_cases(loaded.eval_cases, cfg.suite)
        ids = tuple(getattr(pool, "ids", None) or [c.case_id for c in pool])
        return cls(ids, cfg.cases_per_block, int(cfg.seed), loaded.suite.name or cfg.suite.name,
                   loaded.suite.version)

    @property
    def blocks(self) -> int:
        from silas_exp.data.suites.blocks import n_blocks

        return n_blocks(len(self.ids), self.cases_per_block)

    def block(self, b: int) -> set[str]:
        from silas_exp.data.suites.blocks import block_of

        return {self.ids[i] for i in block_of(len(self.ids), b, self.cases_per_block, self.seed)}

    def cases_in(self, blocks: int) -> int:
        """Cases in the first ``blocks`` blocks."""
        return sum(len(self.block(b)) for b in range(min(blocks, self.blocks)))
