"""Sweeps that survive: parallel workers on one SQLite store, and an
interrupted sweep resumed to the same result as an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ..conftest import REPO

ENV = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}


def _sweep(tmp: Path, sweep_dir: str, *args: str, background: bool = True) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "silas_exp", "-m", *args, f"paths.root={tmp}",
           f"paths.suites={REPO / 'suites'}", f"hydra.sweep.dir={tmp / sweep_dir}"]
    if not background:
        cmd.append("tracking.background=false")
    return subprocess.Popen(cmd, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _runs(tmp: Path):
    client = MlflowClient(f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}")
    out = {}
    for exp in client.search_experiments():
        out[exp.name] = client.search_runs([exp.experiment_id], max_results=500)
    return out


@pytest.mark.parametrize("background", [True, False], ids=["uploader", "workers-write"])
@pytest.mark.parametrize("trial", range(2))
def test_eight_parallel_jobs_into_fresh_sqlite_store(tmp_path, background, trial):
    proc = _sweep(tmp_path, "ms", "scorer=heuristic,weights,online,random", "repeats=2",
                  "suite=smoke", "hydra/launcher=joblib", "hydra.launcher.n_jobs=4",
                  background=background)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    runs = _runs(tmp_path)
    assert [r for r in runs.get("Default", [])] == []  # nothing filed under the wrong experiment
    smoke = runs["silas-smoke"]
    children = [r for r in smoke if r.data.tags.get("silas.kind") != "sweep"]
    assert len(children) == 8 and all(r.info.status == "FINISHED" for r in smoke)
    for r in children:
        assert 0 < len(r.data.params) <= 40 and "context.retrieval_relevance" in r.data.metrics
        assert "llm.calls" in r.data.metrics and r.data.tags["silas.sweep_id"]
    assert {(r.data.tags["silas.variant"], r.data.tags["silas.repeat"]) for r in children} == {
        (f"scorer={s}", str(rep)) for s in ("heuristic", "weights", "online", "random")
        for rep in (0, 1)}


def _uploader_alive(sweep_dir: Path) -> bool:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"silas_exp.tracking.background" in args and str(sweep_dir).encode() in args:
            return True
    return False


def _ablation_body(md: str) -> list[str]:
    return [line for line in md.splitlines()
            if not line.startswith(("# Ablation", "python -m")) and ".png" not in line]


def test_killed_sweep_resumes_to_the_uninterrupted_result(tmp_path):
    args = ("scorer=heuristic,weights", "repeats=3", "suite=smoke", "llm.simulated_latency_ms=15")
    full_root, cut_root = tmp_path / "full", tmp_path / "cut"
    full = _sweep(full_root, "ms", *args)
    _, err = full.communicate(timeout=300)
    assert full.returncode == 0, err[-2000:]

    cut = _sweep(cut_root, "ms1", *args)
    deadline = time.time() + 120
    while len(list((cut_root / "ms1").glob("*/result.json"))) < 2 and time.time() < deadline:
        time.sleep(0.05)
    cut.send_signal(signal.SIGKILL)  # no chance to clean up
    cut.communicate(timeout=30)
    done_before = len(list((cut_root / "ms1").glob("*/result.json")))
    assert 2 <= done_before < 6
    # the orphaned uploader notices its parent died, closes the runs and exits
    deadline = time.time() + 60
    while _uploader_alive(cut_root / "ms1"):
        assert time.time() < deadline, "the uploader did not exit after the sweep was killed"
        time.sleep(0.2)
    assert not [r for r in _runs(cut_root)["silas-smoke"] if r.info.status == "RUNNING"]

    resumed = _sweep(cut_root, "ms2", *args, "resume=true")
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err[-3000:]
    assert "Resuming sweep" in out and out.count("skipped") >= 2
    runs = _runs(cut_root)["silas-smoke"]
    assert not [r for r in runs if r.info.status == "RUNNING"]
    assert {r.info.status for r in runs} <= {"FINISHED", "KILLED"}
    finished = {(r.data.tags["silas.variant"], r.data.tags["silas.repeat"]) for r in runs
                if r.info.status == "FINISHED" and r.data.tags.get("silas.kind") != "sweep"}
    assert len(finished) == 6  # every job finished exactly once across the two invocations
    parents = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"  # the same sweep, reopened
    expected = _ablation_body((full_root / "ms" / "ablation.md").read_text())
    assert _ablation_body((cut_root / "ms2" / "ablation.md").read_text()) == expected
    sweep_id = json.loads((cut_root / "ms2" / "sweep.json").read_text())["sweep_id"]
    from_mlflow = subprocess.run(
        [sys.executable, "-m", "silas_exp.cli.main", "ablation", sweep_id, "--out", str(tmp_path / "a")],
        cwd=cut_root, env={**ENV, "SILAS_EXP_ROOT": str(cut_root)}, capture_output=True, text=True)
    assert from_mlflow.returncode == 0, from_mlflow.stderr
    assert _ablation_body((tmp_path / "a" / "ablation.md").read_text()) == expected
