"""experiment=tune fails before any job, with one paragraph and exit 2, when
Optuna is missing (runs in every environment) or the study is misdeclared
(marker ``optuna``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ..conftest import REPO


def tune(tmp_path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "silas_exp", "-m", "experiment=tune", "suite=smoke",
           "tracking=none", *args, f"paths.root={tmp_path}", f"paths.suites={REPO / 'suites'}",
           f"hydra.sweep.dir={tmp_path / 'study'}"]
    return subprocess.run(cmd, cwd=REPO, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=120)


def test_missing_optuna_says_how_to_install_it(tmp_path):
    fake = tmp_path / "shadow" / "optuna"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('optuna is not installed here')\n")
    proc = tune(tmp_path, env={"PYTHONPATH": str(fake.parent)})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "pip install -e '.[optuna]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "study" / "0").exists()  # no job ran


@pytest.mark.optuna
@pytest.mark.parametrize("override,message", [
    ('+tune.space.weights.repeat="range(0,3)"', "never a search dimension"),
    ("scorer=online", "has no search space"),
    ("tune.objectives=[tier2.proposals]", "no direction"),
    ("repeats=auto", "fixed number of repeats"),
])
def test_a_misdeclared_study_is_bad_input(tmp_path, override, message):
    pytest.importorskip("optuna", minversion="4")
    proc = tune(tmp_path, override)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
