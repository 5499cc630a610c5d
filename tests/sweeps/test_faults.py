"""Faults: a dead tracking store fails before any work; results survive a
tracking failure and can be uploaded later; fail-fast stops a sweep."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from silas_exp.errors import TrackingError
from silas_exp.tracking.preflight import preflight
from tests.plugins.test_declared_once import _env as plugin_env
from tests.plugins.test_example_plugin import fake_install

from ..conftest import REPO

ENV = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}


def _run(tmp, *args, env=None):
    return subprocess.run([sys.executable, "-m", "silas_exp", *args, f"paths.root={tmp}",
                           f"paths.suites={REPO / 'suites'}", "suite=smoke", "repeats=1",
                           f"hydra.sweep.dir={tmp / 'ms'}", f"hydra.run.dir={tmp / 'run'}"],
                          cwd=REPO, env=env or ENV, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_store_is_refused_before_work(tmp_path):
    (tmp_path / "mlruns").mkdir()
    os.chmod(tmp_path / "mlruns", 0o500)
    with pytest.raises(TrackingError, match="not writable"):
        preflight(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")


def test_full_disk_is_refused_before_work(tmp_path, monkeypatch):
    import shutil

    from silas_exp.tracking import preflight as pf

    monkeypatch.setattr(pf.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10, 9, 1))
    with pytest.raises(TrackingError, match="MiB free"):
        preflight(f"sqlite:///{tmp_path / 'mlflow.db'}")


def test_unreachable_server_fails_fast_with_exit_2(tmp_path):
    proc = _run(tmp_path, "-m", "scorer=heuristic,weights", "tracking.uri=http://127.0.0.1:9")
    assert proc.returncode == 2
    assert "unreachable" in proc.stderr and "tracking=none" in proc.stderr
    assert not list((tmp_path / "ms").glob("*/result.json"))  # nothing was run


def test_results_survive_a_tracking_failure_and_upload_later(tmp_path):
    # an artifact root that cannot be created makes every upload fail after the jobs ran
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    proc = _run(tmp_path, "-m", "scorer=heuristic,weights", f"tracking.artifact_root={blocker}/x")
    assert "tracking failed" in proc.stderr and "silas-exp upload" in proc.stderr
    results = list((tmp_path / "ms").glob("*/result.json"))
    assert len(results) == 2 and all(json.loads(p.read_text())["status"] == "finished" for p in results)
    # fix the destination, then upload what was computed
    info = json.loads((tmp_path / "ms" / "sweep.json").read_text())
    info.update(artifact_root=str(tmp_path / "artifacts2"), experiment_id=None, parent_run_id=None)
    (tmp_path / "ms" / "sweep.json").write_text(json.dumps(info))
    up = subprocess.run([sys.executable, "-m", "silas_exp.cli.main", "upload", str(tmp_path / "ms"),
                         "--tracking-uri", f"sqlite:///{tmp_path / 'late.db'}"], cwd=tmp_path, env=ENV,
                        capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    client = MlflowClient(f"sqlite:///{tmp_path / 'late.db'}")
    runs = client.search_runs([client.get_experiment_by_name("silas-smoke").experiment_id])
    assert len(runs) == 3 and all(r.info.status == "FINISHED" for r in runs)


def test_fail_fast_stops_the_sweep(tmp_path):
    # jobs that fail from code: a plug-in scorer whose calibration raises
    site = fake_install(tmp_path / "site", "unfit-plugin", "0.1", "silas_exp.scorers",
                        "unfit = tests.plugins.kinds:UNFIT")
    env = plugin_env(site)
    proc = _run(tmp_path, "-m", "scorer=unfit,heuristic", "fail_fast=true", "tracking=none",
                "hydra.launcher.n_jobs=1", env=env)
    assert proc.returncode == 1
    assert len(list((tmp_path / "ms").glob("*/result.json"))) == 1  # the heuristic job never ran
    # two at a time (4 jobs: unfit, then heuristic, seeds 0 and 1): the two
    # unfit jobs start together and fail, no job starts after them
    both = _run(tmp_path / "two", "-m", "scorer=unfit,heuristic", "seed=0,1", "fail_fast=true",
                "tracking=none", "hydra.launcher.n_jobs=2", env=env)
    assert both.returncode == 1
    assert sorted(p.parent.name for p in (tmp_path / "two" / "ms").glob("*/result.json")) == ["0", "1"]


def test_a_broken_sweep_summary_fails_the_command_and_closes_every_run(tmp_path):
    # Hydra only warns when a callback raises; the sweep must still exit 1 and
    # leave no run RUNNING. summary.md being a folder makes writing it fail.
    (tmp_path / "ms" / "summary.md").mkdir(parents=True)
    proc = _run(tmp_path, "-m", "scorer=heuristic,weights")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "end-of-sweep summary failed" in proc.stderr and "IsADirectoryError" in proc.stderr
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("silas-smoke").experiment_id])
    status = {r.info.run_name: r.info.status for r in runs}
    assert len(runs) == 3, status
    assert status.pop(next(n for n in status if n.startswith("sweep-"))) == "FAILED"
    assert set(status.values()) == {"FINISHED"}
