"""Built-in suites resolve from where silas_exp is installed, whatever the
working directory; a suite path of one's own resolves from the working
directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.data.suites.loader import load_suite
from tests.conftest import REPO


def test_builtin_suites_resolve_from_the_install_whatever_the_cwd(tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SILAS_EXP_ROOT", raising=False)
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)  # no earlier in-process run's cwd
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        for suite, folder in (("smoke", "suites/smoke"), ("default", "suites/default"),
                              ("probes", "probes/default")):
            cfg = validate(OmegaConf.to_container(compose("config", [f"suite={suite}"]),
                                                  resolve=True))
            assert Path(cfg.suite.path) == REPO / folder
            assert Path(cfg.paths.root) == tmp_path  # mlruns/ and .cache/ stay in the cwd


def test_a_suite_path_of_ones_own_resolves_from_the_cwd(tmp_path, monkeypatch):
    shutil.copytree(REPO / "suites" / "smoke", tmp_path / "mine")
    monkeypatch.chdir(tmp_path)
    assert load_suite("mine").root == Path("mine")


def test_a_run_from_another_folder_finds_the_builtin_suite(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HYDRA_FULL_ERROR", "SILAS_EXP_ROOT")}
    done = subprocess.run([sys.executable, "-m", "silas_exp", "suite=smoke", "tracking=none"],
                          cwd=tmp_path, env={**env, "MLFLOW_DISABLE_TELEMETRY": "true"},
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[run] scorer=heuristic: 2 cases" in done.stdout
    assert list((tmp_path / "outputs").glob("*/*/result.json"))
