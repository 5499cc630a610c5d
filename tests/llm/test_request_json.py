"""A request's fingerprint is the sha256 of its JSON; ``request_json`` writes
that JSON in parts and must give the text ``json.dumps`` gives, byte for byte
(the simulated backend seeds its generators from the fingerprint)."""

from __future__ import annotations

import hashlib

import pytest

from silas_exp.feedback.flush import KEEPBACK_SCHEMA, SYSTEM
from silas_exp.llm.base import LLMRequest, Message, request_json

SCHEMA = {"type": "object", "properties": {"x": {"type": "number"}}}

REQUESTS = [
    LLMRequest(task="keepback", model="claude-sonnet-4-5", system=SYSTEM, cache_system=True,
               messages=(Message("user", 'Candidates:\nc1 | score=0.25 | "quoted" \\ é \u2028 \x00\t'),),
               max_tokens=1024, temperature=0.0, output_schema=KEEPBACK_SCHEMA),
    LLMRequest(task="scorer", model="m", messages=(Message("user", "a"), Message("assistant", "b")),
               temperature=-0.0),
    LLMRequest(task="scorer", model="m", messages=(Message("user", "a"),), temperature=0.0),
    LLMRequest(task="scorer", model="m", messages=(), temperature=float("nan")),
    LLMRequest(task="judge", model="m", messages=(Message("user", "😀 emoji"),), output_schema=SCHEMA),
    # members of other types than the usual ones: through json.dumps itself
    LLMRequest(task="scorer", model="m", messages=(Message("user", 5),)),  # type: ignore[arg-type]
    LLMRequest(task="scorer", model="m", messages=(Message("user", "x"),), temperature=1,  # type: ignore[arg-type]
               max_tokens=True),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("request_", REQUESTS + REQUESTS)  # twice: the kept tails are read back
def test_request_json_is_the_text_json_dumps_gives(request_):
    assert request_json(request_) == request_._json()
    assert request_.fingerprint() == hashlib.sha256(request_._json().encode()).hexdigest()


def test_zero_and_minus_zero_temperature_keep_their_own_text():
    hot = LLMRequest(task="scorer", model="m", messages=(), temperature=0.0)
    cold = LLMRequest(task="scorer", model="m", messages=(), temperature=-0.0)
    assert request_json(hot) == hot._json() and request_json(cold) == cold._json()
    assert hot.fingerprint() != cold.fingerprint()


def test_a_new_schema_object_is_encoded_anew():
    first = LLMRequest(task="judge", model="m", messages=(), output_schema={"type": "object"})
    other = LLMRequest(task="judge", model="m", messages=(), output_schema={"type": "array"})
    assert request_json(first) == first._json() and request_json(other) == other._json()
