"""The `silas` sweeper: Hydra's basic sweeper that composes each distinct job
shape once in the launching process instead of every job."""

from __future__ import annotations

import pytest

from hydra_plugins.silas_sweeper.silas_sweeper import SilasSweeper, distinct_jobs, job_shape
from silas_exp.errors import ConfigError

GROUPS = {"scorer", "suite", "experiment", "hydra/launcher"}


def is_group(name: str) -> bool:
    return name.replace(".", "/") in GROUPS


def test_jobs_differing_only_in_scalar_values_share_a_shape():
    a = job_shape(["repeat=0", "scorer=weights", "seed=3"], is_group)
    b = job_shape(["seed=4", "repeat=1", "scorer=weights"], is_group)
    assert a == b


@pytest.mark.parametrize("other", [
    ["repeat=0", "scorer=prompt"],                 # another group option
    ["repeat=0", "scorer=weights", "+extra=1"],    # another key
    ["repeat=[0,1]", "scorer=weights"],            # a list where a scalar was
    ["repeat=null", "scorer=weights"],
    ["repeat=0", "scorer=weights", "hydra.launcher.n_jobs=x"],  # hydra.* keys are typed
    ["repeat=0", "+experiment=ablation", "scorer=weights"],
])
def test_what_changes_composition_makes_a_new_shape(other):
    assert job_shape(["repeat=0", "scorer=weights"], is_group) != job_shape(other, is_group)


def test_distinct_jobs_keeps_one_per_shape_in_batch_order():
    batch = [[f"repeat={r}", f"scorer={s}"] for r in range(5) for s in ("a", "b", "c", "d")]
    chosen = distinct_jobs(batch, is_group)
    assert chosen == batch[:4]


def test_unknown_check_mode_is_refused():
    with pytest.raises(ConfigError, match="distinct .*or all"):
        SilasSweeper(max_batch_size=None, check="some")


def test_sweep_checks_one_config_per_variant(cli, tmp_path):
    proc = cli("-m", "scorer=heuristic,weights", "repeats=2", "suite=smoke", "tracking=none")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert "Pre-flight: 2 distinct job config(s) of the sweep composed, validated" in out
    # the launch composes none again: the pre-flight composed both shapes
    assert "Checked 0 distinct job config(s) for 4 jobs" in out and "(2 checked by the pre-flight)" in out
    assert len(list((tmp_path / "multirun").glob("*/result.json"))) == 4


def test_bad_option_still_fails_before_any_job_runs(cli, tmp_path):
    proc = cli("-m", "scorer=heuristic,nonesuch", "repeats=2", "suite=smoke", "tracking=none")
    assert proc.returncode == 2
    assert "nonesuch" in proc.stderr
    assert not list((tmp_path / "multirun").glob("*/result.json"))


def test_check_all_composes_every_job_like_the_basic_sweeper(cli, tmp_path):
    proc = cli("-m", "scorer=heuristic", "repeats=2", "suite=smoke", "tracking=none",
               "hydra.sweeper.check=all")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "distinct job config(s) for" not in proc.stdout + proc.stderr  # the sweeper's own check
    assert len(list((tmp_path / "multirun").glob("*/result.json"))) == 2


@pytest.mark.parametrize("kind", ["sweeper", "launcher"])
def test_an_install_without_a_plugin_is_told_to_reinstall(monkeypatch, capsys, kind):
    import importlib.util

    from silas_exp.cli import app

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == app.PLUGINS[kind] else real(name, *a))
    with pytest.raises(SystemExit) as exc:
        app.main(["-m", "scorer=heuristic"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{kind} plugin ({app.PLUGINS[kind]})" in err and "pip install -e ." in err
