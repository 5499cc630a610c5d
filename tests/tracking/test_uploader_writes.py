"""What the background uploader writes, and how few writes it takes.

A job that ended before the uploader saw it (the uploader lags behind the jobs)
is logged with its params, metrics and tags in one batch; the store reads back
exactly as when the uploader opened the job's run while it ran and logged its
outcome later. A new SQLite store's schema is built while the sweep starts,
before its first job, and the store is made from it."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from mlflow.store.db.utils import _get_latest_schema_revision

from silas_exp.records import RESULT_FILE, read_manifest
from silas_exp.tracking import background
from silas_exp.tracking import store as store_module
from silas_exp.tracking.store import MlflowStore

from ..conftest import REPO
from .conftest import run_silas

sys.path.insert(0, str(REPO / "scripts"))
import compare_stores  # noqa: E402


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory):
    """A finished two-job sweep folder (its jobs wrote job.json and result.json)."""
    tmp = tmp_path_factory.mktemp("uploaded")
    proc = run_silas(tmp, "-m", "scorer=heuristic,weights", "suite=smoke", "repeats=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp / "multirun"


def _copy(sweep_folder, dst):
    """The sweep folder, not yet uploaded, pointing at a new store in ``dst``."""
    shutil.copytree(sweep_folder, dst / "multirun")
    for tracked in (dst / "multirun").glob("*/" + background.TRACKED_FILE):
        tracked.unlink()
    manifest = json.loads((dst / "multirun" / "sweep.json").read_text())
    manifest.update(experiment_id=None, parent_run_id=None,
                    tracking_uri=f"sqlite:///{dst}/mlflow.db", artifact_root=str(dst / "artifacts"))
    (dst / "multirun" / "sweep.json").write_text(json.dumps(manifest))
    return dst / "multirun"


def _jobs(sweep):
    return sorted(d for d in sweep.iterdir() if d.is_dir() and (d / "job.json").is_file())


def _batches(monkeypatch):
    calls: list[str] = []
    log = MlflowStore.log

    def counted(self, run_id, *args, **kwargs):
        calls.append(run_id)
        return log(self, run_id, *args, **kwargs)

    monkeypatch.setattr(MlflowStore, "log", counted)
    return calls


def test_a_job_that_ended_before_the_uploader_saw_it_takes_one_batch(sweep_folder, tmp_path,
                                                                      monkeypatch):
    sweep = _copy(sweep_folder, tmp_path)
    up = background.Uploader(sweep)
    calls = _batches(monkeypatch)
    job = _jobs(sweep)[0]
    assert up.step(job)
    run_id = json.loads((job / background.TRACKED_FILE).read_text())["run_id"]
    assert calls.count(run_id) == 1  # params, metrics and tags together
    run = up.store.get_run(run_id)
    assert run.data.params and run.data.metrics and "silas.pass_rate" in run.data.tags
    assert run.data.tags["mlflow.note.content"].split("\n\n")[1].startswith("Result:")


def test_lagging_and_live_uploads_read_back_the_same(sweep_folder, tmp_path):
    lagging = _copy(sweep_folder, tmp_path / "lagging")
    up = background.Uploader(lagging)
    assert all(up.step(job) for job in _jobs(lagging))
    up.finish(background.read_sweep_end(lagging))

    live = _copy(sweep_folder, tmp_path / "live")
    up = background.Uploader(live)
    for job in _jobs(live):  # opened while the job runs, its outcome logged when it ends
        (job / RESULT_FILE).rename(job / "held.json")
        assert not up.step(job)
        (job / "held.json").rename(job / RESULT_FILE)
        assert up.step(job)
    up.finish(background.read_sweep_end(live))

    a = compare_stores.read(f"sqlite:///{tmp_path}/lagging/mlflow.db", "silas-smoke", contents=True)
    b = compare_stores.read(f"sqlite:///{tmp_path}/live/mlflow.db", "silas-smoke", contents=True)
    assert len(a) == 3 and all(run["metrics"] for run in a.values())
    assert compare_stores.diff(a, b) == []


def test_the_schema_is_built_before_the_first_job(tmp_path, monkeypatch):
    """While the uploader waits for the first job, the new store's schema is
    ready (outside the store's folder); the store is then made from it,
    without building the schema again."""
    from silas_exp.records import write_manifest
    from tests.tracking.test_manifest_updates import _manifest

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_manifest(sweep, _manifest(tmp_path))
    built = []
    build = store_module.build_sqlite_schema

    def counted(path):
        built.append(path)
        return build(path)

    monkeypatch.setattr(store_module, "build_sqlite_schema", counted)
    seen = {}

    def first_job(sweep_dir, parent_pid, poll_s=0.1):
        seen["built"] = list(built)
        seen["store folder"] = sorted(p.name for p in tmp_path.iterdir())
        return True

    monkeypatch.setattr(background, "first_job_or_end", first_job)
    monkeypatch.setattr(background.Uploader, "drain", lambda self: 0)
    monkeypatch.setattr(background, "read_sweep_end", lambda d: background.SweepEnd(status="FINISHED"))
    assert background.run(sweep, None, poll_s=0.01) == 0
    assert len(seen["built"]) == 1 and seen["built"][0].parent != tmp_path
    assert seen["store folder"] == ["sweep"]  # nothing in MLflow before the first job
    assert built == seen["built"]  # the store came from it: no second build
    assert not seen["built"][0].exists()  # the temporary schema is gone
    import sqlalchemy
    from mlflow.store.db.utils import _get_schema_version

    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path}/mlflow.db")
    assert _get_schema_version(engine) == _get_latest_schema_revision()
    engine.dispose()
    manifest = read_manifest(sweep)
    assert manifest is not None and manifest.parent_run_id


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness is Linux's")
def test_the_upload_is_niced_until_the_sweep_ends_then_not(tmp_path, monkeypatch):
    """Beside running jobs the upload is niced (the jobs come first); once the
    sweep has ended, the launching process only waits for it, and the rest is
    logged at the uploader's own priority."""
    import os
    import threading

    from silas_exp.records import SweepEnd, write_manifest, write_sweep_end
    from tests.tracking.test_manifest_updates import _manifest

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_manifest(sweep, _manifest(tmp_path))
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[tuple[str, int]] = []

    def nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def drain(self):
        seen.append(("drain", nice()))
        if len(seen) == 1:  # the last job ends, and the sweep with it
            write_sweep_end(sweep, SweepEnd(status="FINISHED", metrics={"sweep.jobs": 0.0}))
        return 0

    finish = background.Uploader.finish

    def finishing(self, end):
        seen.append(("finish", nice()))
        finish(self, end)

    monkeypatch.setattr(background, "first_job_or_end", lambda *a, **k: True)
    monkeypatch.setattr(background.Uploader, "drain", drain)
    monkeypatch.setattr(background.Uploader, "finish", finishing)
    assert background.run(sweep, os.getppid(), poll_s=0.01, niced=True) == 0
    assert seen[0] == ("drain", own + background.UPLOADER_NICENESS)
    assert seen[-1] == ("finish", own) and ("drain", own) in seen
    assert nice() == own
