"""Shared fixtures: compose the real configs; run the real CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


@pytest.fixture(autouse=True)
def _tests_own_their_stores(monkeypatch):
    """An exported MLFLOW_TRACKING_URI / MLFLOW_EXPERIMENT_NAME, or one that
    mlflow.set_tracking_uri exports while a test runs, never reaches another
    test's runs (set first, so that teardown removes whatever a test left)."""
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def isolated_overrides(tmp: Path) -> list[str]:
    """Keep stores, caches and outputs of a test inside its tmp folder."""
    return [
        f"paths.suites={REPO / 'suites'}",
        f"paths.mlruns={tmp / 'mlruns'}",
        f"paths.cache={tmp / 'cache'}",
        f"hydra.run.dir={tmp / 'run'}",
        f"hydra.sweep.dir={tmp / 'multirun'}",
    ]


@pytest.fixture
def compose(tmp_path):
    """compose("scorer=weights", ...) -> validated ExperimentConfig-ready DictConfig."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    import silas_exp  # noqa: F401  (registers resolvers)

    def _compose(*overrides: str):
        paths = [o for o in isolated_overrides(tmp_path) if not o.startswith("hydra.")]
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return hydra_compose(config_name="config", overrides=[*paths, *overrides])

    return _compose


@pytest.fixture
def cli(tmp_path):
    """Run ``python -m silas_exp`` with isolated paths; returns CompletedProcess."""

    def _run(*args: str, isolate: bool = True, timeout: float = 240) -> subprocess.CompletedProcess:
        extra = isolated_overrides(tmp_path) if isolate else []
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "HYDRA_FULL_ERROR": "0"}
        env.pop("HYDRA_FULL_ERROR")
        return subprocess.run(
            [sys.executable, "-m", "silas_exp", *args, *extra], cwd=REPO, env=env,
            capture_output=True, text=True, timeout=timeout,
        )

    return _run
