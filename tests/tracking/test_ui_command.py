"""``silas-exp ui``: the last sweep's store, opened on its parent run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from silas_exp.cli.main import main
from silas_exp.records import SweepManifest, write_manifest
from silas_exp.tracking.ui_app import defaults_script

from .conftest import CLEAN_ENV

VIEW = "?workflowType=machine_learning"


def _sweep(root, when: str, parent: str, uri: str, age: float, fixed: bool = False) -> None:
    folder = root / "multirun" / (when if fixed else f"2026-11-27/{when}")
    folder.mkdir(parents=True)
    write_manifest(folder, SweepManifest(sweep_id=when, experiment_name="silas-default",
                                         experiment_id="3", parent_run_id=parent,
                                         tracking_uri=uri))
    stamp = time.time() - age
    os.utime(folder / "sweep.json", (stamp, stamp))


def test_ui_opens_the_last_sweeps_parent_run(tmp_path, monkeypatch, capsys):
    store = f"sqlite:///{tmp_path}/elsewhere/mlflow.db"
    _sweep(tmp_path, "10-00-00", "oldparent", store, age=600)
    _sweep(tmp_path, "11-00-00", "newparent", store, age=0, fixed=True)  # hydra.sweep.dir
    monkeypatch.setenv("SILAS_EXP_ROOT", str(tmp_path))
    with pytest.raises(SystemExit) as done:
        main(["ui", "--print-only", "--port", "5123"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    # the store the sweep used (not the project's default), and its parent run
    assert f"mlflow ui --backend-store-uri {store} --host 127.0.0.1 --port 5123" in out
    assert f"http://127.0.0.1:5123/#/experiments/3/runs/newparent{VIEW}" in out
    assert "oldparent" not in out


def test_ui_refuses_a_folder_that_is_no_sweep(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["ui", "--print-only", "--sweep", str(tmp_path)])
    assert done.value.code == 2
    assert "no sweep.json" in capsys.readouterr().err


@pytest.mark.slow
def test_ui_serves_the_store_and_finds_the_parent_in_it(tmp_path):
    """With a store given and no sweep folder, the newest sweep parent run in it."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.create_experiment("silas-default")
    parent = client.create_run(exp, tags={"silas.kind": "sweep"}).info.run_id
    client.create_run(exp, tags={"silas.kind": "job"})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "silas_exp.cli.main", "ui", "--tracking-uri",
                             uri, "--port", str(port)], cwd=tmp_path, stdout=subprocess.PIPE,
                            text=True, env={**CLEAN_ENV, "MLFLOW_DISABLE_TELEMETRY": "true"})
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
        assert lines[1].rstrip().endswith(f"/#/experiments/{exp}/runs/{parent}{VIEW}"), lines
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            assert r.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
            page = r.read()  # silas_exp's MLflow app: the UI opens on Model training
        assert defaults_script() in page and b"static-files/static/js/main." in page
    finally:
        proc.terminate()  # stops the UI it started, as Ctrl-C would
        proc.wait(timeout=60)
    with pytest.raises(OSError):  # the UI stopped with the command
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
