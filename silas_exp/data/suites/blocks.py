"""Blocks of cases: which of a suite's evaluation cases a job of a sequential
study runs.

The pool's cases are put in an order fixed by the study's seed (a seeded
permutation, recorded with the seed), then cut into blocks of
``cases_per_block``. Block ``b`` of every variant and every repeat holds the
same cases, so the comparison stays paired; a study that stops after ``k``
blocks has used the first ``k × cases_per_block`` cases of that order, a
random sample of the pool. A suite no larger than one block is one block in
suite order: the fixed design, unchanged. A case's stratum (``stratum``) is the
group that a tuning split and the allocation of repeats read.
"""

from __future__ import annotations

import math

import numpy as np

_ORDER_STREAM = 0xB10C  # keeps the block order apart from every other use of the seed


def n_blocks(n_cases: int, cases_per_block: int | None) -> int:
    if not cases_per_block or n_cases <= cases_per_block:
        return 1
    return math.ceil(n_cases / cases_per_block)


def block_order(n_cases: int, seed: int) -> list[int]:
    """The pool's case indices in the study's order."""
    return np.random.default_rng([seed, _ORDER_STREAM]).permutation(n_cases).tolist()


def block_of(n_cases: int, block: int, cases_per_block: int | None, seed: int) -> list[int]:
    """Indices (into the suite's evaluation cases) of block ``block``: all of
    them for a one-block suite."""
    blocks = n_blocks(n_cases, cases_per_block)
    if block >= blocks:
        from silas_exp.errors import ConfigError

        raise ConfigError(f"block={block}, but the suite's {n_cases} evaluation cases make "
                          f"{blocks} block(s) of cases_per_block={cases_per_block}; use block=0.."
                          f"{blocks - 1}")
    if blocks == 1:
        return list(range(n_cases))
    assert cases_per_block is not None
    order = block_order(n_cases, seed)
    return sorted(order[block * cases_per_block:(block + 1) * cases_per_block])


def stratum(tags: list[str] | None, difficulty: str | None) -> str:
    """A case's group: its flavour (first tag) and difficulty, "coding/hard"."""
    return f"{(tags or ['-'])[0]}/{difficulty or '-'}"
