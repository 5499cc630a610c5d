"""The simulated twin of a study: every arm of the study (its variants and its
control) replayed with the simulated backend on the pool's cases, with the
same cases, seeds, blocks and repeats as the study itself, through the job
runner (``compose_config`` + ``run_job``, as ``silas_exp.run.regress.run_grid``
runs a regression check's jobs). Free, and deterministic in its configs.

    spec = TwinSpec(arms={"scorer=heuristic": [...], "scorer=weights": [...]},
                    control="scorer=heuristic", repeats=1, blocks=8)
    twin = simulated_twin(spec)                       # every arm on every block
    twin.values("scorer=weights", "context.retrieval_relevance")
    # {(case_id, repeat): value, ...}: one arm's per-case values
    twin.sweep_data(blocks=2)                          # the arms' first two blocks, as a look reads them

An arm's overrides are the study's job overrides without ``repeat`` and
``block`` (its design included: ``seed``, ``suite…``, ``cases_per_block``,
``repeats``, ``model``…); the twin replaces the model's backend with the
simulated one (``model.backend=simulated``: the simulated main model's keep-backs,
latency draws and all) and keeps the model ids, so each job also counts the calls
and tokens the study's models would be asked for, priced at their prices
(``llm.cost_usd_simulated``).

Each job is kept on disk under ``paths.cache/twin/`` (keyed by its config
without the settings that do not change a simulated replay, the code and the
suite's files), so a plan and the study that carries it, or a later plan that
only changes a margin, replay nothing twice. ``upto`` asks for an arm's first
blocks only (a plan replays the blocks its simulated looks reach).

Jobs of one (repeat, block) run in one process, the control first: the
variants then find the control's reference flushes in the process (exclusion
AUC scores them) and replay none, as in a sweep where the control job wrote
them; the offline calibration is computed once per repeat (the disk cache
shares it). So the twin's ``llm.overhead.*`` is the calibration alone, counted
once, and a job's own ``llm.*`` is what the study's job would send.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from silas_exp.analysis.data import JobData, SweepData, merge_blocks

TWIN_VERSION = 2  # of a job's record on disk: a new version never reads an older one
PREFIX_CALLS = 500  # calls a twin job looks at for each task's system prompt (then stops looking)


@dataclass(frozen=True)
class TwinSpec:
    """A study's arms and design. ``arms``: each arm's overrides (without
    ``repeat``/``block``), the control's included; ``blocks``: the pool's
    blocks (1: every case in one job)."""

    arms: Mapping[str, Sequence[str]]
    control: str
    repeats: int = 1
    blocks: int = 1

    def __post_init__(self) -> None:
        if self.control not in self.arms:
            raise ValueError(f"control {self.control!r} is not one of the arms {list(self.arms)}")


@dataclass
class TwinJob:
    """One arm's job on one block and repeat, as its record on disk holds it."""

    variant: str
    repeat: int
    block: int
    cases: dict[str, dict[str, float]]  # case id -> per-case metrics (pass and errors included)
    status: dict[str, str]  # case id -> pass / fail / error / skipped
    metrics: dict[str, float]  # the job's run-level metrics, ``llm.*`` accounting included
    cpu_s: float  # CPU seconds the job took here
    wall_s: float
    # task -> [model id, characters of its system prompt] (every task marks it for prompt caching)
    prefixes: dict[str, list] = field(default_factory=dict)

    def data(self) -> JobData:
        return JobData(self.variant, self.repeat, dict(self.metrics), self.cases,
                       status=self.status)


@dataclass
class Twin:
    """The replayed jobs of a study's arms (``jobs``), read by block and arm."""

    spec: TwinSpec
    jobs: list[TwinJob]
    seconds: float = 0.0  # wall seconds this call spent replaying (0: every job came from disk)
    replayed: int = 0  # jobs replayed now (the rest came from disk)

    def blocks_of(self, variant: str) -> int:
        """How many of the arm's first blocks the twin holds (all repeats)."""
        have = {(j.repeat, j.block) for j in self.jobs if j.variant == variant}
        n = 0
        while all((r, n) in have for r in range(self.spec.repeats)):
            n += 1
        return n

    def job_data(self, blocks: int | None = None, variants: Iterable[str] | None = None
                 ) -> list[JobData]:
        """One ``JobData`` per arm and repeat, its blocks ``< blocks`` merged."""
        wanted = set(variants) if variants is not None else None
        return merge_blocks([j.data() for j in self.jobs
                             if (blocks is None or j.block < blocks)
                             and (wanted is None or j.variant in wanted)])

    def sweep_data(self, blocks: int | None = None, variants: Iterable[str] | None = None
                   ) -> SweepData:
        """The arms' blocks ``< blocks`` as a look of the study reads them."""
        return SweepData("twin", "", self.job_data(blocks, variants),
                         swept_keys=sorted({k for name in self.spec.arms
                                            for k in _keys(name)}))

    def values(self, variant: str, metric: str) -> dict[tuple[str, int], float]:
        """One arm's per-case values of ``metric``: (case id, repeat) -> value
        (NaN where the case has none, e.g. not completed)."""
        out: dict[tuple[str, int], float] = {}
        for j in self.jobs:
            if j.variant == variant:
                for case_id, row in j.cases.items():
                    out[(case_id, j.repeat)] = float(row.get(metric, math.nan))
        return out

    def jobs_of(self, variant: str) -> list[TwinJob]:
        return sorted((j for j in self.jobs if j.variant == variant),
                      key=lambda j: (j.block, j.repeat))


def _keys(name: str) -> list[str]:
    return [p.partition("=")[0] for p in name.split(",") if "=" in p]


# -- running the jobs ----------------------------------------------------------------
_MEMO: dict[str, TwinJob] = {}  # entries read or made in this process


def _twin_config(overrides: Sequence[str]) -> Any:
    """An arm's config with the simulated backend (model ids and prices kept;
    no spend cap: what the simulated answers would cost is no spend)."""
    from silas_exp.config import compose_config

    return compose_config([*overrides, "model.backend=simulated", "llm.dry_run=false",
                           "llm.simulated_latency_ms=0", "llm.max_usd=null", "tracking=none"])


def _key(cfg: Any, repeat: int) -> str:
    """What a twin job's result depends on: its config (with only the prices of
    the LLM settings: a simulated replay answers at once, alike under every
    connection count, retry or budget), its repeat, the code and the suite's files."""
    from silas_exp.llm.settings import LLMSettings
    from silas_exp.run import disk_cache

    plain = cfg.model_copy(update={"llm": LLMSettings(backend="simulated",
                                                      prices=cfg.llm.prices)})
    return disk_cache.cache_key({"twin": TWIN_VERSION, "config": plain.variant_hash(),
                                 "repeat": repeat}, Path(cfg.suite.path))


def _entry(cfg: Any, repeat: int) -> Path:
    from silas_exp.run import disk_cache

    return disk_cache.entry_path(cfg.paths.cache, "twin", _key(cfg, repeat), ".json")


def _read(path: Path) -> TwinJob | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.pop("version", None) != TWIN_VERSION:
        return None
    return TwinJob(**data)


def _write(path: Path, job: TwinJob) -> None:
    from silas_exp.records import write_json_atomic

    write_json_atomic(path, {"version": TWIN_VERSION, **asdict(job)})


class _Prefixes:
    """Each task's model and system prompt length among a job's first calls;
    then it stops listening (a call costs nothing once no sink is installed)."""

    def __init__(self) -> None:
        self.found: dict[str, list] = {}
        self.seen = 0

    def __call__(self, record: Any) -> None:
        from silas_exp.llm import calls

        self.seen += 1
        if record.task not in self.found:
            self.found[record.task] = [record.model, len(record.system or "")]
        if self.seen >= PREFIX_CALLS:
            calls.uninstall(self)


def _run_one(variant: str, cfg: Any, out: Path) -> TwinJob:
    from silas_exp.analysis.data import job_data
    from silas_exp.llm import calls
    from silas_exp.run.job import make_job, run_job

    prefixes = _Prefixes()
    t0, c0 = time.perf_counter(), time.process_time()
    with calls.recording(prefixes):
        outcome = run_job(cfg, make_job(cfg, variant), out)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    data = job_data(variant, cfg.repeat, outcome.metrics, outcome.results())
    return TwinJob(variant, cfg.repeat, cfg.block, data.cases, data.status, dict(outcome.metrics),
                   round(cpu, 4), round(wall, 4), prefixes.found)


def _run_group(args: tuple[list[tuple[str, Any]], str]) -> list[TwinJob]:
    """The jobs of one (repeat, block), the control first, in this process."""
    from silas_exp.metrics.names import safe_name
    from silas_exp.run import disk_cache

    group, out = args
    done = []
    for variant, cfg in group:
        path = _entry(cfg, cfg.repeat)
        job = disk_cache.computed_once(
            path, _read, lambda v=variant, c=cfg: _run_one(
                v, c, Path(out) / f"{safe_name(v)}-r{c.repeat}-b{c.block}"), _write)
        done.append(job)
    return done


def simulated_twin(spec: TwinSpec, upto: Mapping[str, int] | None = None, workers: int = 1
                   ) -> Twin:
    """The twin of ``spec``: each arm's first ``upto[arm]`` blocks (default:
    every block), every repeat, read from disk or replayed (``workers``
    processes; groups of one repeat and block each). The control is replayed
    as far as the furthest arm."""
    t0 = time.perf_counter()
    configs = {name: _twin_config(overrides) for name, overrides in spec.arms.items()}
    wanted = {name: spec.blocks if upto is None else min(int(upto.get(name, 0)), spec.blocks)
              for name in spec.arms}
    wanted[spec.control] = max(wanted.values())
    jobs: list[TwinJob] = []
    todo: dict[tuple[int, int], list[tuple[str, Any]]] = {}
    order = [spec.control, *[a for a in spec.arms if a != spec.control]]
    for name in order:
        for block in range(wanted[name]):
            for repeat in range(spec.repeats):
                cfg = configs[name].model_copy(update={"repeat": repeat, "block": block})
                path = _entry(cfg, repeat)
                memo = str(path)
                job = _MEMO.get(memo) or _read(path)
                if job is not None:
                    _MEMO[memo] = job
                    jobs.append(_named(job, name))
                else:
                    todo.setdefault((repeat, block), []).append((name, cfg))
    replayed = sum(len(g) for g in todo.values())
    if todo:
        with tempfile.TemporaryDirectory(prefix="silas-twin-") as tmp:
            groups = [(group, tmp) for _, group in sorted(todo.items(), key=lambda kv: kv[0][::-1])]
            if workers > 1 and len(groups) > 1:
                import multiprocessing

                ctx = multiprocessing.get_context("fork")
                with ProcessPoolExecutor(min(workers, len(groups)), mp_context=ctx) as ex:
                    results = list(ex.map(_run_group, groups))
            else:
                results = [_run_group(g) for g in groups]
        for (group, _), made in zip(groups, results, strict=True):
            for (name, cfg), job in zip(group, made, strict=True):
                _MEMO[str(_entry(cfg, cfg.repeat))] = job
                jobs.append(_named(job, name))
    jobs.sort(key=lambda j: (order.index(j.variant), j.block, j.repeat))
    return Twin(spec, jobs, round(time.perf_counter() - t0, 3) if todo else 0.0, replayed)


def _named(job: TwinJob, name: str) -> TwinJob:
    """The job under the arm's name in this study (an entry on disk may have
    been made under another study's name for the same configuration)."""
    if job.variant == name:
        return job
    return TwinJob(**{**asdict(job), "variant": name})


def default_workers() -> int:
    """One twin worker per CPU this process may use, as the default launcher runs jobs."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not every platform has it
        return max(1, os.cpu_count() or 1)
