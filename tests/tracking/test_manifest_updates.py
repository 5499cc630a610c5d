"""The sweep manifest has two writers: the launching process (its sweeper, a
tuning study) and the background uploader. Each read-change-write holds the
manifest's lock, so neither writes back a copy read before the other's change."""

from __future__ import annotations

import multiprocessing

from silas_exp.records import (
    SweepManifest,
    exclusive,
    read_manifest,
    update_manifest,
    write_manifest,
)
from silas_exp.tracking import background
from silas_exp.tracking.store import MlflowStore


def _manifest(tmp_path) -> SweepManifest:
    return SweepManifest(sweep_id="s1", experiment_name="silas-manifest", swept_keys=["scorer"],
                         tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
                         artifact_root=str(tmp_path / "artifacts"), background=True)


def test_the_uploader_keeps_what_the_sweep_wrote_while_it_created_the_store(tmp_path, monkeypatch):
    """The uploader reads sweep.json, spends seconds creating the store, then
    records its parent run: a tuning study's swept keys, written meanwhile,
    stay (they name its jobs' variants)."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_manifest(sweep, _manifest(tmp_path))
    create = MlflowStore.ensure_store

    def create_while_the_sweep_plans(self):
        create(self)
        update_manifest(sweep, lambda m: setattr(m, "swept_keys", ["++scorer.l2", "suite.split"]))

    monkeypatch.setattr(MlflowStore, "ensure_store", create_while_the_sweep_plans)
    up = background.Uploader(sweep)
    got = read_manifest(sweep)
    assert got.parent_run_id and got.parent_run_id == up.info.parent_run_id
    assert got.experiment_id == up.info.experiment_id
    assert got.swept_keys == ["++scorer.l2", "suite.split"]


def _grow_jobs(folder) -> None:
    update_manifest(folder, lambda m: setattr(m, "jobs_total", (m.jobs_total or 0) + 1))


def test_an_update_waits_for_the_lock_and_applies_to_the_latest_manifest(tmp_path):
    write_manifest(tmp_path, _manifest(tmp_path))
    ctx = multiprocessing.get_context("fork")
    with exclusive(tmp_path / "sweep.json"):  # another writer in the middle of its change
        other = ctx.Process(target=_grow_jobs, args=(tmp_path,))
        other.start()
        other.join(timeout=0.5)
        assert other.is_alive()  # waiting for the lock, nothing written yet
        assert read_manifest(tmp_path).jobs_total is None
        write_manifest(tmp_path, _manifest(tmp_path).model_copy(update={"jobs_total": 10}))
    other.join(timeout=10)
    assert other.exitcode == 0
    assert read_manifest(tmp_path).jobs_total == 11  # on top of the change it waited for
    assert update_manifest(tmp_path / "nowhere", _grow_jobs) is None
