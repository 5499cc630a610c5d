"""The background uploader writes nothing to MLflow until the sweep's first job
has started (or the sweep has ended): a sweep the pre-flight refuses gives its
folder back, and leaves no store, experiment or run behind, however long the
pre-flight took."""

from __future__ import annotations

import os
import threading
import time

from silas_exp.records import SweepEnd, write_manifest, write_sweep_end
from silas_exp.tracking import background
from tests.tracking.test_manifest_updates import _manifest


def _uploading(sweep, result: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: result.append(
        background.run(sweep, os.getppid(), poll_s=0.02)), daemon=True)
    thread.start()
    return thread


def test_a_refused_sweep_leaves_nothing_in_mlflow(tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_manifest(sweep, _manifest(tmp_path))
    result: list = []
    thread = _uploading(sweep, result)
    time.sleep(1.0)  # a pre-flight that takes a while
    assert not (tmp_path / "mlflow.db").exists()
    (sweep / "sweep.json").unlink()  # refused before its first job: the folder is given back
    thread.join(timeout=30)
    assert result == [0] and not (tmp_path / "mlflow.db").exists()


def test_the_store_is_made_once_the_sweep_ends(tmp_path):
    """A sweep whose jobs all failed before they started still gets its parent run."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_manifest(sweep, _manifest(tmp_path))
    result: list = []
    thread = _uploading(sweep, result)
    time.sleep(0.5)
    write_sweep_end(sweep, SweepEnd(status="FAILED", metrics={"sweep.jobs": 0.0}))
    thread.join(timeout=120)
    assert result == [0] and (tmp_path / "mlflow.db").exists()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("silas-manifest").experiment_id])
    assert [r.info.status for r in runs] == ["FAILED"]
