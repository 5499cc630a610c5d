"""Hydra's Ray launcher on a local auto-started cluster (optional extra `[ray]`).

Marker `ray`: not part of the default run; `.ci/run` runs it in a separate
environment with the extra installed (hydra-ray-launcher pins cloudpickle<3).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from ..conftest import REPO

pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="needs the [ray] extra")
pytestmark = pytest.mark.ray


@pytest.mark.parametrize("background", [True, False], ids=["uploader", "jobs-log-themselves"])
def test_ray_sweep_logs_every_job(tmp_path, background):
    cmd = [sys.executable, "-m", "silas_exp", "-m", "scorer=heuristic,weights", "repeats=2",
           "suite=smoke", "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2",
           f"tracking.background={str(background).lower()}", f"paths.root={tmp_path}",
           f"paths.suites={REPO / 'suites'}", f"hydra.sweep.dir={tmp_path / 'ms'}"]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "RAY_DEDUP_LOGS": "0"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Ray Launcher is launching 4 jobs" in proc.stdout + proc.stderr
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    assert not client.search_runs([client.get_experiment_by_name("Default").experiment_id])
    runs = client.search_runs([client.get_experiment_by_name("silas-smoke").experiment_id])
    parents = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("silas.kind") != "sweep"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(children) == 4 and all(r.info.status == "FINISHED" for r in children)
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
    for r in children:
        assert "context.retrieval_relevance" in r.data.metrics and 0 < len(r.data.params) <= 40
    # jobs ran in Ray worker processes, not in the launching process
    assert "(_run_job pid=" in proc.stdout + proc.stderr


def test_ray_runs_a_sequential_study_block_by_block(tmp_path):
    """Sequential over cases: each block is a round the Ray launcher runs."""
    cmd = [sys.executable, "-m", "silas_exp", "-m", "scorer=heuristic,weights", "repeats=1",
           "cases_per_block=4", "suite.max_cases=8", "hydra/launcher=ray",
           "+hydra.launcher.ray.init.num_cpus=2", "tracking=none", f"paths.root={tmp_path}",
           f"paths.suites={REPO / 'suites'}", f"hydra.sweep.dir={tmp_path / 'ms'}"]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "RAY_DEDUP_LOGS": "0"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = json.loads((tmp_path / "ms" / "adaptive.json").read_text())
    assert state["unit"] == "block" and state["pool_cases"] == 8
    blocks = {json.loads(p.read_text())["block"] for p in (tmp_path / "ms").glob("*/result.json")}
    assert 0 in blocks and "scorer=weights" in state["closed"]
