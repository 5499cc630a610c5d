"""A job's memory does not grow with the suite: cases are read when reached,
per-case results stream to disk, the MLflow case table comes in chunks, and
the control's flush logs are bounded — with the same results as before."""

from __future__ import annotations

import json

from omegaconf import OmegaConf

import silas_exp.run.references as references
from silas_exp.config import validate
from silas_exp.context.budget import TokenBudget
from silas_exp.data.suites import loader
from silas_exp.records import CASES_FILE, read_job_result
from silas_exp.run.job import JobSpec, make_job, run_job
from silas_exp.tracking.tables import case_tables

from ..conftest import REPO


def _job(compose, out, *overrides):
    cfg = validate(OmegaConf.to_container(compose("suite=smoke", "tracking=none", *overrides),
                                          resolve=True))
    return run_job(cfg, make_job(cfg, "v"), out)


def _comparable(outcome) -> list[dict]:
    """Per-case results but their wall time and the model tokens the case spent
    (a control flush log replayed again costs its simulated calls again)."""
    return [r.model_dump(exclude={"latency_ms", "token_cost"}) for r in outcome.results()]


def test_cases_are_read_when_reached_and_only_a_few_stay_parsed(monkeypatch):
    monkeypatch.setattr(loader, "CACHED_CASES", 2)
    loaded = loader.load_suite(REPO / "suites" / "chronicle_keepback")
    assert len(loaded._cache) == 2 and len(loaded.files) == 12
    ids = [c.case_id for c in loaded.eval_cases]
    assert ids == [p.stem for p in sorted((REPO / "suites/chronicle_keepback/cases").glob("case-*.json"))]
    assert [c.case_id for c in loaded.eval_cases[:3]] == ids[:3]
    for case in loaded.cases:
        assert loader.session_case(loaded, case, TokenBudget()).session.items
        assert len(loaded._cache) <= 2


def test_results_stream_to_a_file_and_read_back(compose, tmp_path):
    out = _job(compose, tmp_path / "job")
    lines = (tmp_path / "job" / CASES_FILE).read_text().splitlines()
    assert len(lines) == out.cases == out.metrics["summary.cases"] == 2
    assert [json.loads(line)["case_id"] for line in lines] == [r.case_id for r in out.results()]
    assert out.run.results == []  # the run record holds no per-case results


def test_case_table_comes_in_chunks_with_the_same_columns(compose, tmp_path):
    from silas_exp.run.execute import write_result

    out = _job(compose, tmp_path / "job")
    write_result(tmp_path / "job", JobSpec("v", 0, 0), out, None)
    assert "results" not in json.loads((tmp_path / "job" / "result.json").read_text())["run"]
    whole = list(case_tables(tmp_path / "job"))
    parts = list(case_tables(tmp_path / "job", rows=1))
    assert [name for name, _ in whole] == ["cases.json"]
    assert [name for name, _ in parts] == ["cases/part-0001.json", "cases/part-0002.json"]
    table = whole[0][1]
    assert all(list(t) == list(table) for _, t in parts)
    assert [t["case_id"][0] for _, t in parts] == table["case_id"]
    assert len(list(read_job_result(tmp_path / "job").cases(tmp_path / "job"))) == 2


def test_bounded_control_flush_logs_give_the_same_results(compose, tmp_path, monkeypatch):
    """A variant after the control in one process: with every flush log kept, and
    with only one kept (the others replayed again), its results are the same."""
    def variant_after_control(name):
        references._REFERENCES.clear()
        _job(compose, tmp_path / name / "control", "scorer=heuristic")
        return _comparable(_job(compose, tmp_path / name / "variant", "scorer=weights"))

    kept = variant_after_control("all")
    monkeypatch.setattr(references, "REFERENCE_CASES", 1)
    assert variant_after_control("one") == kept
    assert len(references._REFERENCES) == 1
