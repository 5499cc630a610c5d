"""What a simulated study spends: prompt caching as the API bills it, the
reference replays a variant pays again beside its control, the account's
limits on the pace."""

from __future__ import annotations

import pytest

from silas_exp.config import PlanConfig
from silas_exp.llm.settings import DEFAULT_PRICES
from silas_exp.plan.spend import RACE_SHARE, caching_saving, job_seconds, job_spend, launch
from silas_exp.run.twin import TwinJob


def _job(chars: int, calls: int = 1000, model: str = "claude-sonnet-4-5") -> TwinJob:
    return TwinJob("scorer=prompt", 0, 0, {}, {}, {"llm.calls": float(calls),
                                                 "llm.calls.scorer": float(calls),
                                                 "llm.cost_usd_simulated": 20.0,
                                                 "llm.output_tokens": 100.0 * calls},
                   cpu_s=2.0, wall_s=2.0, prefixes={"scorer": [model, chars]})


def test_a_system_prompt_under_the_models_floor_is_billed_in_full():
    ps = PlanConfig()  # no floors given: 1,024 tokens
    assert caching_saving(_job(chars=3500), DEFAULT_PRICES, ps) == 0.0  # 1,000 tokens


def test_a_long_system_prompt_is_read_from_the_cache_after_one_write():
    ps = PlanConfig()
    price = DEFAULT_PRICES["claude-sonnet-4-5"]
    tokens, calls = 2000, 1000
    saved = caching_saving(_job(chars=tokens * 35 // 10, calls=calls), DEFAULT_PRICES, ps)
    expected = tokens * (calls * (price.input - price.cache_read)
                         - (price.cache_write - price.cache_read)) / 1e6
    assert saved == pytest.approx(expected)
    spend = job_spend(_job(chars=tokens * 35 // 10, calls=calls), DEFAULT_PRICES, ps,
                      "claude-sonnet-4-5")
    assert spend.usd == pytest.approx(20.0 - expected)
    # a model whose floor is higher (Haiku 4.5: 4,096 tokens) caches nothing of it
    floors = PlanConfig(models={"claude-haiku-4-5": {"min_cache_tokens": 4096}})
    assert caching_saving(_job(tokens * 35 // 10, calls, "claude-haiku-4-5"), DEFAULT_PRICES,
                          floors) == 0.0


def test_a_job_is_as_long_as_its_cpu_or_its_calls_at_the_pace_of_cases_in_flight():
    ps = PlanConfig(answer_s=1.0, cpu_ms_per_call=0.0)
    spend = job_spend(_job(0, calls=890), DEFAULT_PRICES, ps, "claude-haiku-4-5")
    assert job_seconds(spend, 1.0, 10, ps) == pytest.approx(890 / (10 * 0.89) + 1.0)
    fast = PlanConfig(answer_s=0.001, cpu_ms_per_call=0.0)
    quick = job_spend(_job(0, calls=890), DEFAULT_PRICES, fast, "claude-haiku-4-5")
    assert job_seconds(quick, 1.0, 10, fast) == pytest.approx(2.0 + 1.0)  # its CPU


def test_a_variant_started_beside_its_control_pays_part_of_the_references_again():
    ps = PlanConfig()
    batch = [("control", True, (0, 0), 10.0, 300.0, 0.3, 0.1),
             ("a", False, (0, 0), 10.0, 300.0, 0.3, 0.1),
             ("b", False, (0, 0), 10.0, 300.0, 0.3, 0.1)]
    two = launch(batch, workers=2, connections=10, settings=ps)
    assert two.race_calls == pytest.approx(RACE_SHARE * 300)  # a beside the control; b after
    one = launch(batch, workers=1, connections=10, settings=ps)
    assert one.race_calls == 0.0 and one.seconds > two.seconds
    three = launch(batch, workers=3, connections=10, settings=ps)
    assert three.race_calls == pytest.approx(2 * RACE_SHARE * 300)


def test_the_accounts_rate_limit_caps_a_launch():
    batch = [("control", True, (0, 0), 10.0, 600.0, 0.3, 0.1)]
    free = launch(batch, 2, 10, PlanConfig())
    capped = launch(batch, 2, 10, PlanConfig(requests_per_minute=600))  # 600 calls: a minute
    assert free.seconds < 60 < capped.seconds
    in_flight = launch(batch, 2, 10, PlanConfig(max_in_flight=1))  # 600 × 0.1 s, one at a time
    assert in_flight.seconds >= 600 * 0.1 / 0.89
