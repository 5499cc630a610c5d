"""Cases in flight together against the local Messages API server: the same
results as one case at a time, and a server's rate limit honoured."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.feedback.store import FeedbackStore
from silas_exp.llm import LLMSettings, build_client
from silas_exp.run import calibration as calibration_module
from silas_exp.run import references as references_module
from silas_exp.run.failures import FailureLog
from silas_exp.run.inflight import in_case_order
from silas_exp.run.job import make_job, run_job

# metrics that time the job (or count what a process already held) rather than its results
TIMED = ("latency", "seconds")
# which call writes the API's prompt cache and which reads it depends on which reaches it first
PROMPT_CACHE = ("llm.cost_usd", "llm.cache_read_tokens", "llm.cache_write_tokens",
                "llm.overhead.cost_usd")


def _job(compose, server, out: Path, *overrides: str, monkeypatch, scorer: str = "prompt"):
    # a fresh process's in-memory calibration and reference replays, and a cache of its own
    monkeypatch.setattr(calibration_module, "_CALIBRATIONS", {})
    monkeypatch.setattr(references_module, "_REFERENCES", type(references_module._REFERENCES)())
    cfg = validate(OmegaConf.to_container(compose(
        "tracking=none", f"scorer={scorer}", "model=claude-haiku-4-5", "cases_per_block=null",
        f"llm.base_url={server.base_url}", f"paths.cache={out / 'cache'}", *overrides),
        resolve=True))
    server.max_in_flight = 0
    server._cached_systems.clear()  # the API's prompt cache, cold as for a new study
    return run_job(cfg, make_job(cfg, f"scorer={scorer}"), out)


def _cases(outcome) -> list[dict]:
    rows = [json.loads(line) for line in outcome.results_path.read_text().splitlines()]
    for row in rows:
        row.pop("latency_ms")
        # a prompt-cache write is paid by whichever case's call reaches the API first
        row["metrics"].pop("llm.cost_usd", None)
    return rows


def _feedback(outcome) -> list[list]:
    db = sqlite3.connect(outcome.feedback_db)
    try:
        proposals = db.execute("SELECT proposal_id, scope_id, turn_number, scorer_model, resolved_by, "
                               "evicted, excluded FROM eviction_feedback ORDER BY rowid").fetchall()
        candidates = db.execute("SELECT * FROM eviction_candidates ORDER BY rowid").fetchall()
    finally:
        db.close()
    return [proposals, candidates]


def _cache_keys(out: Path) -> list[str]:
    db = sqlite3.connect(out / "cache" / "llm" / "responses.sqlite")
    try:
        return sorted(k for (k,) in db.execute("SELECT key FROM responses"))
    finally:
        db.close()


def _untimed(metrics: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in metrics.items()
            if not any(t in k for t in TIMED) and k not in PROMPT_CACHE}


@pytest.mark.parametrize("scorer,suite", [
    ("heuristic", "smoke"),  # the main model's keep-backs only
    pytest.param("prompt", "default", marks=pytest.mark.slow),  # + the scorer, calibration, references
])
def test_cases_in_flight_give_the_one_at_a_time_results(compose, server, tmp_path, monkeypatch,
                                                        scorer, suite):
    server.latency_s = 0.01
    shrink = (f"suite={suite}", "suite.max_cases=3")
    one = _job(compose, server, tmp_path / "one", *shrink, "llm.max_connections=1",
               monkeypatch=monkeypatch, scorer=scorer)
    one_in_flight = server.max_in_flight
    many = _job(compose, server, tmp_path / "many", *shrink, monkeypatch=monkeypatch, scorer=scorer)
    assert one_in_flight == 1 and server.max_in_flight > 1  # the cases did overlap
    assert len(_cases(one)) >= 2 and all(c["status"] in ("pass", "fail") for c in _cases(one))
    assert _cases(many) == _cases(one)
    assert _feedback(many) == _feedback(one) and _feedback(one)[0]  # rows, in the same order
    assert _cache_keys(tmp_path / "many") == _cache_keys(tmp_path / "one")
    assert _untimed(many.metrics) == _untimed(one.metrics)
    assert one.metrics["llm.calls"] > 0 and one.metrics["llm.errors"] == 0


def test_a_servers_concurrency_limit_slows_the_job_without_errors(compose, server, tmp_path,
                                                                  monkeypatch, capsys):
    """Beyond K requests at once the server answers 429 with retry-after: the
    limiter holds the job's calls back to what the server accepts, and the
    job ends with every case scored and no call failed."""
    server.latency_s, server.max_concurrent = 0.02, 2
    outcome = _job(compose, server, tmp_path / "limited", "suite.max_cases=6",
                   monkeypatch=monkeypatch, scorer="heuristic")
    cases = _cases(outcome)
    assert len(cases) == 6 and all(c["status"] in ("pass", "fail") for c in cases), cases
    assert outcome.metrics["llm.errors"] == 0, {k: v for k, v in outcome.metrics.items() if "llm" in k}
    assert outcome.metrics["llm.overhead.errors"] == 0
    limited, answered = server.counts["rate_limit"], server.counts["ok"]
    assert server.max_in_flight == 2
    assert limited > 0  # the job did reach the limit ...
    assert limited < 0.1 * answered, (limited, answered)  # ... and was held to it
    out = capsys.readouterr().out
    assert "calls/s" in out and "answered 429" in out


def _runner(latency_ms: float, max_connections: int = 10) -> SimpleNamespace:
    llm = build_client(LLMSettings(simulated_latency_ms=latency_ms, max_connections=max_connections),
                       seed=0, cache_dir=None)
    return SimpleNamespace(llm=llm, store=FeedbackStore(), probe_rows=[], errors=[],
                           failures=FailureLog([]))


@pytest.mark.parametrize("latency_ms,width", [(1.0, 10), (1.0, 1), (0.0, 1)])
def test_cases_come_back_in_case_order_and_an_error_at_its_turn(latency_ms, width):
    """Later cases finish first; each case's rows join the job's at its turn,
    and the case that raised raises after the cases before it, none after."""
    runner = _runner(latency_ms, width)

    def work(part, case: int) -> int:
        time.sleep(0.01 * (5 - case))
        part.probe_rows.append(case)
        if case == 3:
            raise ValueError("case 3 broke")
        return case * 10

    seen = []
    with pytest.raises(ValueError, match="case 3 broke"):
        for case, result in in_case_order(runner, range(6), work):
            seen.append((case, result, list(runner.probe_rows)))
    assert seen == [(0, 0, [0]), (1, 10, [0, 1]), (2, 20, [0, 1, 2])]
    runner.llm.close()


def test_the_largest_cases_start_first_and_come_back_in_case_order():
    runner = _runner(1.0, 2)
    started: list[int] = []

    def work(part, case: int) -> int:
        started.append(case)
        time.sleep(0.01)
        return case * 10

    got = list(in_case_order(runner, range(6), work, size=lambda case: case % 3))
    assert got == [(case, case * 10) for case in range(6)]
    assert sorted(started[:2]) == [2, 5] and sorted(started) == list(range(6))
    runner.llm.close()
