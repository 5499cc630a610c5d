"""The train / holdout split of a suite's evaluation cases, stratified by
flavour (a case's first tag) and difficulty, and seeded.

A pure function of the case pool, the holdout share and the seed: the sweeper
records it (``split.json`` in the sweep folder) and every job computes the same
split from the same three values (``suite.split=train|holdout``), so no list of
case ids travels through the overrides. Each stratum gives the holdout its
share rounded down; the cases left over go to the strata with the largest
remainders (ties broken by the seed), so the holdout has ``round(n × share)``
cases in all and every stratum of two or more cases is on both sides.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from silas_exp.data.suites.blocks import stratum
from silas_exp.errors import ConfigError

PARTS = ("train", "holdout")


@dataclass(frozen=True)
class Split:
    train: tuple[str, ...]  # case ids, in suite order
    holdout: tuple[str, ...]
    strata: dict[str, str]  # case id -> "flavour/difficulty"
    holdout_share: float
    seed: int

    def part(self, name: str) -> tuple[str, ...]:
        if name not in PARTS:
            raise ConfigError(f"suite.split={name!r} is not one of {PARTS} (or null: every case)")
        return getattr(self, name)

    def as_json(self) -> dict:
        return {"seed": self.seed, "holdout_share": self.holdout_share, "train": list(self.train),
                "holdout": list(self.holdout), "strata": self.strata}


def _tiebreak(seed: int, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}/{key}".encode()).digest()[:8], "little")


def split_ids(strata: dict[str, str], holdout: float, seed: int) -> Split:
    """``strata``: case id -> stratum, in suite order."""
    if not 0.0 < holdout < 1.0:
        raise ConfigError(f"suite.holdout={holdout}: the holdout share must be strictly between "
                          "0 and 1 (e.g. 0.5)")
    ids = list(strata)
    n_hold = round(len(ids) * holdout)
    if len(ids) < 2 or n_hold < 1 or n_hold >= len(ids):
        raise ConfigError(f"suite.holdout={holdout} splits {len(ids)} case(s) into an empty side; "
                          "a tuning study needs a suite with at least 2 evaluation cases and a "
                          "share that leaves cases on both sides")
    groups: dict[str, list[str]] = defaultdict(list)
    for cid in ids:
        groups[strata[cid]].append(cid)
    names = sorted(groups)
    quota = {g: int(np.floor(len(groups[g]) * holdout)) for g in names}
    left = n_hold - sum(quota.values())
    by_remainder = sorted(names, key=lambda g: (-(len(groups[g]) * holdout - quota[g]),
                                                _tiebreak(seed, g)))
    for g in by_remainder[:left]:
        quota[g] += 1
    rng = np.random.default_rng(seed)
    held: set[str] = set()
    for g in names:
        members = sorted(groups[g])
        held.update(members[i] for i in rng.permutation(len(members))[:quota[g]])
    return Split(tuple(c for c in ids if c not in held), tuple(c for c in ids if c in held),
                 dict(strata), holdout, seed)


@lru_cache(maxsize=32)
def _cached(pairs: tuple[tuple[str, str], ...], holdout: float, seed: int) -> Split:
    return split_ids(dict(pairs), holdout, seed)


def split_cases(cases, holdout: float, seed: int) -> Split:
    """The split of a case list (``BenchmarkCase`` objects, or a suite's
    ``CaseList``: each case is read once per process for its tags)."""
    pairs = tuple((c.case_id, stratum(c.tags, c.difficulty)) for c in cases)
    return _cached(pairs, holdout, seed)


def suite_cases(cases, suite_cfg):
    """The evaluation cases a job runs: the first ``max_cases``, then the
    ``suite.split`` part of them when one is named."""
    pool = cases[: suite_cfg.max_cases]
    if suite_cfg.split is None:
        return pool
    keep = set(split_cases(pool, suite_cfg.holdout, suite_cfg.split_seed).part(suite_cfg.split))
    if hasattr(pool, "ids"):  # a suite's CaseList: stay lazy, each case read when reached
        return type(pool)(pool.loaded, [cid for cid in pool.ids if cid in keep])
    return [c for c in pool if c.case_id in keep]
