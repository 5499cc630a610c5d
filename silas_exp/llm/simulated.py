"""The simulated backend: deterministic per (seed, namespace, request), no
network. Answers come from responders registered per task by the code that
owns the task (scorer prompt, keep-backs, probes, judge, summaries); see
docs/simulated_llm.md for what each does."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from silas_exp.errors import LLMError
from silas_exp.llm.base import LLMRequest, LLMResponse, Usage

Responder = Callable[[LLMRequest, np.random.Generator], dict]
_RESPONDERS: dict[str, Responder] = {}


def register_responder(task: str) -> Callable[[Responder], Responder]:
    def deco(fn: Responder) -> Responder:
        _RESPONDERS[task] = fn
        return fn

    return deco


def responder_for(task: str) -> Responder:
    if task not in _RESPONDERS:
        raise LLMError(f"the simulated backend has no responder for task {task!r}; "
                       f"registered: {sorted(_RESPONDERS)}")
    return _RESPONDERS[task]


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 3.5)


_SCHEMA_CHARS: dict[int, tuple[object, int]] = {}
_ANSWER_JSON = json.JSONEncoder(sort_keys=True)


def _schema_chars(schema) -> int:
    """len(json.dumps(schema)), kept per schema object: a task sends the same
    module-level schema on every call (one changed in place after its first
    call would keep its first length)."""
    held = _SCHEMA_CHARS.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    chars = len(json.dumps(schema))
    if len(_SCHEMA_CHARS) >= 64:
        _SCHEMA_CHARS.clear()
    _SCHEMA_CHARS[id(schema)] = (schema, chars)  # the object held: its id is not reused
    return chars


class SimulatedBackend:
    name = "simulated"

    def __init__(self, seed: int, latency_ms: float = 0.0) -> None:
        self.seed, self.latency_ms = seed, latency_ms

    def rng_for(self, request: LLMRequest, namespace: str) -> np.random.Generator:
        digest = hashlib.sha256(f"{self.seed}/{namespace}/{request.fingerprint()}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def answer(self, request: LLMRequest, namespace: str) -> LLMResponse:
        data = responder_for(request.task)(request, self.rng_for(request, namespace))
        text = _ANSWER_JSON.encode(data)  # json.dumps(data, sort_keys=True), without an encoder built per call
        # the prompt's length, as the text a real call sends (system, messages, the schema as a tool)
        chars = len(request.system or "") + sum(len(m.content) for m in request.messages)
        if request.output_schema is not None:
            chars += _schema_chars(request.output_schema)
        usage = Usage(input_tokens=math.ceil(chars / 3.5), output_tokens=_tokens(text))
        return LLMResponse(text=text, data=data, usage=usage, model=request.model,
                           backend=self.name, latency_ms=self.latency_ms)

    async def acomplete(self, request: LLMRequest, *, namespace: str) -> LLMResponse:
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000.0)
        return self.answer(request, namespace)

    async def abatch(self, requests: list[LLMRequest], *,
                     namespace: str) -> list[LLMResponse | Exception]:
        return [replace(self.answer(r, namespace), batch=True) for r in requests]

    async def aclose(self) -> None:
        return None
