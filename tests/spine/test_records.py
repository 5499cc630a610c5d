"""The records a sweep leaves on disk (silas_exp.records): a job's result and
the sweep's manifest round-trip; job results of every earlier format still
load (fixtures written in their shapes); a damaged or newer file says which
file and what to do."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest

from silas_exp.errors import RecordError
from silas_exp.records import (
    CASES_FILE,
    RESULT_FILE,
    SCHEMA_VERSION,
    CaseLog,
    SweepEnd,
    SweepManifest,
    job_result,
    read_job_result,
    read_manifest,
    read_sweep_end,
    sweep_job_results,
    write_job_result,
    write_manifest,
    write_sweep_end,
)
from silas_exp.schema.benchmark import BenchmarkResult, BenchmarkRun, BenchmarkSummary

CASES = [
    {"case_id": "c1", "status": "pass", "actual_output": "kept", "latency_ms": 1.5,
     "token_cost": 10, "metrics": {"context.retrieval_relevance": 0.7, "ir.mrr_at_5": math.nan},
     "evicted": ["a", "b"]},
    {"case_id": "c2", "status": "error", "latency_ms": 0.0, "token_cost": 0,
     "error": "RunError: boom", "metrics": {}},
]
RUN = {"run_id": "r1", "suite_id": "s", "started_at": "2026-11-23T10:00:00Z",
       "completed_at": "2026-11-23T10:00:05Z", "config_snapshot": {"scorer": {"name": "weights"}},
       "summary": {"pass_rate": 0.5, "mean_latency_ms": 0.75, "p95_latency_ms": 1.5,
                   "total_token_cost": 10}, "variant": "scorer=weights", "repeat": 1, "seed": 7}


def _run() -> BenchmarkRun:
    return BenchmarkRun(run_id="r1", suite_id="s", started_at=datetime(2026, 11, 23, tzinfo=UTC),
                        completed_at=datetime(2026, 11, 23, 0, 0, 5, tzinfo=UTC),
                        config_snapshot={}, results=[],
                        summary=BenchmarkSummary(pass_rate=0.5, mean_latency_ms=1.0,
                                                 p95_latency_ms=1.5, total_token_cost=10))


def _same_cases(got: list[BenchmarkResult]) -> None:
    assert [c.case_id for c in got] == ["c1", "c2"]
    assert got[0].evicted == ["a", "b"] and got[0].metrics["context.retrieval_relevance"] == 0.7
    assert math.isnan(got[0].metrics["ir.mrr_at_5"]) and got[1].error == "RunError: boom"


def test_job_result_round_trip_with_nan_metrics(tmp_path):
    with CaseLog(tmp_path / CASES_FILE) as log:
        for c in CASES:
            log.append(BenchmarkResult.model_validate(c))
    written = job_result("scorer=weights", 1, None, {"a": 0.5, "b": math.nan}, "1.0.0", _run())
    write_job_result(tmp_path, written)
    raw = json.loads((tmp_path / RESULT_FILE).read_text())
    assert raw["schema_version"] == SCHEMA_VERSION and "results" not in raw["run"]
    back = read_job_result(tmp_path)
    assert back.model_dump(exclude={"metrics"}) == written.model_dump(exclude={"metrics"})
    assert back.metrics["a"] == 0.5 and math.isnan(back.metrics["b"])
    assert back.finished and back.results_file == CASES_FILE
    _same_cases(list(back.cases(tmp_path)))
    inline = back.with_cases(tmp_path)
    assert inline.results_file is None
    _same_cases(list(inline.cases()))
    failed = job_result("scorer=weights", 2, "RunError: no calibration", {}, None, None)
    write_job_result(tmp_path / "f", failed)
    assert read_job_result(tmp_path / "f" / RESULT_FILE) == failed and not failed.finished
    assert [r.repeat for _, r in sweep_job_results(tmp_path)] == [2]  # job folders only


def test_format_3_loads(tmp_path):
    (tmp_path / CASES_FILE).write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (tmp_path / RESULT_FILE).write_text(json.dumps({
        "format": 3, "variant": "scorer=weights", "repeat": 1, "status": "finished",
        "error": None, "metrics": {"x": math.nan}, "suite_version": "1.0.0", "run": RUN,
        "results_file": CASES_FILE}, indent=1))
    result = read_job_result(tmp_path)
    assert result.variant == "scorer=weights" and result.run.summary.pass_rate == 0.5
    assert result.run.completed_at == datetime(2026, 11, 23, 10, 0, 5, tzinfo=UTC)
    _same_cases(list(result.cases(tmp_path)))


@pytest.mark.parametrize("shape", ["format 2", "format 1"])
def test_formats_before_3_load_with_their_cases_inside(tmp_path, shape):
    cases = [dict(c) for c in CASES]
    if shape == "format 1":  # no `evicted`: the eviction order was the case's output
        cases[0].pop("evicted")
        cases[0]["actual_output"] = json.dumps({"evicted": ["a", "b"]})
        run = {k: v for k, v in RUN.items() if k not in ("variant", "repeat", "seed")}
    else:
        run = dict(RUN)
    (tmp_path / RESULT_FILE).write_text(json.dumps({
        "variant": "scorer=weights", "repeat": 1, "status": "finished", "error": None,
        "metrics": {"context.retrieval_relevance": 0.7}, "suite_version": "1.0.0",
        "run": {**run, "results": cases}, "resumed_from": "abc"}))
    result = read_job_result(tmp_path)
    assert result.results_file is None and result.resumed_from == "abc"
    _same_cases(list(result.cases()))
    # written again, it is today's shape and reads the same
    write_job_result(tmp_path / "again", result)
    assert list(read_job_result(tmp_path / "again").cases()) == list(result.cases())


@pytest.mark.parametrize("content,says", [
    ('{"variant": "v", "repeat": 0, "sta', "not valid JSON"),
    ('{"schema_version": 99, "variant": "v", "repeat": 0, "status": "finished"}', "newer silas_exp"),
    ('{"format": 7, "variant": "v", "repeat": 0, "status": "finished"}', "unknown job result format"),
    ('{"schema_version": 4, "variant": "v", "repeat": 0, "status": "done"}', "status"),
    ('[1, 2]', "JSON object"),
])
def test_a_damaged_or_newer_result_names_the_file_and_the_fix(tmp_path, content, says):
    (tmp_path / "3").mkdir()
    (tmp_path / "3" / RESULT_FILE).write_text(content)
    with pytest.raises(RecordError) as exc:
        sweep_job_results(tmp_path)
    message = str(exc.value)
    assert str(tmp_path / "3" / RESULT_FILE) in message and says in message
    assert "upgrade" in message or "re-run the job" in message
    assert exc.value.exit_code == 2


def test_a_damaged_case_line_names_the_file_and_line(tmp_path):
    write_job_result(tmp_path, job_result("v", 0, None, {}, "1.0.0", _run()))
    (tmp_path / CASES_FILE).write_text(json.dumps(CASES[0]) + "\n{broken\n")
    with pytest.raises(RecordError, match=f"{CASES_FILE}, line 2"):
        list(read_job_result(tmp_path).cases(tmp_path))


def test_sweep_manifest_round_trip_and_the_shape_before_versions(tmp_path):
    manifest = SweepManifest(sweep_id="abc", experiment_name="silas-smoke",
                             swept_keys=["repeat", "scorer"], command="python -m silas_exp -m x",
                             jobs_total=4, started_at=1.5, background=True,
                             parent_tags={"silas.kind": "sweep"})
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) == manifest
    assert read_manifest(tmp_path / "nowhere") is None
    legacy = manifest.model_dump(exclude={"schema_version"})  # sweep.json before this schema
    (tmp_path / "sweep.json").write_text(json.dumps(legacy))
    assert read_manifest(tmp_path) == manifest
    (tmp_path / "sweep.json").write_text(json.dumps({**legacy, "schema_version": 2}))
    with pytest.raises(RecordError, match="sweep.json.*newer silas_exp"):
        read_manifest(tmp_path)


def test_sweep_end_round_trip_and_the_older_done_marker(tmp_path):
    end = SweepEnd(status="FAILED", metrics={"sweep.jobs": 2.0}, tags={"t": "v"},
                   description="| a |", artifacts=["summary.md", "ablation"])
    write_sweep_end(tmp_path, end)
    assert read_sweep_end(tmp_path) == end
    (tmp_path / "sweep.done").write_text('{"failed_jobs": 0}')
    assert read_sweep_end(tmp_path) == SweepEnd(status="FINISHED")
