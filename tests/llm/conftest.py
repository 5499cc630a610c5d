"""Fixtures: the fake Messages API server and clients of the real SDK pointed at it."""

from __future__ import annotations

import pytest

from silas_exp.llm import LLMRequest, LLMSettings, Message, build_client
from silas_exp.scorers.prompt import SCORES_SCHEMA
from tests.fakes.messages_server import API_KEY, FakeMessagesServer


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    with FakeMessagesServer(slow_s=1.5) as srv:
        yield srv


@pytest.fixture
def make_client(server, tmp_path):
    clients = []

    def _make(**overrides):
        fields = {"backend": "anthropic", "base_url": server.base_url, "timeout_s": 0.5,
                  "max_retry_wait_s": 0.05, "batch_poll_s": 0.02, **overrides}
        c = build_client(LLMSettings(**fields), seed=0, cache_dir=str(tmp_path / "llm"),
                         ledger_path=tmp_path / "spend.sqlite", job_key="test")
        clients.append(c)
        return c

    yield _make
    for c in clients:
        c.close()


def scorer_request(n_items: int = 3, system: str = "You score context items.") -> LLMRequest:
    lines = "\n".join(f"c{i} | chronicle | user_message | age={i} | tokens=10 | ok | - | item {i}"
                      for i in range(n_items))
    return LLMRequest(task="scorer", model="claude-haiku-4-5", system=system, cache_system=True,
                      messages=(Message("user", lines),), temperature=0.0,
                      output_schema=SCORES_SCHEMA)
