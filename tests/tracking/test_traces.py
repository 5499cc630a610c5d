"""Model calls of a real-model probe run as MLflow traces with the judge's
grades as feedback — the real CLI and the real anthropic SDK against the local
Messages API server; simulated runs stay untraced unless asked."""

from __future__ import annotations

import json

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from tests.fakes.messages_server import API_KEY, FakeMessagesServer

from .conftest import run_silas
from .responders import grading_responder

PROBE_RUN = ["suite=probes", "suite.max_cases=1", "model=claude-haiku-4-5", "judge=llm",
             "judge.repeats=1", "eviction=anchored"]


def _traces(tmp, run_id):
    uri = f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    exp = MlflowClient(uri).get_experiment_by_name("silas-probes")
    return mlflow.search_traces(locations=[exp.experiment_id], run_id=run_id, return_type="list")


@pytest.mark.parametrize("mode", ["single", "sweep"])
def test_real_model_probe_run_is_traced_with_judge_feedback(tmp_path, mode):
    with FakeMessagesServer(responder=grading_responder) as server:
        args = (["-m", "repeats=1"] if mode == "sweep" else []) + PROBE_RUN
        proc = run_silas(tmp_path, *args, f"llm.base_url={server.base_url}",
                         env={"ANTHROPIC_API_KEY": API_KEY})
        requests = server.message_requests
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("silas-probes")
    [run] = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("silas.kind") != "sweep"]
    traces = _traces(tmp_path, run.info.run_id)
    spans = [s for t in traces for s in t.data.spans if s.span_type in ("CHAT_MODEL", "EVALUATOR")]
    assert len(spans) == requests > 0  # every model call is a span
    probes = [t for t in traces if t.info.tags.get("silas.task") == "probe"]
    job_dir = tmp_path / ("multirun/0" if mode == "sweep" else "run")
    rows = json.loads((job_dir / "probes.json").read_text())
    graded = [r for r in rows if r.get("overall") is not None]
    assert len(probes) == len(rows) and graded
    for t in probes:
        names = {s.name.split(" ")[0] for s in t.data.spans}
        assert {"probe", "probe_answer", "judge"} <= names
        fb = {a.name: a for a in t.info.assessments}
        row = next(r for r in rows if r["probe_id"] == t.info.tags["silas.probe_id"])
        assert fb["overall"].value == pytest.approx(row["overall"])
        assert set(row["dimensions"]) <= set(fb)
        dim = next(iter(row["dimensions"]))
        assert fb[dim].source.source_type == "LLM_JUDGE"
        assert fb[dim].source.source_id == "claude-haiku-4-5"
        assert "score" in fb[dim].rationale
        answer = next(s for s in t.data.spans if s.name.startswith("probe_answer"))
        usage = answer.attributes["mlflow.chat.tokenUsage"]
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
        assert answer.attributes["silas.retries"] == 0 and answer.attributes["silas.latency_ms"] > 0
        assert answer.attributes["mlflow.llm.cost"]["total_cost"] > 0
        assert answer.start_time_ns < answer.end_time_ns
        assert t.info.request_time / 1000 >= run.info.start_time / 1000 - 1
    # the key is in no trace, span or call record
    blob = json.dumps([t.to_dict() for t in traces])
    assert API_KEY not in blob
    assert API_KEY not in (job_dir / "llm_calls.jsonl").read_text()


def test_simulated_runs_are_not_traced_unless_asked(tmp_path):
    base = ["suite=probes", "suite.max_cases=1", "eviction=anchored"]
    proc = run_silas(tmp_path, *base)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (tmp_path / "run" / "llm_calls.jsonl").exists()
    asked = run_silas(tmp_path, *base, "tracking.traces=always")
    assert asked.returncode == 0, asked.stderr[-2000:]
    calls = (tmp_path / "run" / "llm_calls.jsonl").read_text().splitlines()
    assert calls and all(json.loads(c)["backend"] == "simulated" for c in calls)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("silas-probes").experiment_id],
                              order_by=["attributes.start_time ASC"])
    assert len(runs) == 2
    assert not _traces(tmp_path, runs[0].info.run_id)
    assert len(_traces(tmp_path, runs[1].info.run_id)) >= len(calls) // 2
