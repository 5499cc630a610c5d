"""The train / holdout split of a tuning study: disjoint, covering, stratified
by flavour and difficulty, reproducible from its seed; and a job given
``suite.split`` runs only its part."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from silas_exp.data.suites.loader import load_suite
from silas_exp.errors import ConfigError
from silas_exp.tune.split import split_cases, stratum, suite_cases
from tests.conftest import REPO


@pytest.fixture(scope="module")
def pool():
    return load_suite(REPO / "suites" / "default").eval_cases


def test_split_is_disjoint_covering_and_reproducible(pool):
    a = split_cases(pool, 0.5, seed=3)
    assert not set(a.train) & set(a.holdout)
    assert sorted(a.train + a.holdout) == sorted(pool.ids)
    assert len(a.holdout) == round(len(pool) * 0.5)
    # the same seed gives the same split (also computed afresh, not from a cache)
    from silas_exp.tune.split import split_ids

    again = split_ids({c.case_id: stratum(c.tags, c.difficulty) for c in pool}, 0.5, 3)
    assert (again.train, again.holdout) == (a.train, a.holdout)
    others = {split_cases(pool, 0.5, seed=s).holdout for s in range(8)}
    assert len(others) > 1  # the seed matters


def test_split_is_stratified_by_flavour_and_difficulty(pool):
    s = split_cases(pool, 0.4, seed=0)
    held = Counter(s.strata[c] for c in s.holdout)
    kept = Counter(s.strata[c] for c in s.train)
    for name in set(s.strata.values()):  # five flavours of three cases: both sides get each
        assert held[name] >= 1 and kept[name] >= 1, name


def test_a_job_runs_only_its_part(pool):
    cfg = SimpleNamespace(max_cases=None, split="train", holdout=0.5, split_seed=0)
    train = [c.case_id for c in suite_cases(pool, cfg)]
    cfg.split = "holdout"
    holdout = [c.case_id for c in suite_cases(pool, cfg)]
    assert train and holdout and not set(train) & set(holdout)
    assert train == list(split_cases(pool, 0.5, 0).train)
    cfg.split = None
    assert len(suite_cases(pool, cfg)) == len(pool)


def test_a_split_that_leaves_a_side_empty_is_bad_input(pool):
    with pytest.raises(ConfigError, match="suite.holdout"):
        split_cases(pool[:1], 0.5, seed=0)
