"""A plug-in's own setting swept against the control in one command: the
control's jobs run without it, once per repeat; a sweep of one option says
why it has no ablation and which command has one."""

from __future__ import annotations

import pytest

from tests.plugins.test_declared_once import KEYWORD, silas
from tests.plugins.test_example_plugin import fake_install, jobs


@pytest.fixture
def site(tmp_path):
    return fake_install(tmp_path / "site", "keyword-plugin", "0.1", "silas_exp.scorers", KEYWORD)


def test_a_plugin_setting_sweeps_against_the_control(tmp_path, site):
    done = silas(tmp_path, site, "-m", "scorer=heuristic,keyword", "scorer.keyword_weight=0.2,0.8",
                 "repeats=2", "tracking=none", "suite=smoke")
    assert done.returncode == 0, done.stderr[-3000:]
    found = jobs(tmp_path / "multirun")
    assert set(found) == {"scorer=heuristic", "scorer.keyword_weight=0.2,scorer=keyword",
                          "scorer.keyword_weight=0.8,scorer=keyword"}
    assert all(len(records) == 2 for records in found.values())  # the control once per repeat
    report = (tmp_path / "multirun" / "ablation.md").read_text()
    assert "scorer.keyword_weight=0.8,scorer=keyword" in report
    assert "Ablation vs scorer=heuristic" in done.stdout


def test_one_option_says_why_there_is_no_ablation(tmp_path, site):
    done = silas(tmp_path, site, "-m", "scorer=keyword", "repeats=1", "tracking=none",
                 "suite=smoke")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no ablation: the sweep ran one variant, scorer=keyword, and no control" in done.stdout
    assert "python -m silas_exp -m scorer=heuristic,keyword" in done.stdout
