"""Team tracking: PostgreSQL + ``mlflow server`` on 127.0.0.1, a parallel sweep
against it, and every run and metric read back. Marker ``postgres``: not in
the default run (needs Debian's postgresql package and psycopg2-binary)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from ..conftest import REPO
from ._servers import mlflow_server, postgres

pytestmark = pytest.mark.postgres


@pytest.fixture
def tracking_server(tmp_path):
    with postgres("mlflow") as pg, mlflow_server(
            ["--backend-store-uri", f"postgresql+psycopg2://{pg}/mlflow",
             "--artifacts-destination", str(tmp_path / "artifacts"), "--workers", "2"],
            tmp_path / "server.log") as uri:
        yield uri


@pytest.mark.timeout(1200)  # minutes when other work keeps a 2-core machine busy
@pytest.mark.parametrize("background", [True, False], ids=["uploader", "workers-write"])
def test_parallel_sweep_against_postgres_server(tracking_server, tmp_path, background):
    proc = subprocess.run(
        [sys.executable, "-m", "silas_exp", "-m", "scorer=heuristic,weights", "repeats=2",
         "suite=smoke", f"paths.root={tmp_path}", f"paths.suites={REPO / 'suites'}",
         f"hydra.sweep.dir={tmp_path / 'ms'}", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
         f"tracking.uri={tracking_server}", "tracking.artifact_root=null",
         f"tracking.background={str(background).lower()}"],
        cwd=REPO, env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}, capture_output=True,
        text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(tracking_server)
    assert not client.search_runs([client.get_experiment_by_name("Default").experiment_id])
    runs = client.search_runs([client.get_experiment_by_name("silas-smoke").experiment_id])
    children = [r for r in runs if r.data.tags.get("silas.kind") != "sweep"]
    assert len(runs) == 5 and len(children) == 4
    assert all(r.info.status == "FINISHED" for r in runs)
    exp = client.get_experiment_by_name("silas-smoke")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    for r in children:
        assert len(r.data.metrics) > 30 and "context.retrieval_relevance" in r.data.metrics
        assert {a.path for a in client.list_artifacts(r.info.run_id)} >= {"result.json", "cases.json"}
        assert 0 < len(r.data.params) <= 40 and r.data.tags["mlflow.source.git.commit"]
        assert [d.dataset.name for d in r.inputs.dataset_inputs] == ["smoke"]
        assert r.info.end_time - r.info.start_time < 60_000  # the job's own times
