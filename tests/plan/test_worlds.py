"""The worlds of a plan: the twin's per-case differences moved by a departure
from the simulated model, block by block, as the study's own looks then read
them."""

from __future__ import annotations

import numpy as np

from silas_exp.plan.worlds import K_SHIFT, Departure, Worlds

REL, PASS = "context.retrieval_relevance", "summary.pass"
CONTROL, SAME, BETTER = "scorer=heuristic", "scorer=same", "scorer=better"


def _rows(n: int = 40, blocks: int = 2):
    rng = np.random.default_rng(5)
    base = {b: rng.uniform(0.5, 0.9, n) for b in range(blocks)}

    def rows(arm: str, block: int, repeat: int) -> dict:
        lift = {CONTROL: 0.0, SAME: 0.0, BETTER: 0.03}[arm]
        noise = 0.0 if arm != BETTER else np.random.default_rng(block).normal(0, 0.02, n)
        rel = base[block] + lift + noise
        return {f"b{block}-c{i}": {REL: float(r), PASS: float(r >= 0.7), "summary.error": 0.0}
                for i, r in enumerate(rel)}

    return rows


def _worlds(low: float, high: float, n: int = 60, variants=(SAME, BETTER)) -> Worlds:
    return Worlds(list(variants), CONTROL, [REL], Departure(low, high, "test"), n, 3, _rows())


def test_no_departure_is_the_twin_itself():
    w, rows = _worlds(0.0, 0.0, n=2), _rows()
    for k in range(2):
        assert w.moved(k, BETTER, 1, 0) == {c: {**r} for c, r in rows(BETTER, 1, 0).items()}


def test_a_variant_identical_to_its_control_stays_identical_and_pass_stays_zero_or_one():
    w = _worlds(0.3, 0.3, n=5)
    for k in range(5):
        same, ctrl = w.moved(k, SAME, 0, 0), _rows()(CONTROL, 0, 0)
        assert all(same[c][REL] == ctrl[c][REL] for c in ctrl)  # no difference to move
        better = w.moved(k, BETTER, 0, 0)
        assert {r[PASS] for r in better.values()} <= {0.0, 1.0}
    data = w.data(0, [CONTROL, SAME, BETTER], blocks=2, repeats=1)
    assert sorted(data.variants()) == sorted([CONTROL, SAME, BETTER])
    assert len(data.jobs_of(BETTER)[0].cases) == 80


def test_a_world_is_the_same_at_every_look():
    w = _worlds(0.2, 0.2, n=3)
    first = w.moved(1, BETTER, 0, 0)
    w._moved.clear()  # made again, as a forked look worker makes it
    assert w.moved(1, BETTER, 0, 0) == first


def test_the_effects_spread_with_the_departure():
    def spread(share: float) -> float:
        w = _worlds(share, share, n=200, variants=(BETTER,))
        means = []
        for k in range(200):
            moved, ctrl = w.moved(k, BETTER, 0, 0), _rows()(CONTROL, 0, 0)
            means.append(np.mean([moved[c][REL] - ctrl[c][REL] for c in ctrl]))
        return float(np.std(means))

    sd = float(np.std(np.random.default_rng(0).normal(0, 0.02, 40)))  # the differences' own
    near, far = spread(0.1), spread(0.5)
    assert near < far
    assert 0.5 * K_SHIFT * 0.5 * sd < far < 2 * K_SHIFT * 0.5 * sd
