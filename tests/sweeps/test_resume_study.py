"""Interrupted, resumed or run again, a sweep is the same study, and a sweep
folder holds one sweep: a resumed sequential study replays its looks as the
uninterrupted one took them, a second sweep into an occupied folder is
refused before any job, and resume=true on a finished sweep prints its result
and runs nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from silas_exp.analysis.data import load_sweep_dir
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.errors import ConfigError
from silas_exp.records import SweepManifest, read_manifest
from silas_exp.run.sweep_folder import claim
from silas_exp.study.looks import review
from silas_exp.study.state import AdaptiveState

from ..conftest import REPO, isolated_overrides

STUDY = ("-m", "scorer=weights,online", "cases_per_block=6", "suite.max_cases=18",
         "tracking=none")


ENV = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}


def _sweep(tmp: Path, folder: Path, *extra: str) -> subprocess.CompletedProcess:
    """The study's command (paths under ``tmp``, the same for every invocation,
    so that a resume has the same command) into ``folder``."""
    paths = [o for o in isolated_overrides(tmp) if not o.startswith("hydra.sweep.dir=")]
    return subprocess.run([sys.executable, "-m", "silas_exp", *STUDY, *extra, *paths,
                           f"hydra.sweep.dir={folder}"],
                          cwd=REPO, capture_output=True, text=True, timeout=300, env=ENV)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """One uninterrupted sequential study (3 blocks of 6 cases, looks after 1, 2, 3)."""
    tmp = tmp_path_factory.mktemp("study")
    res = _sweep(tmp, tmp / "multirun")
    assert res.returncode == 0, res.stderr[-3000:]
    return tmp / "multirun"


def _compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "compare_sweeps.py"), str(a),
                           str(b)], capture_output=True, text=True, timeout=120)


def test_a_look_reads_only_the_rounds_it_had(finished, tmp_path):
    # a folder that holds every block (as a resumed study's does) and one that holds
    # only block 0 give the look after block 1 the same data, hence the same stops
    full, trimmed = tmp_path / "all", tmp_path / "trimmed"
    shutil.copytree(finished, full)
    shutil.copytree(finished, trimmed)
    for job in trimmed.glob("*/result.json"):
        if json.loads(job.read_text())["block"] > 0:
            shutil.rmtree(job.parent)
    seed = AdaptiveState.read(finished).seed
    settings = AnalysisSettings()
    plan = AdaptiveState.plan_blocks(settings, 3, 6, 18, seed)
    cases = {name: {(j.variant, c) for j in load_sweep_dir(folder, keep=plan.rounds_seen(1)).jobs
                    for c in j.cases} for name, folder in (("all", full), ("trimmed", trimmed))}
    assert cases["all"] == cases["trimmed"] and len(cases["all"]) == 3 * 6  # 3 arms, block 0
    seen = {name: review(folder, settings, AdaptiveState.plan_blocks(settings, 3, 6, 18, seed), 1,
                         REPO / "suites" / "default") for name, folder in (("all", full),
                                                                           ("trimmed", trimmed))}
    assert seen["all"].closed == seen["trimmed"].closed and seen["all"].looked == [1]
    assert AdaptiveState.read(full).looked == [1]  # each look recorded as it is taken


def test_resume_from_the_middle_of_a_sequential_study(finished, tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(finished, cut)
    # as it was when killed after the first look: every job folder there, the end never reached
    state = json.loads((cut / "adaptive.json").read_text())
    state["looked"] = [1]
    state["closed"] = {v: c for v, c in state["closed"].items() if c["round"] <= 1}
    (cut / "adaptive.json").write_text(json.dumps(state))
    for name in ("sweep.done", "ablation.md", "ablation.html", "summary.md"):
        (cut / name).unlink()
    manifest = json.loads((cut / "sweep.json").read_text())
    manifest["ended_at"] = None
    (cut / "sweep.json").write_text(json.dumps(manifest))

    res = _sweep(finished.parent, cut, "resume=true")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "the look after block 1 was taken before" in res.stderr + res.stdout
    jobs = len(list(finished.glob("*/result.json")))
    assert res.stdout.count("already finished") == jobs  # every job kept, none run again
    assert json.loads((cut / "adaptive.json").read_text())["looked"] == [1, 2, 3]
    same = _compare(finished, cut)
    assert same.returncode == 0 and "IDENTICAL" in same.stdout, same.stdout[-3000:]


def test_a_second_sweep_into_an_occupied_folder_is_refused(finished, tmp_path):
    folder = tmp_path / "occupied"
    shutil.copytree(finished, folder)
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    for extra in ((), ("scorer=weights",)):  # the same command again, and another one
        res = _sweep(finished.parent, folder, *extra)
        assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
        sweep_id = read_manifest(folder).sweep_id
        assert str(folder) in res.stderr and sweep_id in res.stderr
        assert "hydra.sweep.dir=<new folder>" in res.stderr and "[job" not in res.stdout
    assert "add resume=true" in _sweep(finished.parent, folder).stderr  # the same command: how to continue it
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()} == before


def test_resume_on_a_finished_sweep_prints_its_result_and_runs_nothing(finished, tmp_path):
    folder = tmp_path / "done"
    shutil.copytree(finished, folder)
    res = _sweep(finished.parent, folder, "resume=true")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "has already finished" in res.stdout and "nothing was run" in res.stdout
    assert "[job" not in res.stdout and "scorer=weights" in res.stdout  # its result table
    assert _compare(finished, folder).returncode == 0


def test_two_sweeps_in_the_same_second_take_two_folders(tmp_path):
    folder = tmp_path / "multirun" / "2026-11-27" / "00-05-12"

    def manifest(sweep_id: str) -> SweepManifest:
        return SweepManifest(sweep_id=sweep_id, experiment_name="e", command_key="k")

    first = claim(folder, manifest("a"), resume=False, timestamped=True, tracked=True)
    second = claim(folder, manifest("b"), resume=False, timestamped=True, tracked=True)
    assert first.sweep_dir == folder and first.moved_from is None
    assert second.sweep_dir == folder.with_name("00-05-12-2") and second.moved_from == folder
    assert read_manifest(folder).sweep_id == "a" and read_manifest(second.sweep_dir).sweep_id == "b"
    with pytest.raises(ConfigError, match="already holds sweep a"):  # a folder a user named
        claim(folder, manifest("c"), resume=False, timestamped=False, tracked=True)


def test_a_timestamped_folder_taken_by_another_sweep_moves_to_the_next(cli, tmp_path):
    # ${now:%Y}: a timestamped folder that two sweeps in a row share, like two in one second
    paths = [o for o in isolated_overrides(tmp_path) if not o.startswith("hydra.sweep.dir=")]
    stamp = f"hydra.sweep.dir={tmp_path / 'ms'}/${{now:%Y}}"
    runs = [cli("-m", "scorer=heuristic,weights", "suite=smoke", "tracking=none", *paths, stamp,
                isolate=False) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr[-2000:]
    first, second = sorted((tmp_path / "ms").iterdir())
    assert second.name == f"{first.name}-2" and f"this sweep writes to {second}" in runs[1].stdout
    for folder, run in zip((first, second), runs, strict=True):
        assert len(list(folder.glob("*/result.json"))) == 2 and str(folder) in run.stdout
    assert read_manifest(first).sweep_id != read_manifest(second).sweep_id


def test_resume_with_tracking_none_needs_the_sweeps_folder(tmp_path):
    folder = tmp_path / "nothing-here"
    with pytest.raises(ConfigError, match="hydra.sweep.dir=<its folder>"):
        claim(folder, SweepManifest(sweep_id="a", experiment_name="e", command_key="k"),
              resume=True, timestamped=False, tracked=False)
    assert not folder.exists()
