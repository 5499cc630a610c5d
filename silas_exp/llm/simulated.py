"""The simulated backend: deterministic per (seed, namespace, request), no
network. Answers come from responders registered per task by the code that
owns the task (scorer prompt, keep-backs, probes, judge, summaries); see
docs/simulated_llm.md for what each does.

A responder draws its randomness in one of two ways:

- from a generator seeded by the request: sha256 of the seed, the namespace
  and the request's fingerprint (``rng_for``). Any change to what the model
  is shown gives other draws.
- ``keyed=True``: from ``KeyedDraws``, counter-based uniforms keyed by the
  seed, the namespace, the task, a counter the caller passes in
  ``request.sim["draw"]`` and a name (the simulated main model: (turn, flush
  of the turn) and a candidate's ctx_id). The same candidate at the same
  flush gets the same uniform whatever else the proposal holds, so the
  variants of one repeat, which share its namespace, draw common random
  numbers item by item (their paired differences lose that noise), and a
  call costs no request hash and no generator set-up.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from silas_exp.errors import LLMError
from silas_exp.llm.base import LLMRequest, LLMResponse, Usage

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15  # splitmix64's increment: 2**64 / the golden ratio, odd
_UNIT = 2.0 ** -53
_STANDARD_NORMAL = NormalDist()


def mix64(z: int) -> int:
    """splitmix64's output function (Steele, Lea & Flood, "Fast splittable
    pseudorandom number generators", OOPSLA 2014): a bijection of 64-bit ints
    whose outputs for consecutive inputs pass BigCrush. Plain int arithmetic,
    so a compiled kernel can give the same bits."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _MASK
    return z ^ (z >> 31)


@lru_cache(maxsize=1 << 16)
def key64(text: str) -> int:
    """A 64-bit key of ``text`` (blake2b, 8 bytes, little-endian): stable across
    processes and machines, unlike ``hash``; kept per text, since a replay names
    the same ctx_ids and namespaces again and again."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


class KeyedDraws:
    """Counter-based uniforms in [0, 1): ``uniform(counter, name)`` is a pure
    function of (seed, namespace, stream, counter, name), drawn in any order
    and any number of times with the same result. A counter step folds one int
    into the key with splitmix64's increment and output function; a name is
    XORed in as its ``key64``; the top 53 bits of the last mix make the float."""

    __slots__ = ("_key",)

    def __init__(self, seed: int, namespace: str, stream: str) -> None:
        self._key = key64(f"{seed}/{namespace}/{stream}")

    def _at(self, counter: Sequence[int]) -> int:
        k = self._key
        for c in counter:
            k = mix64((k + (c + 1) * _GAMMA) & _MASK)
        return k

    def _bits(self, counter: Sequence[int], name: str) -> int:
        """The 53 bits a draw of (counter, name) is made of."""
        return mix64(self._at(counter) ^ key64(name)) >> 11

    def uniform(self, counter: Sequence[int], name: str = "") -> float:
        return self._bits(counter, name) * _UNIT

    def normal(self, counter: Sequence[int], name: str = "") -> float:
        """A standard normal: the inverse normal CDF of the uniform's 53 bits
        moved half a step into the open interval (0, 1)."""
        return _STANDARD_NORMAL.inv_cdf((self._bits(counter, name) + 0.5) * _UNIT)

    def uniforms(self, counter: Sequence[int], names: Sequence[str]) -> list[float]:
        """``uniform(counter, n)`` for each of ``names``, the counter folded once."""
        k = self._at(counter)
        return [(mix64(k ^ key64(n)) >> 11) * _UNIT for n in names]


Responder = Callable[[LLMRequest, "np.random.Generator | KeyedDraws"], dict]
_RESPONDERS: dict[str, Responder] = {}
_KEYED: set[str] = set()  # tasks whose responder takes KeyedDraws


def register_responder(task: str, *, keyed: bool = False) -> Callable[[Responder], Responder]:
    """Register the simulated model of ``task``. ``keyed``: it is handed
    ``KeyedDraws`` (stream: the task) instead of a generator seeded by the request."""
    def deco(fn: Responder) -> Responder:
        _RESPONDERS[task] = fn
        if keyed:
            _KEYED.add(task)
        else:
            _KEYED.discard(task)
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
        task = request.task
        draws = (KeyedDraws(self.seed, namespace, task) if task in _KEYED
                 else self.rng_for(request, namespace))
        data = responder_for(task)(request, draws)
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
