"""A study's spend per look and what stopping early saved, from job records."""

from __future__ import annotations

import pytest

from silas_exp.run.look_spend import study_spend, sweep_spend

JOB = {"llm.calls": 100.0, "llm.cost_usd": 1.0, "llm.overhead.calls": 10.0,
       "llm.overhead.cost_usd": 0.1}


def test_spend_per_look_and_the_saving_against_the_whole_pool():
    # a pool of 4 blocks, looks after 1, 2 and 4; variant A stopped at the first look,
    # B and the control at the second
    jobs = [("control", 0, JOB), ("A", 0, JOB), ("B", 0, JOB), ("control", 1, JOB), ("B", 1, JOB)]
    s = study_spend(jobs, [1, 2, 4], 4)
    assert [(x.blocks, x.variants) for x in s.looks] == [(1, 3), (2, 2)]
    assert [x.calls for x in s.looks] == [330.0, 220.0]
    assert s.looks[0].usd == pytest.approx(3.3) and s.usd == pytest.approx(5.5)
    # each variant's spend per block on every block: 3 variants x 4 blocks x 110 calls
    assert s.pool_calls == 1320.0 and s.saved_calls == 770.0
    assert s.saved_usd == pytest.approx(7.7)
    text = "\n".join(s.lines())
    assert "look after block 1: 3 variant(s), 330 calls, $3.30" in text
    assert "stopping early saved 770 calls, $7.70 (58%)" in text
    table = s.table()
    assert table["look"][-1] == "saved by stopping early" and table["calls"][-1] == 770.0
    assert table["variants"] == [3, 2, 3, 3, 3]


def test_only_a_real_models_study_reports_its_spend(tmp_path):
    jobs = [("control", 0, JOB)]
    assert sweep_spend(tmp_path, "simulated", jobs) is None  # priced ids, no real calls
    assert sweep_spend(tmp_path, None, jobs) is None
    assert sweep_spend(tmp_path, "anthropic", jobs).calls == 110.0


def test_a_study_that_ran_the_whole_pool_saved_nothing():
    jobs = [("control", b, JOB) for b in range(2)] + [("A", b, JOB) for b in range(2)]
    s = study_spend(jobs, [1, 2], 2)
    assert s.calls == s.pool_calls == 440.0 and s.saved_calls == 0.0
