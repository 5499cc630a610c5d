"""A generated pool of cases: a suite whose cases are made from its recipe on
first use instead of being committed.

``suite.json`` names a pool recipe in its metadata (``"pool": "default"``).
The recipe (``POOLS``) fixes every case: its id, flavour, length and fill
follow from the index alone, so the pool's case ids are known without
generating anything, and case ``i`` is byte-identical wherever and whenever it
is made. A case is generated when a job first reads it and kept as a file
under ``<suite>/.pool-<version>/cases/`` (git ignores it), so a study that
stops after its first blocks never pays for the rest of the pool.
``materialize`` makes a list of cases ahead of time, in parallel: the
sequential sweeper calls it for each block before the block's jobs start;
``make_while`` makes later blocks' cases while a core is otherwise idle (the
replay loop's first compile, ``silas_exp.eviction.two_tier.ahead``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from silas_exp.data.suites.build import CaseMix, SuiteRecipe, build_case, case_id_of
from silas_exp.errors import SuiteError
from silas_exp.records import write_bytes_atomic

POOL_KEY = "pool"  # suite.json metadata key naming the recipe
_FLAVOURS = ("coding", "debugging", "research", "support", "chronicle")
_FILLS = (2.5, 3.5, 4.5)
_CALIBRATION = tuple(CaseMix(f, 80, 2.0, "calibration")
                     for f in ("coding", "debugging", "research", "support") for _ in range(2))


def _balanced_mix(cases: int, turns: int) -> tuple[CaseMix, ...]:
    """Every flavour at every fill level in turn: each run of 15 cases holds the
    whole mix once (the seeded block order then draws from it at random)."""
    return tuple(CaseMix(_FLAVOURS[i % 5], turns, _FILLS[(i // 5) % 3]) for i in range(cases))


POOLS: dict[str, SuiteRecipe] = {
    "default": SuiteRecipe(
        name="default", version="3.0.0", seed=7,
        description="§20.3 scorer target, a pool of 320 generated evaluation cases: coding, "
                    "debugging, research, support and long-thread (chronicle) sessions of 120 "
                    "turns at 2.5x to 4.5x over budget, mixed zones, stale vs active items, "
                    "plus 8 calibration cases. Zone shares fit each session and tool results "
                    "are masked after 20 turns, so eviction pressure lands on the scorer; pass = "
                    "retrieval relevance >= 0.7. Studies draw it in seeded blocks "
                    "(docs/analysis.md, 'Sequential over cases').",
        mix=_balanced_mix(320, 120) + _CALIBRATION,
        scorer_target=True, mask_after=20, pass_threshold=0.7,
    ),
}


@dataclass(frozen=True)
class Pool:
    recipe: SuiteRecipe
    folder: Path  # where generated case files are kept

    @property
    def width(self) -> int:
        return max(3, len(str(len(self.recipe.mix) - 1)))

    def ids(self) -> list[str]:
        return [case_id_of(i, mix, self.width) for i, mix in enumerate(self.recipe.mix)]

    def file(self, case_id: str) -> Path:
        return self.folder / "cases" / f"{case_id}.json"

    def index(self, case_id: str) -> int:
        return int(case_id.split("-")[1])


def pool_of(metadata: dict[str, str], root: Path, suite_file: Path) -> Pool | None:
    """The pool a suite's metadata names, or None for a suite of case files."""
    name = metadata.get(POOL_KEY)
    if name is None:
        return None
    if name not in POOLS:
        raise SuiteError(f"{suite_file}: metadata.pool={name!r} names no pool recipe; known: "
                         f"{', '.join(sorted(POOLS))}. Fix the name or remove the key and ship "
                         "the cases as cases/*.json.")
    recipe = POOLS[name]
    return Pool(recipe, root / f".pool-{recipe.version}")


def generate(pool: Pool, case_id: str) -> Path:
    """Case ``case_id`` of the pool as a file (made now unless it exists)."""
    path = pool.file(case_id)
    if not path.is_file():
        i = pool.index(case_id)
        case = build_case(pool.recipe, i, pool.recipe.mix[i], pool.width)
        blob = json.dumps(case.model_dump(mode="json", exclude_none=True), separators=(",", ":"))
        write_bytes_atomic(path, (blob + "\n").encode())
    return path


def make_while(pool: Pool, case_ids: Iterable[str], go_on: Callable[[], bool]) -> int:
    """Make the missing case files among ``case_ids``, in order, one at a time in
    this process, while ``go_on()`` holds; return how many were made."""
    made = 0
    for case_id in case_ids:
        if not go_on():
            break
        if not pool.file(case_id).is_file():
            generate(pool, case_id)
            made += 1
    return made


def _generate(args: tuple[Pool, str]) -> None:
    generate(*args)


def materialize(pool: Pool, case_ids: Iterable[str], workers: int | None = None) -> int:
    """Make the missing case files among ``case_ids`` (in parallel, one process
    per usable CPU); return how many were made."""
    missing = [c for c in case_ids if not pool.file(c).is_file()]
    if not missing:
        return 0
    workers = workers or len(os.sched_getaffinity(0))
    if workers < 2 or len(missing) < 4:
        for c in missing:
            generate(pool, c)
        return len(missing)
    with ProcessPoolExecutor(workers) as ex:
        list(ex.map(_generate, [(pool, c) for c in missing], chunksize=4))
    return len(missing)
