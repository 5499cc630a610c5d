"""scripts/compare_sweeps.py: outcomes compared exactly; billing (which call
reached the API or the response cache first) reported apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from silas_exp.metrics.registry import spec

REPO = Path(__file__).resolve().parents[2]


def _sweep(folder: Path, cases: list[dict], job_metrics: dict[str, float]) -> Path:
    job = folder / "0"
    job.mkdir(parents=True)
    job.joinpath("results.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    job.joinpath("result.json").write_text(json.dumps({"metrics": job_metrics}))
    return folder


def _case(case_id: str, relevance: float, calls: float, hits: float, cost: float,
          retries: int = 0) -> dict:
    return {"case_id": case_id, "status": "pass", "latency_ms": 1.0, "token_cost": 900,
            "retries": retries, "metrics": {
                "context.retrieval_relevance": relevance, "llm.calls": calls,
                "llm.cache_hits": hits, "llm.cost_usd": cost, "llm.input_tokens": 800.0}}


def _compare(a: Path, b: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "compare_sweeps.py"), str(a), str(b),
                           *flags], capture_output=True, text=True, timeout=120)


def test_billing_is_declared_on_the_metrics_that_depend_on_which_call_came_first():
    assert all(spec(k).billing for k in ("llm.calls", "llm.cache_hits", "llm.cost_usd",
                                         "llm.cache_write_tokens", "llm.overhead.cost_usd"))
    assert not any(spec(k).billing for k in ("llm.input_tokens", "llm.errors",
                                             "context.retrieval_relevance"))


def test_the_same_answers_billed_differently_are_identical_with_the_billing_apart(tmp_path):
    # one at a time: case a pays a prompt-cache write; in flight case b did, and a call of
    # case b was answered from the response cache (another job asked for it first)
    one = _sweep(tmp_path / "one", [_case("a", 0.5, 10, 0, 0.03), _case("b", 0.7, 12, 0, 0.02)],
                 {"llm.calls": 22, "llm.cost_usd": 0.05})
    many = _sweep(tmp_path / "many", [_case("a", 0.5, 10, 0, 0.02),
                                      _case("b", 0.7, 11, 1, 0.029, retries=2)],
                  {"llm.calls": 21, "llm.cost_usd": 0.049, "llm.overhead.calls": 1,
                   "llm.overhead.cost_usd": 0.001})
    res = _compare(one, many)
    assert res.returncode == 0, res.stdout
    assert res.stdout.splitlines()[-1].endswith("IDENTICAL (billing apart: above)")
    assert "billing differs in 5 value(s) of 2 case result(s)" in res.stdout
    assert "llm.calls: 22 vs 21 (-1)" in res.stdout and "llm.cache_hits: 0 vs 1 (+1)" in res.stdout
    assert "llm.cost_usd: $0.0500 vs $0.0490 (-$0.0010)" in res.stdout
    assert "billed in all (llm.* and llm.overhead.* of every job): calls 22 vs 22" in res.stdout
    strict = _compare(one, many, "--strict")
    assert strict.returncode == 1 and "5 differences" in strict.stdout


def test_an_outcome_that_differs_is_a_difference_whatever_the_billing(tmp_path):
    one = _sweep(tmp_path / "one", [_case("a", 0.5, 10, 0, 0.03)], {})
    other = _sweep(tmp_path / "other", [_case("a", 0.6, 9, 1, 0.02)], {})
    res = _compare(one, other)
    assert res.returncode == 1
    assert "jobs/0[0]/metrics/context.retrieval_relevance: 0.5 vs 0.6" in res.stdout
    assert "1 differences (billing apart: above)" in res.stdout
