"""Tracking tests own their stores: an exported MLFLOW_TRACKING_URI or
MLFLOW_EXPERIMENT_NAME must not send their runs elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ..conftest import REPO, isolated_overrides

CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "HYDRA_FULL_ERROR")}


@pytest.fixture(autouse=True)
def _no_mlflow_env(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)


def run_silas(tmp, *args: str, env: dict | None = None, module: str = "silas_exp",
              isolate: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m silas_exp`` (or ``silas_exp.cli.main``) with the tmp folder's paths."""
    extra = isolated_overrides(tmp) if isolate and module == "silas_exp" else []
    return subprocess.run([sys.executable, "-m", module, *args, *extra], cwd=REPO,
                          env={**CLEAN_ENV, "MLFLOW_DISABLE_TELEMETRY": "true", **(env or {})},
                          capture_output=True, text=True, timeout=timeout)
