"""Benchmark data models (Silas spec §20.2).

Field names and types follow the spec exactly so that a suite written to it
loads. Additive extensions, all optional: ``BenchmarkResult.metrics`` (the
per-case metric values the runner computed), ``BenchmarkResult.evicted`` (the
case's eviction order, for shadow diffs) and ``BenchmarkRun.variant`` /
``repeat`` / ``seed`` (which sweep point produced it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["pass", "fail", "error", "timeout", "skipped"]
Difficulty = Literal["easy", "medium", "hard", "adversarial"]
Source = Literal["synthetic", "organic", "regression"]
ExpectedMode = Literal["exact", "contains", "llm_judge", "metric_threshold", "human"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BenchmarkInput(_Model):
    goal: str
    context: list[dict[str, Any]] | None = None
    config_overrides: dict[str, Any] | None = None
    skill_args: dict[str, Any] | None = None


class BenchmarkExpected(_Model):
    mode: ExpectedMode
    value: str | dict[str, Any] | None = None
    metric_thresholds: dict[str, float] | None = None


CALIBRATION_TAG = "calibration"  # a case tagged so feeds offline calibration, never the scores


class BenchmarkCase(_Model):
    case_id: str
    description: str
    input: BenchmarkInput
    expected: BenchmarkExpected
    tags: list[str] = Field(default_factory=list)
    difficulty: Difficulty = "medium"
    source: Source = "synthetic"


class BenchmarkSuite(_Model):
    suite_id: str
    name: str
    target: str
    version: str = Field(pattern=r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
    cases: list[BenchmarkCase] = Field(default_factory=list)
    metadata: dict[str, str] = Field(default_factory=dict)


class BenchmarkResult(_Model):
    case_id: str
    status: Status
    actual_output: str | None = None
    latency_ms: float = Field(ge=0.0)
    token_cost: int = Field(ge=0)
    llm_judge_score: float | None = Field(default=None, ge=0.0, le=1.0)
    human_label: str | None = None
    error: str | None = None
    retries: int = Field(default=0, ge=0)
    # extension: per-case metric values under canonical names
    metrics: dict[str, float] = Field(default_factory=dict)
    # extension: ctx_ids in the order they left the window (replay cases)
    evicted: list[str] | None = None


class BenchmarkSummary(_Model):
    pass_rate: float
    mean_latency_ms: float
    p95_latency_ms: float
    total_token_cost: int
    mean_quality_score: float | None = None
    failure_categories: dict[str, int] = Field(default_factory=dict)


class BenchmarkRun(_Model):
    run_id: str
    suite_id: str
    started_at: datetime
    completed_at: datetime | None = None
    config_snapshot: dict[str, Any]
    results: list[BenchmarkResult]
    summary: BenchmarkSummary | None = None
    # extension: which sweep point produced this run
    variant: str | None = None
    repeat: int | None = None
    seed: int | None = None
