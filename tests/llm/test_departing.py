"""The departing model (tests/fakes/departing.py): the simulated model's answers
at departure 0, need-blind ones at 1, the same answers in process and through
the real SDK against the fake Messages API server."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from silas_exp.feedback.flush import KEEPBACK_SCHEMA, SYSTEM
from silas_exp.llm import LLMRequest, LLMSettings, Message, SimulatedBackend, build_client
from silas_exp.scorers.prompt import SCORES_SCHEMA
from tests.fakes.departing import (
    DepartingBackend,
    departing_overrides,
    departing_responder,
    register_http,
)
from tests.fakes.messages_server import API_KEY, FakeMessagesServer


def keepback(flush: int, n: int = 40) -> LLMRequest:
    lines = "\n".join(f"c{i} | score=0.50 | item {i}" for i in range(n))
    return LLMRequest(task="keepback", model="claude-haiku-4-5", system=SYSTEM, cache_system=True,
                      messages=(Message("user", f"Current goal: step {flush}\nCandidates:\n{lines}"),),
                      temperature=0.0, output_schema=KEEPBACK_SCHEMA,
                      sim={"needed": {f"c{i}": 2 if i % 2 else 0 for i in range(n)},
                           "recall": 0.85, "false_keep": 0.05, "draw": (flush, 0)})


def scorer(n: int = 12) -> LLMRequest:
    lines = "\n".join(f"c{i} | chronicle | user_message | age={i} | tokens=10 | ok | - | item {i}"
                      for i in range(n))
    return LLMRequest(task="scorer", model="claude-haiku-4-5", system="Score.", cache_system=True,
                      messages=(Message("user", lines),), temperature=0.0,
                      output_schema=SCORES_SCHEMA)


def probe_answer() -> LLMRequest:
    return LLMRequest(task="probe_answer", model="claude-haiku-4-5", system="Answer.",
                      messages=(Message("user", "Context:\nran pytest -x\n\nQuestion: which?"),),
                      temperature=0.0, sim={"expected": ["command: pytest -x"]})


def test_departure_zero_answers_as_the_simulated_model():
    sim, dep = SimulatedBackend(5), DepartingBackend(5, 0.0)
    for r in (keepback(1), scorer(), probe_answer()):
        assert dep.answer(r, "ns").data == sim.answer(r, "ns").data


def test_departure_replaces_that_share_of_decisions_with_need_blind_ones():
    sim = SimulatedBackend(5)
    kept = {d: [] for d in (0.0, 0.3, 1.0)}
    changed = {d: 0 for d in kept}
    for flush in range(200):
        r = keepback(flush)
        base = set(sim.answer(r, "ns").data["exclude_ctx_ids"])
        for d in kept:
            got = set(DepartingBackend(5, d).answer(r, "ns").data["exclude_ctx_ids"])
            kept[d] += [(int(c[1:]) % 2, c in got) for c in r.sim["needed"]]
            changed[d] += len(got ^ base)
    rate = {d: {needed: np.mean([k for n, k in rows if n == needed]) for needed in (0, 1)}
            for d, rows in kept.items()}
    assert rate[0.0][1] > 0.8 and rate[0.0][0] < 0.1  # the simulator keeps what is needed
    # unrelated: the same overall rate, blind to need
    assert abs(rate[1.0][1] - rate[1.0][0]) < 0.05
    assert abs((rate[1.0][1] + rate[1.0][0]) - (rate[0.0][1] + rate[0.0][0])) < 0.05
    assert changed[0.0] == 0 < changed[0.3] < changed[1.0]
    # the same request departs alike every time (deterministic per seed and namespace)
    r = keepback(3)
    assert DepartingBackend(5, 0.3).answer(r, "ns").data == DepartingBackend(5, 0.3).answer(r, "ns").data


def test_the_fake_server_answers_through_the_real_sdk_as_the_backend_does(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    name = register_http()
    requests = [keepback(f) for f in range(5)] + [scorer(), probe_answer()]
    for d in (0.0, 0.5):
        with FakeMessagesServer(responder=departing_responder(d)) as srv, \
                tempfile.TemporaryDirectory() as tmp:
            client = build_client(LLMSettings(backend=name, base_url=srv.base_url), seed=11,
                                  cache_dir=tmp)
            try:
                for r in requests:
                    want = DepartingBackend(11, d).answer(r, "case-1").data
                    got = client.complete(r, namespace="case-1")
                    assert got.backend == "anthropic"
                    assert (got.data if r.output_schema else {"text": got.text}) == want, (d, r.task)
            finally:
                client.close()
            assert srv.message_requests == len(requests)


def _relevance(extra: list[str], tmp: str) -> dict[str, float]:
    from silas_exp.config import compose_config
    from silas_exp.run.job import make_job, run_job

    cfg = compose_config(["seed=3", "repeat=0", "cases_per_block=null", "suite.max_cases=4",
                          "tracking=none", "llm.cache_mode=off", f"paths.cache={tmp}/cache",
                          "scorer=weights", *extra])
    out = run_job(cfg, make_job(cfg, "scorer=weights"), Path(tmp) / "job")
    return {r.case_id: r.metrics["context.retrieval_relevance"] for r in out.results()}


@pytest.mark.slow
def test_a_job_at_departure_zero_is_the_simulated_job_and_one_at_one_is_not(tmp_path):
    sim = _relevance([], str(tmp_path / "s"))
    assert _relevance(departing_overrides(0.0), str(tmp_path / "d0")) == sim
    assert _relevance(departing_overrides(1.0), str(tmp_path / "d1")) != sim
