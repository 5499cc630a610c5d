"""Every mistake is caught before the first job, in one paragraph with exit 2:
a refusal raised inside the sweeper, a bad value of any variant of a sweep
(built-in or plug-in setting), a misspelt config-group option."""

from __future__ import annotations

import pytest

from silas_exp.errors import ConfigError, hydra_error_to_config_error, unknown_option_message
from tests.plugins.test_declared_once import KEYWORD, silas
from tests.plugins.test_example_plugin import fake_install


def one_paragraph(stderr: str) -> str:
    """The error paragraph; no traceback, nothing of Hydra's internals."""
    assert "Traceback" not in stderr and "hydra/_internal" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr[-3000:]
    return errors[0]


def no_job_ran(tmp_path, done) -> None:
    assert "[job " not in done.stdout, done.stdout[-2000:]
    assert not list((tmp_path / "multirun").glob("*/result.json"))


def test_a_refusal_inside_the_sweeper_is_one_paragraph(tmp_path):
    done = silas(tmp_path, None, "-m", "scorer=weights", "repeats=auto", "tracking=none")
    assert done.returncode == 2
    line = one_paragraph(done.stderr)
    assert "repeats=auto adds repeats of the same cases" in line and "cases_per_block" in line
    no_job_ran(tmp_path, done)


def test_verbose_adds_the_traceback_to_the_same_paragraph(tmp_path):
    done = silas(tmp_path, None, "--verbose", "-m", "scorer=weights", "repeats=auto",
                 "tracking=none")
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert "error: bad input: repeats=auto adds repeats" in done.stderr


def test_a_bad_builtin_value_of_the_second_variant_runs_no_job(tmp_path):
    done = silas(tmp_path, None, "-m", "scorer=heuristic,weights", "scorer.l2=-3", "suite=smoke",
                 "tracking=none")
    assert done.returncode == 2
    line = one_paragraph(done.stderr)
    assert "scorer.l2 = -3: input should be greater than or equal to 0" in line
    assert "scorer=weights" in line and "no job was started" in line
    no_job_ran(tmp_path, done)


def test_a_bad_plugin_value_of_the_second_variant_runs_no_job(tmp_path):
    site = fake_install(tmp_path / "site", "keyword-plugin", "0.1", "silas_exp.scorers", KEYWORD)
    done = silas(tmp_path, site, "-m", "scorer=heuristic,keyword", "scorer.keyword_weight=-1",
                 "suite=smoke", "tracking=none")
    assert done.returncode == 2
    line = one_paragraph(done.stderr)
    assert "scorer.keyword_weight = -1: input should be greater than or equal to 0" in line
    assert "scorer=keyword" in line
    no_job_ran(tmp_path, done)


@pytest.mark.parametrize("args", [["-m", "scorer=heuristic,wieghts"], ["scorer=wieghts"]])
def test_a_misspelt_option_gets_did_you_mean_and_the_options(tmp_path, args):
    done = silas(tmp_path, None, *args, "suite=smoke", "tracking=none")
    assert done.returncode == 2
    line = one_paragraph(done.stderr)
    assert "scorer=wieghts: 'wieghts' is not an option of the config group 'scorer'" in line
    assert "did you mean 'weights'?" in line
    assert "The options are: heuristic, online, oracle, prompt, random, weights" in line
    no_job_ran(tmp_path, done)


def test_hydras_missing_option_error_reads_the_same():
    from hydra.errors import MissingConfigException

    exc = MissingConfigException("Could not find 'scorer/mien'", "scorer/mien",
                                 ["heuristic", "weights"])
    err = hydra_error_to_config_error(exc)
    assert isinstance(err, ConfigError)
    assert str(err) == unknown_option_message("scorer", "mien", ["heuristic", "weights"])


def test_sweep_jobs_add_the_control_and_keep_settings_to_their_options(compose):
    """The jobs the pre-flight checks: the grid with the control added, one per
    variant (the first repeat)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    from silas_exp.run.preflight import sweep_jobs

    jobs = sweep_jobs({"repeat": "range(0,3)"}, ["scorer=weights,prompt", "seed=1"], None,
                      {"scorer": "heuristic"}, BasicSweeper.split_arguments)
    assert jobs == [["repeat=0", f"scorer={s}", "seed=1"] for s in ("heuristic", "weights", "prompt")]
    assert sweep_jobs({"repeat": "range(0,auto)"}, ["scorer=weights"], None,
                      {"scorer": "heuristic"}) == [["scorer=weights"]]


@pytest.mark.parametrize("override,says", [
    ("hydra.launcher.n_jobs=-3", "hydra.launcher.n_jobs=-3: give the number of jobs"),
    ("hydra.sweeper.check=some", "hydra.sweeper.check='some' is not one of"),
])
def test_a_launcher_or_sweeper_refusal_is_one_paragraph(tmp_path, override, says):
    done = silas(tmp_path, None, "-m", "scorer=heuristic,weights", override, "suite=smoke",
                 "tracking=none")
    assert done.returncode == 2
    assert one_paragraph(done.stderr).startswith(f"error: bad input: {says}")
    no_job_ran(tmp_path, done)


def test_the_tuning_space_is_checked_at_both_ends(tmp_path):
    """A search dimension whose low end is out of range stops the study before
    its first trial (the trials Optuna would sample are composed and validated)."""
    from types import SimpleNamespace

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from silas_exp.run.preflight import check_tune
    from silas_exp.tune.space import Dimension
    from tests.conftest import CONF, isolated_overrides

    paths = [o for o in isolated_overrides(tmp_path) if not o.startswith("hydra.")]
    dims = [Dimension("scorer.l2", SimpleNamespace(low=-3.0, high=200.0), False),
            Dimension("prompt", SimpleNamespace(choices=["default", "no_guidance"]), True)]

    def job(extra, part, scorer):
        return [f"scorer={scorer or 'weights'}", *extra, f"suite.split={part}", "experiment=tune",
                "suite=smoke",
                *paths]

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        loader = GlobalHydra.instance().hydra.config_loader  # type: ignore[union-attr]
        master = compose("config", overrides=["suite=smoke", *paths], return_hydra_config=True)
        with pytest.raises(ConfigError) as err:
            check_tune(master, loader, job, dims, "heuristic")
        check_tune(master, loader, job, dims[1:], "heuristic")  # the choices all compose
    assert "scorer.l2 = -3.0: input should be greater than or equal to 0" in str(err.value)
    assert "scorer=weights,scorer.l2=-3.0,suite.split=train" in str(err.value)


def test_a_glob_of_options_is_left_to_hydra():
    from silas_exp.cli.overrides import check_overrides
    from tests.conftest import CONF

    check_overrides(["-m", "scorer=glob(w*)"], str(CONF))  # no error: Hydra expands it
    with pytest.raises(ConfigError, match="did you mean 'weights'"):
        check_overrides(["-m", "scorer=choice(heuristic,wieghts)"], str(CONF))


def test_a_refused_sweep_leaves_its_folder_free_for_the_corrected_command(tmp_path):
    """One sweep per folder and the pre-flight together: a sweep refused before
    its first job gives its fixed folder back, so the corrected command runs there."""
    folder = tmp_path / "multirun"  # the fixed hydra.sweep.dir of silas(...)
    bad = silas(tmp_path, None, "-m", "scorer=heuristic,weights", "scorer.l2=-3", "suite=smoke",
                "tracking=none")
    assert bad.returncode == 2 and "scorer.l2 = -3" in one_paragraph(bad.stderr)
    assert not (folder / "sweep.json").exists()
    good = silas(tmp_path, None, "-m", "scorer=heuristic,weights", "suite=smoke",
                 "tracking=none")
    assert good.returncode == 0, good.stderr[-2000:]
    assert len(list(folder.glob("*/result.json"))) == 2
