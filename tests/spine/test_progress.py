"""Progress lines of a sweep: planned job count and time left."""

from __future__ import annotations

from silas_exp.run.progress import planned_jobs, progress_note

SILAS = "hydra_plugins.silas_sweeper.silas_sweeper.SilasSweeper"


def test_planned_jobs_is_the_grid_size():
    assert planned_jobs(["scorer=a,b,c", "suite=smoke"], {"repeat": "range(0,5)"}, SILAS) == 15
    assert planned_jobs(["scorer=a"], None, "hydra._internal.core_plugins.basic_sweeper.BasicSweeper") == 1


def test_planned_jobs_unknown_for_other_sweepers_and_bad_syntax():
    assert planned_jobs(["x=1,2"], None, "hydra_plugins.hydra_optuna_sweeper.OptunaSweeper") is None
    assert planned_jobs(["x=range(("], None, SILAS) is None


def test_progress_note_counts_results_and_extrapolates(tmp_path):
    for i in range(4):
        (tmp_path / str(i)).mkdir()
    for i in range(2):
        (tmp_path / str(i) / "result.json").write_text("{}")
    assert progress_note(tmp_path, 8, started_at=100.0, now=110.0) == "2/8 done, ~30 s left"
    assert progress_note(tmp_path, 2, started_at=100.0, now=110.0) == "2/2 done"
    assert progress_note(tmp_path, None, started_at=100.0, now=110.0) == "2 done"
    assert progress_note(tmp_path, 600, started_at=100.0, now=160.0) == "2/600 done, ~5.0 h left"


def test_a_resumed_study_counts_only_the_jobs_planned_so_far(tmp_path):
    for i in range(19):  # the folder of an interrupted study: 19 jobs of later rounds ended
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "result.json").write_text("{}")
    assert progress_note(tmp_path, 4, started_at=100.0, now=110.0) == "4/4 done"  # round 1 again
    assert progress_note(tmp_path, 26, started_at=100.0, now=119.0) == "19/26 done, ~7 s left"
