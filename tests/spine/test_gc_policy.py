"""A job process runs the cyclic garbage collector less often, and only when
nobody else chose its thresholds."""

from __future__ import annotations

import gc

import pytest

from silas_exp.run import gc_policy


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_default_thresholds_become_the_jobs(thresholds) -> None:
    gc.set_threshold(*gc_policy.CPYTHON_DEFAULT)
    gc_policy.tune_for_jobs()
    assert gc.get_threshold() == gc_policy.JOB_THRESHOLDS
    assert gc_policy.JOB_THRESHOLDS[0] > gc_policy.CPYTHON_DEFAULT[0]


def test_thresholds_someone_chose_are_kept(thresholds) -> None:
    gc.set_threshold(1234, 5, 6)
    gc_policy.tune_for_jobs()
    assert gc.get_threshold() == (1234, 5, 6)


def test_a_job_runs_under_the_job_thresholds(thresholds, tmp_path, monkeypatch) -> None:
    """The entry every launcher's job goes through sets them before any work."""
    from silas_exp.run import execute as execute_module

    gc.set_threshold(*gc_policy.CPYTHON_DEFAULT)
    seen: list[tuple[int, int, int]] = []

    class Stop(Exception):
        pass

    def job_spec(*args, **kwargs):
        seen.append(gc.get_threshold())
        raise Stop

    monkeypatch.setattr(execute_module, "job_spec", job_spec)
    with pytest.raises(Stop):
        execute_module.execute(None, tmp_path, [], False, 0)  # type: ignore[arg-type]
    assert seen == [gc_policy.JOB_THRESHOLDS]
