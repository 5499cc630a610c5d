"""The real anthropic SDK against a local Messages API server with faults."""

from __future__ import annotations

import time

import pytest

from silas_exp.errors import BudgetExceeded, ConfigError, LLMError
from silas_exp.llm import LLMSettings, build_client
from tests.fakes.messages_server import API_KEY, Fault
from tests.llm.conftest import scorer_request


def balanced(server, client) -> bool:
    """Every request the server saw is a successful call, a retry or a final error."""
    t = client.accounting.snapshot()
    return server.message_requests == t.calls + t.retries + t.errors


@pytest.mark.parametrize("fault", ["rate_limit", "overloaded", "server_error", "slow", "malformed",
                                   "bad_schema"])
def test_each_transient_fault_ends_as_a_retried_success(server, make_client, fault):
    client = make_client()
    server.inject(fault)
    response = client.complete(scorer_request(), namespace="n")
    assert response.retries == 1
    assert {s["ctx_id"] for s in response.data["scores"]} == {"c0", "c1", "c2"}
    assert server.counts[fault] == 1 and server.counts["ok"] == 1
    assert balanced(server, client)


@pytest.mark.parametrize("fault,reason", [("server_error", "server_error"), ("overloaded", "overloaded"),
                                          ("rate_limit", "rate_limited"), ("malformed", "malformed")])
def test_persistent_fault_is_an_error_with_its_reason(server, make_client, fault, reason):
    client = make_client(max_retries=3)
    server.inject(*[fault] * 4)
    with pytest.raises(LLMError) as err:
        client.complete(scorer_request(), namespace="n")
    assert err.value.reason == reason and err.value.retries == 3
    assert client.accounting.errors_by_reason[reason] == 1
    assert balanced(server, client)


def test_schema_violation_is_retried_once_then_recorded(server, make_client):
    client = make_client()
    server.inject("bad_schema", "bad_schema", "ok")
    with pytest.raises(LLMError) as err:
        client.complete(scorer_request(), namespace="n")
    assert err.value.reason == "schema" and "scores" in str(err.value)
    assert server.message_requests == 2  # retried once, not max_retries times


def test_long_retry_after_is_capped(server, make_client):
    client = make_client()
    server.inject(Fault("rate_limit", retry_after=120))
    t0 = time.perf_counter()
    response = client.complete(scorer_request(), namespace="n")
    assert response.retries == 1
    assert time.perf_counter() - t0 < 5  # waited llm.max_retry_wait_s, not 120 s


def test_retry_after_is_honoured_below_the_cap(server, make_client):
    client = make_client(max_retry_wait_s=5)
    server.inject(Fault("rate_limit", retry_after=0.6))
    t0 = time.perf_counter()
    client.complete(scorer_request(), namespace="n")
    assert time.perf_counter() - t0 >= 0.6


def test_deadline_turns_a_slow_answer_into_a_timeout(server, make_client):
    from dataclasses import replace

    client = make_client(timeout_s=5)
    server.inject("slow")
    with pytest.raises(LLMError) as err:
        client.complete(replace(scorer_request(), deadline_s=0.3), namespace="n")
    assert err.value.reason == "timeout"


def test_non_retryable_errors_fail_at_once(server, make_client):
    client = make_client()
    server.inject("bad_auth")
    with pytest.raises(LLMError) as err:
        client.complete(scorer_request(), namespace="n")
    assert err.value.reason == "auth" and server.message_requests == 1


def test_cache_hits_per_namespace_and_never_stores_errors(server, make_client):
    first = make_client()
    first.complete(scorer_request(), namespace="r0")
    second = make_client()
    again = second.complete(scorer_request(), namespace="r0")
    assert again.cached and server.message_requests == 1
    assert second.accounting.snapshot().cost_usd == 0.0
    other_repeat = second.complete(scorer_request(), namespace="r1")
    assert not other_repeat.cached and server.message_requests == 2  # repeats stay distinct
    server.inject(*["server_error"] * 5)
    with pytest.raises(LLMError):
        second.complete(scorer_request(), namespace="r2")
    ok = second.complete(scorer_request(), namespace="r2")
    assert not ok.cached  # the error was not cached


def test_replay_mode_fails_on_a_miss_and_serves_hits(server, make_client):
    make_client().complete(scorer_request(), namespace="r0")
    replay = make_client(cache_mode="replay")
    assert replay.complete(scorer_request(), namespace="r0").cached
    with pytest.raises(LLMError) as err:
        replay.complete(scorer_request(), namespace="r9")
    assert err.value.reason == "cache_miss" and "cache_mode=replay" in str(err.value)
    assert server.message_requests == 1


def test_concurrency_is_bounded_by_max_connections(server, make_client):
    server.latency_s = 0.05
    client = make_client(max_connections=4)
    requests = [scorer_request(n_items=i + 1) for i in range(20)]
    results = client.complete_many(requests, namespace="n")
    assert all(not isinstance(r, Exception) for r in results)
    assert server.max_in_flight == 4


def test_batches_answer_in_order_at_half_price(server, make_client):
    requests = [scorer_request(n_items=i + 1, system=f"s{i}") for i in range(4)]
    server.inject("ok", "server_error", "bad_schema")
    batched = make_client(batch=True, cache_mode="off").complete_many(requests, namespace="b")
    assert [type(r).__name__ for r in batched] == ["LLMResponse", "LLMError", "LLMError", "LLMResponse"]
    assert batched[1].reason == "batch_errored" and batched[2].reason == "schema"
    assert len(batched[3].data["scores"]) == 4 and batched[3].batch
    assert server.counts["batch_create"] == 1
    plain = make_client(cache_mode="off").complete(requests[3], namespace="x")
    price = plain.usage.input_tokens + plain.usage.output_tokens
    assert price == batched[3].usage.input_tokens + batched[3].usage.output_tokens


def test_prompt_caching_reads_the_system_prompt_on_later_calls(server, make_client):
    client = make_client(cache_mode="off")
    long_system = "Rubric: " + "criterion text " * 300
    first = client.complete(scorer_request(system=long_system), namespace="a")
    second = client.complete(scorer_request(system=long_system), namespace="b")
    assert first.usage.cache_creation_input_tokens > 0 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


def test_a_system_prompt_under_the_models_caching_floor_is_billed_in_full(server, make_client):
    """The server bills prompt caching as the API does: a prompt shorter than the
    model's shortest cacheable prefix is neither written to nor read from the cache."""
    server.min_cache_tokens = {"claude-haiku-4-5": 4096}
    client = make_client(cache_mode="off")
    short = "Rubric: " + "criterion text " * 300  # about 1,300 tokens
    first = client.complete(scorer_request(system=short), namespace="a")
    second = client.complete(scorer_request(system=short), namespace="b")
    assert first.usage.cache_creation_input_tokens == second.usage.cache_read_input_tokens == 0
    assert second.usage.input_tokens == first.usage.input_tokens > 1000


def test_budget_cap_is_shared_by_clients_of_one_ledger(server, make_client):
    a = make_client(max_usd=1.0, cache_mode="off")  # same ledger file as b
    a.complete(scorer_request(5), namespace="a")
    one_call = a.accounting.snapshot().cost_usd
    assert one_call > 0
    b = make_client(max_usd=2.5 * one_call, cache_mode="off")
    with pytest.raises(BudgetExceeded) as err:
        for i in range(10):
            b.complete(scorer_request(5), namespace=f"c{i}")
    assert "llm.max_usd" in str(err.value)
    assert b.accounting.snapshot().calls == 2  # a's spend counted: stops at the first call past the cap


def test_model_ids_and_key_are_checked_with_clear_errors(server, make_client, monkeypatch, tmp_path):
    client = make_client()
    client.check_models(["claude-haiku-4-5"])
    with pytest.raises(ConfigError, match="claude-haiku-9"):
        client.check_models(["claude-haiku-9"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-the-server-key")
    with pytest.raises(ConfigError, match="rejected ANTHROPIC_API_KEY"):
        make_client().check_models(["claude-sonnet-4-5"])
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match="export ANTHROPIC_API_KEY"):
        build_client(LLMSettings(backend="anthropic"), seed=0, cache_dir=None)


def test_api_key_never_in_repr(server, make_client):
    client = make_client()
    assert API_KEY not in repr(client) + repr(client.backend) + repr(client.settings)
