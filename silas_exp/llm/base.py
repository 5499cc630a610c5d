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
from json.encoder import encode_basestring_ascii
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
        """sha256 over everything that reaches a model (not ``sim``): of the
        request's JSON (``request_json``)."""
        return hashlib.sha256(request_json(self).encode()).hexdigest()

    def _json(self) -> str:
        """The request's JSON as one ``json.dumps`` writes it (keys sorted, no spaces)."""
        payload = {
            "task": self.task, "model": self.model, "system": self.system,
            "messages": [[m.role, m.content] for m in self.messages],
            "max_tokens": self.max_tokens, "temperature": self.temperature,
            "output_schema": self.output_schema, "cache_system": self.cache_system,
        }
        return json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))


# JSON text of the members after "messages" (model, output_schema, system, task,
# temperature), per call site: key -> (schema object held, text)
_TAILS: dict[tuple, tuple[object, str]] = {}


def request_json(request: LLMRequest) -> str:
    """``request._json()``, the same text, written in parts (byte for byte: the fingerprints, and so the simulated
    backend's random streams, are unchanged): a call site sends the
    same model, system prompt, schema, task and temperature on every call, so the
    JSON of those members is kept per call site (the schema by object: one changed
    in place after its first call would keep its first text) and only the messages
    are encoded each time, string by string. A request with members of other types
    than the usual ones (a str model, an int max_tokens …) takes ``_json``."""
    r = request
    if not (type(r.model) is str and type(r.task) is str and type(r.max_tokens) is int
            and type(r.cache_system) is bool and type(r.temperature) is float
            and (r.system is None or type(r.system) is str)):
        return r._json()
    schema = r.output_schema
    key = (r.model, r.system, r.task, r.temperature.hex(), id(schema))  # hex: -0.0 is not 0.0
    held = _TAILS.get(key)
    if held is None or held[0] is not schema:
        tail = json.dumps({"model": r.model, "output_schema": schema, "system": r.system,
                           "task": r.task, "temperature": r.temperature},
                          sort_keys=True, default=str, separators=(",", ":"))
        if len(_TAILS) >= 64:
            _TAILS.clear()
        _TAILS[key] = held = (schema, tail[1:])  # the object held: its id is not reused
    enc = encode_basestring_ascii
    try:
        messages = ",".join([f"[{enc(m.role)},{enc(m.content)}]" for m in r.messages])
    except TypeError:  # a role or content that is not a str: json.dumps's default=str
        return r._json()
    return (f'{{"cache_system":{"true" if r.cache_system else "false"},"max_tokens":{r.max_tokens},'
            f'"messages":[{messages}],{held[1]}')


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
