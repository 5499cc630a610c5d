"""bench/bench_tune.py keeps working (marker ``optuna``: it runs real Optuna
studies): --quick writes both scenarios with finite figures, and the
certification it measures never ships a config worse than the margin more
often than the rule allows by a wide mark."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from ..conftest import REPO

pytestmark = pytest.mark.optuna


def test_bench_tune_quick(tmp_path):
    env = {**os.environ, "SILAS_BENCH_RESULTS": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_tune.py"), "--quick"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "tune.json").read_text())
    assert set(result["scenarios"]) == {"equal", "at_margin"}
    for scenario in result["scenarios"].values():
        assert scenario["studies"] == 20
        assert all(math.isfinite(v) for v in scenario["mean"].values())
    assert result["scenarios"]["at_margin"]["ship_rate"] <= 0.15  # 3 of 20: far off 2.5 %
