"""A study's design from its command line, by the sweeper's own rules."""

from __future__ import annotations

import pytest

from silas_exp.errors import ConfigError
from silas_exp.plan.design import study_design

from ..conftest import REPO

SUITES = f"paths.suites={REPO / 'suites'}"


def test_the_readme_study_adds_its_control_and_looks_after_blocks_1_2_4_8():
    d = study_design(["-m", "scorer=weights,prompt,online", "model=claude-haiku-4-5", SUITES])
    assert list(d.arms) == ["scorer=heuristic", "scorer=weights", "scorer=prompt",
                            "scorer=online"]
    assert d.control == "scorer=heuristic" and "§19.5 control" in d.control_reason
    assert (d.kind, d.pool_cases, d.cases_per_block, d.blocks) == ("sequential", 320, 40, 8)
    assert d.state.looks == [1, 2, 4, 8] and d.cases_at(4) == 160
    assert d.arms["scorer=prompt"] == ["scorer=prompt", "model=claude-haiku-4-5", SUITES]


def test_without_blocks_the_whole_suite_is_one_look():
    d = study_design(["-m", "scorer=weights,prompt", "cases_per_block=null", "suite.max_cases=30",
                      SUITES])
    assert (d.kind, d.blocks, d.pool_cases, d.state.looks) == ("grid", 1, 30, [1])


@pytest.mark.parametrize("args,words", [
    (["-m", "scorer=weights"], "runs one configuration"),
    (["-m", "scorer=weights,prompt", "repeats=auto", "cases_per_block=null"], "repeats=auto"),
])
def test_what_a_plan_cannot_plan_is_bad_input(args, words):
    with pytest.raises(ConfigError, match=words):
        study_design([*args, SUITES])
