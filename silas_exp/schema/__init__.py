"""Pydantic models: §19.2 eviction feedback, §20.2 benchmarks, replay sessions."""

from silas_exp.schema.benchmark import (
    BenchmarkCase,
    BenchmarkExpected,
    BenchmarkInput,
    BenchmarkResult,
    BenchmarkRun,
    BenchmarkSuite,
    BenchmarkSummary,
)
from silas_exp.schema.eviction import (
    ContextZone,
    EvictionCandidate,
    EvictionExclusion,
    EvictionFeedback,
    EvictionProposal,
)
from silas_exp.schema.session import Reference, Session, SessionItem, SessionTruth

__all__ = [
    "BenchmarkCase",
    "BenchmarkExpected",
    "BenchmarkInput",
    "BenchmarkResult",
    "BenchmarkRun",
    "BenchmarkSuite",
    "BenchmarkSummary",
    "ContextZone",
    "EvictionCandidate",
    "EvictionExclusion",
    "EvictionFeedback",
    "EvictionProposal",
    "Reference",
    "Session",
    "SessionItem",
    "SessionTruth",
]
