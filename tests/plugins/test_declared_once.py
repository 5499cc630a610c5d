"""A kind is declared once: its config option comes from its settings model
(built-in or installed, no YAML), ``silas-exp plugins`` lists and loads every
installed kind, and a misspelt key under a group is answered with the
nearest keys before any job runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from silas_exp.eviction.base import STRATEGIES
from silas_exp.scorers.base import SCORERS
from tests.conftest import REPO, isolated_overrides
from tests.plugins.test_example_plugin import fake_install

KEYWORD = "keyword = tests.plugins.kinds:KEYWORD"


def _env(site: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), str(REPO)) if p)
    return env


def silas(tmp: Path, site: Path | None, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "silas_exp", *args, *isolated_overrides(tmp)],
                          cwd=REPO, env=_env(site), capture_output=True, text=True, timeout=240)


@pytest.fixture
def site(tmp_path) -> Path:
    """An installed plug-in (entry point only: the scorer's code is tests.plugins.kinds)."""
    return fake_install(tmp_path / "site", "keyword-plugin", "0.1", "silas_exp.scorers", KEYWORD)


def test_every_builtin_option_is_its_settings_models_defaults(compose):
    """Each option of the scorer and eviction groups composes to exactly its
    kind's settings model with its defaults: nothing else states them."""
    for group, registry in (("scorer", SCORERS), ("eviction", STRATEGIES)):
        for option in registry.names():
            node = OmegaConf.to_container(compose(f"{group}={option}")[group], resolve=True)
            kind = registry.get(option)
            assert node == kind.settings(name=option).model_dump(mode="json"), (group, option)


def test_a_plugin_option_is_generated_and_its_setting_overridable(tmp_path, site):
    shown = silas(tmp_path, site, "--cfg", "job", "scorer=keyword", "scorer.keyword_weight=0.25")
    assert shown.returncode == 0, shown.stderr[-2000:]
    cfg = OmegaConf.create(shown.stdout)
    assert OmegaConf.to_container(cfg.scorer) == {"name": "keyword", "keyword_weight": 0.25,
                                                  "broken": "no"}


def test_plugins_command_lists_kinds_and_exits_2_on_a_broken_one(tmp_path, site):
    fake_install(site, "broken-plugin", "0.3", "silas_exp.strategies", "shaky = no_such_module:KIND")
    done = subprocess.run([sys.executable, "-c", "from silas_exp.cli.main import main; main()",
                           "plugins"], cwd=tmp_path, env=_env(site), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    out = done.stdout
    assert "ok      scorer=keyword  [tests.plugins.kinds:KEYWORD (keyword-plugin 0.1)]" in out
    assert "options: keyword_weight=0.5 broken=\"no\"" in out
    assert "ok      scorer=heuristic  [built-in]" in out
    assert "BROKEN  shaky  [no_such_module:KIND (broken-plugin 0.3)]" in out
    assert "ModuleNotFoundError" in out and "do not load" in out


def test_a_misspelt_plugin_setting_gets_did_you_mean(tmp_path, site):
    done = silas(tmp_path, site, "scorer=keyword", "scorer.keyword_wieght=0.3", "tracking=none")
    assert done.returncode == 2, done.stderr[-2000:]
    err = done.stderr
    assert "scorer.keyword_wieght=0.3: scorer=keyword has no setting 'keyword_wieght'" in err
    assert "did you mean 'keyword_weight'?" in err
    assert "+scorer" not in err and "append" not in err


def test_a_typo_in_a_sweep_stops_it_before_the_first_job(tmp_path, site):
    done = silas(tmp_path, site, "-m", "scorer=heuristic,keyword", "scorer.keyword_wieght=0.3",
                 "repeats=1", "tracking=none")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "none of scorer=heuristic, scorer=keyword has a setting 'keyword_wieght'" in done.stderr
    assert "did you mean 'keyword_weight'?" in done.stderr
    assert not list((tmp_path / "multirun").glob("*/result.json"))


def test_a_broken_plugin_stops_a_sweep_before_the_control_runs(tmp_path):
    site = fake_install(tmp_path / "site", "broken-plugin", "0.3", "silas_exp.scorers",
                        "broken = no_such_module:KIND")
    done = silas(tmp_path, site, "-m", "scorer=heuristic,broken", "repeats=1", "tracking=none")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "broken = no_such_module:KIND" in done.stderr and "ModuleNotFoundError" in done.stderr
    assert not list((tmp_path / "multirun").glob("*/result.json"))
