"""bench_cv.py --orders: each replay is paid once (kept in the cache, read back on
the next run), the study runs on orders of the one seed's replays, and
--from-cache reruns it from the kept replays alone, on the chunks every setting has."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ..conftest import REPO


def _run(tmp_path, *args: str, mode: tuple[str, ...] = ("--orders", "3"),
         result: str = "cv-orders", key: str = "orders") -> dict:
    env = {**os.environ, "SILAS_BENCH_RESULTS": str(tmp_path), "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_cv.py"), "--quick",
                           "--skip-simulation", *mode, "--cache-commit", "test", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / f"{result}.json").read_text())[key]


def test_orders_replay_each_chunk_once_and_rerun_from_the_cache(tmp_path):
    # --quick: 8 cases in chunks of 4; control and weights; the twin, unrelated, identical
    first = _run(tmp_path)
    kept = sorted((tmp_path / "cv-cache" / "test").rglob("*.json"))
    assert first["replay_jobs"]["replayed"] == len(kept) == 3 * 2 * 2
    assert first["replay_jobs"]["cached"] == 0
    assert first["cases_used"] == 8 and first["chunks_used"] == 2
    # identical is the twin's answers: every case replay equal, calls and dollars its own
    identical = first["settings"]["identical"]
    assert identical["own_replays"] and identical["same_as_twin"] == {
        "cases_compared": 16, "cases_differing": 0}
    assert identical["with_spend"]["median_calls"] > 0
    for row in first["settings"].values():
        weights = row["variants"]["scorer=weights"]
        for k in ("without", "with"):
            assert sum(weights[k]["outcomes"].values()) == 3  # one verdict an order
            assert 4 <= weights[k]["iqr"][0] <= weights[k]["median_cases"] <= weights[k]["iqr"][1] <= 8
    # the twin's own answers: a perfect predictor
    assert all(abs(r - 1.0) < 1e-9
               for r in identical["variants"]["scorer=weights"]["correlation"].values())

    again = _run(tmp_path)
    assert again["replay_jobs"]["replayed"] == 0 and again["replay_jobs"]["cached"] == len(kept)
    assert again["settings"] == first["settings"]

    # --over-seeds: each seed on its own replays and its own order; seed 0's order is
    # the first of --orders' orders, so its cases are one of theirs
    seeds = _run(tmp_path, "--from-cache", mode=("--over-seeds", "1"), result="cv-seeds",
                 key="over_seeds")
    assert seeds["seeds"] == [0] and set(seeds["settings"]) == set(first["settings"])
    for name, row in seeds["settings"].items():
        weights = row["variants"]["scorer=weights"]
        for k in ("without", "with"):
            assert sum(weights[k]["outcomes"].values()) == 1
            assert set(weights[k]["outcomes"]) <= set(
                first["settings"][name]["variants"]["scorer=weights"][k]["outcomes"])
            assert 4 <= weights[k]["median_cases"] <= 8

    # a setting missing its second chunk: --from-cache replays nothing and runs the
    # study on the first chunk, the only one every setting has
    for path in (tmp_path / "cv-cache" / "test" / "seed0" / "unrelated").rglob("n8-c4-1.json"):
        path.unlink()
    cut = _run(tmp_path, "--from-cache")
    assert cut["replay_jobs"] == {**cut["replay_jobs"], "replayed": 0, "missing": 2}
    assert cut["chunks_used"] == 1 and cut["cases_used"] == 4
    for row in cut["settings"].values():
        for k in ("without", "with"):
            assert row["variants"]["scorer=weights"][k]["iqr"][1] <= 4
