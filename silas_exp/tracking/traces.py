"""A job's model calls as MLflow traces, judge grades as feedback on them.

Input: the job folder's call log (``llm_calls.jsonl``, plain records written by
the LLM layer while the job ran) and its probe table (``probes.json``, each
graded row with its ``assessments``: name, value, rationale, as the judge
layer wrote them).

* One trace per probe: the answer call and the judge calls that graded it are
  spans under a root span ``probe <case>/<probe>`` (inputs: the question;
  outputs: the answer). Its grades become feedback on that trace: ``overall``
  and one per rubric dimension, with the judge's reasoning as rationale and
  the judge model as source (the offline judge: source type CODE).
* Every other call (scorer, keep-back, summary) is a trace of its own.

Each span keeps the call's own start and end time, token usage, cost, latency,
retries and errors. Traces are linked to the job's run (Traces tab of the run)
and to its experiment. Nothing secret is in a call record (see
``silas_exp.llm.calls``).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import mlflow
from mlflow.entities import AssessmentSource, SpanType
from mlflow.tracing.constant import SpanAttributeKey

from silas_exp.llm.calls import CallRecord, read_call_log
from silas_exp.tracking.store import MlflowStore

OFFLINE_JUDGE = "silas_exp offline judge"


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def probe_key(record: CallRecord) -> tuple[str, str] | None:
    """(case id, probe id) of a probe-answer or judge call, from its namespace
    (``…/<case>/<probe>`` and ``…/<case>/judge/<probe>/j<k>/a<n>``)."""
    parts = record.namespace.split("/")
    if record.task == "judge" and "judge" in parts[1:-1]:
        i = parts.index("judge")
        return parts[i - 1], parts[i + 1]
    if record.task == "probe_answer" and len(parts) >= 3:
        return parts[-2], parts[-1]
    return None


def _span_io(r: CallRecord) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    inputs = {"model": r.model, "system": r.system, "messages": r.messages,
              "max_tokens": r.max_tokens}
    outputs = None if r.error else ({"data": r.data} if r.data is not None else {"text": r.text})
    usage = r.usage or {}
    attributes: dict[str, Any] = {
        SpanAttributeKey.MODEL: r.model, SpanAttributeKey.MODEL_PROVIDER: "anthropic",
        "silas.task": r.task, "silas.namespace": r.namespace, "silas.backend": r.backend,
        "silas.latency_ms": round(r.latency_ms, 2), "silas.retries": r.retries,
        "silas.cached": r.cached, "silas.batch": r.batch, "silas.cost_usd": r.cost_usd,
    }
    if usage:
        attributes[SpanAttributeKey.CHAT_USAGE] = {
            "input_tokens": usage.get("input_tokens", 0),
            "output_tokens": usage.get("output_tokens", 0),
            "total_tokens": usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
            "cache_read_input_tokens": usage.get("cache_read_input_tokens", 0),
            "cache_creation_input_tokens": usage.get("cache_creation_input_tokens", 0)}
        attributes[SpanAttributeKey.LLM_COST] = {"total_cost": r.cost_usd}
    if r.error:
        attributes["silas.error"] = r.error
    return inputs, outputs, attributes


class _TraceWriter:
    def __init__(self, store: MlflowStore, run_id: str, experiment_id: str) -> None:
        self.client, self.run_id, self.experiment_id = store.client, run_id, experiment_id

    def call_trace(self, r: CallRecord) -> str:
        inputs, outputs, attributes = _span_io(r)
        root = self.client.start_trace(
            f"{r.task} ({r.model})", span_type=SpanType.CHAT_MODEL, inputs=inputs,
            attributes=attributes, tags={"silas.task": r.task}, experiment_id=self.experiment_id,
            start_time_ns=_ns(r.started_at), run_id=self.run_id)
        self.client.end_trace(root.trace_id, outputs=outputs, status="ERROR" if r.error else "OK",
                              end_time_ns=_ns(r.ended_at))
        return root.trace_id

    def probe_trace(self, case: str, probe: str, calls: list[CallRecord],
                    row: dict[str, Any] | None) -> str:
        answer = next((c for c in calls if c.task == "probe_answer"), None)
        question = (row or {}).get("question")
        text = (row or {}).get("answer")
        if text is None and answer is not None and answer.data is not None:
            text = answer.data.get("text")
        root = self.client.start_trace(
            f"probe {case}/{probe}", span_type=SpanType.AGENT,
            inputs={"case_id": case, "probe_id": probe, "question": question},
            attributes={"silas.probe_type": (row or {}).get("type")},
            tags={"silas.task": "probe", "silas.case_id": case, "silas.probe_id": probe},
            experiment_id=self.experiment_id, start_time_ns=_ns(min(c.started_at for c in calls)),
            run_id=self.run_id)
        for c in calls:
            inputs, outputs, attributes = _span_io(c)
            span = self.client.start_span(
                f"{c.task} ({c.model})", trace_id=root.trace_id, parent_id=root.span_id,
                span_type=SpanType.CHAT_MODEL if c.task != "judge" else SpanType.EVALUATOR,
                inputs=inputs, attributes=attributes, start_time_ns=_ns(c.started_at))
            self.client.end_span(root.trace_id, span.span_id, outputs=outputs,
                                 status="ERROR" if c.error else "OK", end_time_ns=_ns(c.ended_at))
        failed = text is None or any(c.error for c in calls if c.task == "probe_answer")
        self.client.end_trace(root.trace_id, outputs={"answer": text},
                              status="ERROR" if failed else "OK",
                              end_time_ns=_ns(max(c.ended_at for c in calls)))
        return root.trace_id


def feedback_source(calls: list[CallRecord]) -> AssessmentSource:
    judge = next((c.model for c in calls if c.task == "judge"), None)
    if judge is None:
        return AssessmentSource(source_type="CODE", source_id=OFFLINE_JUDGE)
    return AssessmentSource(source_type="LLM_JUDGE", source_id=judge)


def log_traces(store: MlflowStore, run_id: str, call_log: Path, probe_table: Path | None) -> int:
    """Turn a job's call log into traces on ``run_id``; return how many."""
    records = read_call_log(call_log)
    if not records:
        return 0
    rows = {(r["case_id"], r["probe_id"]): r
            for r in (json.loads(probe_table.read_text()) if probe_table else [])}
    groups: dict[tuple[str, str], list[CallRecord]] = defaultdict(list)
    single: list[CallRecord] = []
    for r in records:
        key = probe_key(r)
        (groups[key] if key is not None else single).append(r)
    experiment_id = store.get_run(run_id).info.experiment_id
    writer = _TraceWriter(store, run_id, experiment_id)
    exported = os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(store.uri)  # the trace exporter writes to the global tracking URI
    if exported is None:  # set_tracking_uri exports it: later jobs of this process must not follow
        os.environ.pop("MLFLOW_TRACKING_URI", None)
    with store.writing():
        graded = [(writer.probe_trace(case, probe, calls, rows.get((case, probe))),
                   feedback_source(calls), rows.get((case, probe)))
                  for (case, probe), calls in groups.items()]
        for r in single:
            writer.call_trace(r)
        mlflow.flush_trace_async_logging()
        for trace_id, source, row in graded:
            for a in (row or {}).get("assessments") or []:
                mlflow.log_feedback(trace_id=trace_id, name=a["name"], value=a["value"],
                                    rationale=a["rationale"], source=source)
    return len(graded) + len(single)
