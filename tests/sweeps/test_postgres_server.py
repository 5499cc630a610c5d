"""Team tracking: PostgreSQL + ``mlflow server`` on 127.0.0.1, a parallel sweep
against it, and every run and metric read back. Marker ``postgres``: not in
the default run (needs Debian's postgresql package and psycopg2-binary)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ..conftest import REPO

pytestmark = pytest.mark.postgres


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@pytest.fixture
def tracking_server(tmp_path):
    bindir = _pg_bin()
    if bindir is None or shutil.which("runuser") is None:
        missing = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("SILAS_REQUIRE_POSTGRES"):  # CI: a skip would hide the test
            pytest.fail(missing)
        pytest.skip(missing)
    if os.environ.get("SILAS_REQUIRE_POSTGRES"):
        import psycopg2  # noqa: F401
    pytest.importorskip("psycopg2")
    # the server runs as the postgres user, which cannot enter pytest's 0700 tmp folders
    base = Path(tempfile.mkdtemp(prefix="silas-pg-"))
    os.chmod(base, 0o755)
    data, sock = base / "pg", base / "sock"
    sock.mkdir()
    data.mkdir()
    shutil.chown(data, "postgres")
    shutil.chown(sock, "postgres")
    as_pg = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_pg, str(bindir / "initdb"), "-D", str(data), "-A", "trust"], check=True,
                   capture_output=True)
    pg_port = _free_port()
    subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(data / "log"),
                    "-o", f"-p {pg_port} -k {sock} -h 127.0.0.1", "start"], check=True,
                   capture_output=True)
    server = None
    try:
        subprocess.run([*as_pg, str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(pg_port),
                        "mlflow"], check=True, capture_output=True)
        port = _free_port()
        uri = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
             "--backend-store-uri", f"postgresql+psycopg2://postgres@127.0.0.1:{pg_port}/mlflow",
             "--artifacts-destination", str(tmp_path / "artifacts"), "--workers", "2"],
            env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}, stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "server.log", "w"))  # noqa: SIM115
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(uri + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert time.time() < deadline, (tmp_path / "server.log").read_text()[-2000:]
            time.sleep(0.5)
        yield uri
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


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
