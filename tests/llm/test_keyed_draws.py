"""Counter-based draws of the simulated backend: pure functions of their key,
uniform and normal as claimed, and item-level common random numbers for the
simulated main model's keep-backs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from silas_exp.feedback.flush import KeepBackBroker, KeepbackConfig, MainModel
from silas_exp.feedback.store import DiscardingStore
from silas_exp.llm import LLMSettings, build_client
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.llm.simulated import KeyedDraws, SimulatedBackend, mix64
from silas_exp.schema.eviction import CandidateRecord, ContextZone, ProposalRecord


def test_mix64_is_splitmix64s_output_function():
    # splitmix64 seeded with 0: its first output is mix64(0 + gamma), the
    # published first value 0xE220A8397B1DCDAF
    assert mix64(0x9E3779B97F4A7C15) == 0xE220A8397B1DCDAF


def test_a_draw_depends_on_its_key_only():
    d = KeyedDraws(7, "r0-s7/case-1", "keepback")
    names = [f"c{i}" for i in range(50)]
    u = d.uniforms((12, 0), names)
    assert u == [d.uniform((12, 0), n) for n in names]
    assert d.uniforms((12, 0), names[::-1]) == u[::-1]  # order and company do not matter
    assert KeyedDraws(7, "r0-s7/case-1", "keepback").uniforms((12, 0), names) == u
    # each part of the key moves every draw
    for other in (KeyedDraws(8, "r0-s7/case-1", "keepback").uniforms((12, 0), names),
                  KeyedDraws(7, "r1-s7/case-1", "keepback").uniforms((12, 0), names),
                  KeyedDraws(7, "r0-s7/case-1", "other").uniforms((12, 0), names),
                  d.uniforms((13, 0), names), d.uniforms((12, 1), names)):
        assert sum(a == b for a, b in zip(u, other, strict=True)) == 0


def test_uniforms_are_uniform_and_normals_normal():
    d = KeyedDraws(0, "ns", "check")
    u = np.array([d.uniform((t, k)) for t in range(2000) for k in range(5)])
    assert ((u >= 0) & (u < 1)).all()
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    z = np.array([d.normal((t,), "latency") for t in range(10000)])
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # neighbouring counters and names are not correlated
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.05
    names = np.array(d.uniforms((3, 0), [f"tool-{i:04d}" for i in range(10000)]))
    assert stats.kstest(names, "uniform").pvalue > 1e-3


def _request(needed: dict[str, int], draw=(5, 0)) -> LLMRequest:
    return LLMRequest(task="keepback", model="m", messages=(Message("user", "x"),),
                      sim={"needed": needed, "recall": 0.5, "false_keep": 0.5, "draw": draw})


def test_a_candidate_is_kept_alike_whatever_else_its_proposal_holds():
    """Item-level common random numbers: the same candidate at the same flush
    of the same repeat gets the same keep-back decision in any proposal."""
    backend = SimulatedBackend(seed=3)
    base = {f"c{i:02d}": i % 4 for i in range(40)}
    kept = set(backend.answer(_request(base), "r0-s3/case").data["exclude_ctx_ids"])
    assert 5 < len(kept) < 35
    half = dict(list(base.items())[::2])
    assert set(backend.answer(_request(half), "r0-s3/case").data["exclude_ctx_ids"]) \
        == kept & set(half)
    # another flush, or another repeat, draws anew
    assert set(backend.answer(_request(base, (6, 0)), "r0-s3/case").data["exclude_ctx_ids"]) != kept
    assert set(backend.answer(_request(base), "r1-s3/case").data["exclude_ctx_ids"]) != kept


def _proposal(turn: int, ids: list[str]) -> ProposalRecord:
    from datetime import UTC, datetime
    return ProposalRecord(f"s:{turn}", "s", turn, datetime.now(UTC), "scorer",
                          tuple(CandidateRecord(c, ContextZone.CHRONICLE, 0.5, 1, 10) for c in ids))


class _Item:
    def __init__(self, cid: str) -> None:
        self.ctx_id, self.snippet, self.kind, self.status = cid, cid, "user_message", None
        self.masked, self.completed_turn, self.relevance = False, None, None


@pytest.mark.parametrize("sigma", [0.6, 1.5])
def test_flush_latency_is_log_normal_and_keyed_by_the_flush(sigma):
    llm = build_client(LLMSettings(cache_mode="off"), seed=3, cache_dir=None)
    settings = MainModel("m", "simulated", KeepbackConfig(
        latency_median_ms=700.0, latency_sigma=sigma, eviction_feedback_timeout_ms=1e9))
    broker = KeepBackBroker(settings, llm, DiscardingStore(), "r0-s3/case", 3, lambda c, t, h: 0)
    items = {"a": _Item("a")}
    lat = np.array([broker.resolve(_proposal(t, ["a"]), items, t).latency_ms for t in range(3000)])
    z = np.log(lat / 700.0) / sigma
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # a second flush at the same turn draws its own latency; a new broker of the
    # same repeat and case draws the same ones
    again = KeepBackBroker(settings, llm, DiscardingStore(), "r0-s3/case", 3, lambda c, t, h: 0)
    first = again.resolve(_proposal(10, ["a"]), items, 10).latency_ms
    second = again.resolve(_proposal(10, ["a"]), items, 10).latency_ms
    assert first == pytest.approx(lat[10], rel=1e-12) and second != first


def test_a_keep_back_request_without_a_flush_counter_is_keyed_by_its_content():
    backend = SimulatedBackend(seed=3)
    needed = {f"c{i:02d}": 0 for i in range(40)}

    def kept(request):
        return backend.answer(request, "ns").data["exclude_ctx_ids"]

    def bare(text):
        return LLMRequest(task="keepback", model="m", messages=(Message("user", text),),
                          sim={"needed": needed, "false_keep": 0.5})

    assert kept(bare("a")) == kept(bare("a"))
    assert kept(bare("a")) != kept(bare("b"))
