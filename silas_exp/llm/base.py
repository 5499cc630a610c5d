"""The one contract every model call goes through.

Callers (the prompt scorer, the main model's keep-backs, probe answers, the
judge, summaries) build an ``LLMRequest`` and get an ``LLMResponse``. Which
backend answers (simulated or Anthropic), caching, retries, concurrency and
cost accounting are the client's business, never the caller's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Task = Literal["scorer", "keepback", "probe_answer", "judge", "summary", "probe_gen"]


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class LLMRequest:
    """One model call.

    ``output_schema`` asks for structured output (a JSON object validated
    against that JSON schema). ``sim`` carries facts only the simulated
    backend may use (e.g. ground truth for the simulated main model); it is
    never sent to a real API and never logged.
    """

    task: Task
    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    max_tokens: int = 1024
    temperature: float = 1.0
    output_schema: Mapping[str, Any] | None = None
    cache_system: bool = False
    sim: Mapping[str, Any] | None = field(default=None, compare=False)
    # overall deadline for the call, retries included (e.g. the scorer's 2 s);
    # None: llm.timeout_s per attempt. Not part of the fingerprint.
    deadline_s: float | None = field(default=None, compare=False)

    def fingerprint(self) -> str:
        """sha256 over everything that reaches a model (not ``sim``)."""
        payload = {
            "task": self.task, "model": self.model, "system": self.system,
            "messages": [[m.role, m.content] for m in self.messages],
            "max_tokens": self.max_tokens, "temperature": self.temperature,
            "output_schema": self.output_schema, "cache_system": self.cache_system,
        }
        blob = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True)
class LLMResponse:
    text: str
    data: dict[str, Any] | None  # parsed, schema-validated structured output
    usage: Usage
    model: str
    backend: str  # "simulated" | "anthropic"
    cached: bool = False
    retries: int = 0
    latency_ms: float = 0.0
    batch: bool = False  # answered through the Message Batches API (half price)


@runtime_checkable
class LLMBackend(Protocol):
    """A backend answers one request; it does no caching or accounting."""

    name: str

    async def acomplete(self, request: LLMRequest, *, namespace: str) -> LLMResponse: ...

    async def abatch(self, requests: list[LLMRequest], *,
                     namespace: str) -> list[LLMResponse | Exception]: ...

    async def aclose(self) -> None: ...
