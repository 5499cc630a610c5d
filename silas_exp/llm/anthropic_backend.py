"""Real Claude through the official ``anthropic`` SDK (async client).

* Structured output: a JSON-schema request becomes one forced tool
  (``tool_choice`` = that tool); the tool input is the answer, validated with
  ``jsonschema``. An answer that breaks the schema is retried like a
  transient fault and, if it keeps failing, reported as ``reason=schema``.
* Retries: the SDK's are off (``max_retries=0``); ``silas_exp.llm.retry``
  caps every wait, including a server's ``retry-after``.
* Rate limits: every request goes through the backend's ``RateLimiter``
  (``silas_exp.llm.limiter``), which reads the ``anthropic-ratelimit-*``
  headers of every answer and a 429's ``retry-after``.
* Prompt caching: ``cache_system`` marks the system prompt (judge rubric,
  scorer instructions) with ``cache_control: ephemeral``.
* Message Batches (``llm.batch=true``): ``abatch`` submits many requests as
  one batch, polls until it ends and maps results back by ``custom_id``.
* The API key comes from ``ANTHROPIC_API_KEY`` only; it is never part of a
  config, a fingerprint, a log line or an artifact.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anthropic
import jsonschema

from silas_exp.errors import ConfigError, LLMError
from silas_exp.llm.base import LLMRequest, LLMResponse, Usage, request_json
from silas_exp.llm.limiter import RateLimiter, SharedPause
from silas_exp.llm.retry import RETRYABLE, backoff, retry_after_s
from silas_exp.llm.settings import LLMSettings

TOOL_NAME = "answer"
# one INFO line per HTTP request would drown the job log
for _name in ("httpx2", "httpx", "anthropic"):
    logging.getLogger(_name).setLevel(logging.WARNING)


def _api_key() -> str:
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if not key:
        raise ConfigError(
            "model backend 'anthropic' needs an API key: export ANTHROPIC_API_KEY=... (keep it out "
            "of config files; silas_exp never logs it). For an offline run use model=simulated.")
    return key


def request_params(request: LLMRequest) -> dict[str, Any]:
    """Messages API parameters for one request. ``request.temperature`` is not
    sent: the Messages API of SDK 2.x has no sampling-temperature parameter;
    repeatability comes from the response cache and from judge repeats."""
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
    }
    if request.system:
        block: dict[str, Any] = {"type": "text", "text": request.system}
        if request.cache_system:
            block["cache_control"] = {"type": "ephemeral"}
        params["system"] = [block]
    if request.output_schema is not None:
        params["tools"] = [{
            "name": TOOL_NAME,
            "description": "Return your answer as structured data matching the input schema.",
            "input_schema": dict(request.output_schema),
        }]
        params["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
    return params


def _classify(exc: BaseException) -> str:
    if isinstance(exc, anthropic.RateLimitError):
        return "rate_limited"
    if isinstance(exc, anthropic.APIStatusError) and exc.status_code == 529:
        return "overloaded"
    if isinstance(exc, anthropic.InternalServerError):
        return "server_error"
    if isinstance(exc, anthropic.APITimeoutError | TimeoutError):
        return "timeout"
    if isinstance(exc, anthropic.APIConnectionError):
        return "connection"
    if isinstance(exc, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return "auth"
    if isinstance(exc, anthropic.NotFoundError):
        return "not_found"
    if isinstance(exc, anthropic.APIStatusError):
        return "bad_request"
    if isinstance(exc, anthropic.APIResponseValidationError | json.JSONDecodeError | ValueError):
        return "malformed"
    return "error"


def input_tokens(request: LLMRequest) -> int:
    """The request's input tokens as the heuristic counts them (chars / 3.5):
    what the limiter weighs against the input-token limits left."""
    return int(len(request_json(request)) / 3.5)


class _SchemaViolation(Exception):
    pass


_VALIDATORS: dict[str, Any] = {}


def _validator(schema: Any) -> Any:
    """A checked validator per schema, built once (``jsonschema.validate`` would
    re-check the schema against its meta-schema on every answer: ~4 ms each)."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(dict(schema))
        cls.check_schema(dict(schema))
        _VALIDATORS[key] = cls(dict(schema))
    return _VALIDATORS[key]


def parse_message(message: Any, request: LLMRequest, *, latency_ms: float, retries: int,
                  batch: bool = False) -> LLMResponse:
    """An SDK ``Message`` -> ``LLMResponse``; raises _SchemaViolation when a
    structured answer is missing or breaks the requested schema."""
    texts, data = [], None
    for block in getattr(message, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use" and block.name == TOOL_NAME:
            data = block.input
    if request.output_schema is not None:
        if not isinstance(data, dict):
            raise _SchemaViolation("the answer has no structured (tool) output")
        try:
            _validator(request.output_schema).validate(data)
        except jsonschema.ValidationError as exc:
            path = "/".join(str(p) for p in exc.absolute_path) or "<root>"
            raise _SchemaViolation(f"answer breaks the schema at {path}: {exc.message}") from None
    u = message.usage
    usage = Usage(
        input_tokens=int(u.input_tokens or 0), output_tokens=int(u.output_tokens or 0),
        cache_read_input_tokens=int(getattr(u, "cache_read_input_tokens", 0) or 0),
        cache_creation_input_tokens=int(getattr(u, "cache_creation_input_tokens", 0) or 0),
    )
    text = json.dumps(data, sort_keys=True) if data is not None else "".join(texts)
    return LLMResponse(text=text, data=data, usage=usage, model=request.model, backend="anthropic",
                       retries=retries, latency_ms=latency_ms, batch=batch)


class AnthropicBackend:
    name = "anthropic"

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self._key = _api_key()
        self._client: anthropic.AsyncAnthropic | None = None
        self._checked: set[str] = set()
        shared = SharedPause(Path(settings.cache_dir) / "rate_limit_pause") if settings.cache_dir \
            else None  # a 429's pause, for every process of the sweep
        self.limiter = RateLimiter(settings.max_connections, max_wait_s=settings.max_retry_wait_s,
                                   shared=shared)

    def __repr__(self) -> str:  # never shows the key
        return f"AnthropicBackend(base_url={self.settings.base_url!r})"

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        # created lazily on the client's event-loop thread
        if self._client is None:
            self._client = anthropic.AsyncAnthropic(
                api_key=self._key, base_url=self.settings.base_url, max_retries=0,
                timeout=self.settings.timeout_s)
        return self._client

    async def check_models(self, model_ids: Sequence[str]) -> None:
        """Ask the API once per id; an unknown id stops the job before any work."""
        for model_id in sorted(set(model_ids) - self._checked):
            try:
                await self.client.models.retrieve(model_id)
            except anthropic.NotFoundError:
                raise ConfigError(
                    f"model id {model_id!r} is not known to the Anthropic API at "
                    f"{self.settings.base_url or 'the default endpoint'}. Fix model.scorer_id / "
                    "model.main_id / model.judge_id (see conf/model/).") from None
            except anthropic.AuthenticationError:
                raise ConfigError("the Anthropic API rejected ANTHROPIC_API_KEY (401). Check the "
                                  "key in your environment.") from None
            except anthropic.APIError as exc:
                raise LLMError(f"could not check model id {model_id!r}: {_classify(exc)}: "
                               f"{type(exc).__name__}", reason=_classify(exc)) from None
            self._checked.add(model_id)

    def request_headers(self, request: LLMRequest, namespace: str) -> dict[str, str] | None:
        """Extra HTTP headers of one request: none. A backend built on this one
        for a test server may send what that server needs to answer."""
        return None

    async def _attempt(self, request: LLMRequest, timeout: float, retries: int,
                       headers: dict[str, str] | None = None) -> LLMResponse:
        t0 = time.perf_counter()
        raw = await self.client.messages.with_raw_response.create(**request_params(request),
                                                                  timeout=timeout,
                                                                  extra_headers=headers)
        self.limiter.observe(raw.headers)
        message = await raw.parse()
        return parse_message(message, request, latency_ms=(time.perf_counter() - t0) * 1000.0,
                             retries=retries)

    async def _with_retries(self, request: LLMRequest, deadline: float | None, ticket: int,
                            tokens: int, headers: dict[str, str] | None = None) -> LLMResponse:
        """Attempts until one answers; the first holds ``ticket`` (the limiter's
        leave to go), each later one waits for its own."""
        s = self.settings
        last, schema_failures = "", 0
        for attempt in range(s.max_retries + 1):
            if attempt:
                ticket = await self.limiter.acquire(tokens)
            timeout = s.timeout_s if deadline is None else max(0.01, min(s.timeout_s,
                                                                          deadline - time.monotonic()))
            hint, answered = None, True
            try:
                return await self._attempt(request, timeout, attempt, headers)
            except _SchemaViolation as exc:
                reason, last = "schema", str(exc)
            except anthropic.APIStatusError as exc:
                reason, last = _classify(exc), f"HTTP {exc.status_code}"
                hint = retry_after_s(exc.response.headers)
                self.limiter.observe(exc.response.headers)
                if reason == "rate_limited":
                    answered = False
                    self.limiter.rate_limited(ticket, hint)
            except (anthropic.APIError, json.JSONDecodeError, ValueError) as exc:
                reason, last = _classify(exc), type(exc).__name__
                answered = reason == "malformed"
            finally:
                await self.limiter.release(ticket, tokens, ok=answered)
            schema_failures += reason == "schema"
            if reason not in RETRYABLE or schema_failures > s.max_schema_retries:
                raise LLMError(f"{request.task} call to {request.model} failed: {reason} ({last})",
                               reason=reason, retries=attempt)
            if attempt == s.max_retries:
                break
            wait = backoff(attempt + 1, server_hint=hint, cap_s=s.max_retry_wait_s)
            if deadline is not None and time.monotonic() + wait >= deadline:
                raise LLMError(f"{request.task} call to {request.model}: deadline reached after "
                               f"{reason} ({last})", reason="timeout", retries=attempt)
            await asyncio.sleep(wait)
        raise LLMError(f"{request.task} call to {request.model} failed after {s.max_retries} "
                       f"retries: {reason} ({last})", reason=reason, retries=s.max_retries)

    async def acomplete(self, request: LLMRequest, *, namespace: str) -> LLMResponse:
        # the limiter's leave before the deadline starts: time queued behind the
        # job's other calls is not the model's
        tokens = input_tokens(request)
        ticket = await self.limiter.acquire(tokens)
        deadline = None if request.deadline_s is None else time.monotonic() + request.deadline_s
        headers = self.request_headers(request, namespace)
        if deadline is None:
            return await self._with_retries(request, None, ticket, tokens, headers)
        try:
            async with asyncio.timeout(request.deadline_s):
                return await self._with_retries(request, deadline, ticket, tokens, headers)
        except TimeoutError:
            raise LLMError(f"{request.task} call to {request.model}: no answer within "
                           f"{request.deadline_s:.1f} s", reason="timeout") from None

    # -- Message Batches -----------------------------------------------------
    async def abatch(self, requests: list[LLMRequest], *,
                     namespace: str) -> list[LLMResponse | Exception]:
        """One batch for all requests; results in request order. A request the
        batch could not answer (errored, expired, bad schema) becomes an
        LLMError in its slot."""
        if not requests:
            return []
        s = self.settings
        entries = [{"custom_id": f"r{i}", "params": request_params(r)} for i, r in enumerate(requests)]
        t0 = time.perf_counter()
        batch = await self.client.messages.batches.create(requests=entries)  # type: ignore[arg-type]
        waited = 0.0
        while batch.processing_status != "ended":
            if waited > s.batch_max_wait_s:
                await self.client.messages.batches.cancel(batch.id)
                raise LLMError(f"message batch {batch.id} not done after {s.batch_max_wait_s:.0f} s "
                               "(llm.batch_max_wait_s); it was cancelled", reason="timeout")
            await asyncio.sleep(s.batch_poll_s)
            waited += s.batch_poll_s
            batch = await self.client.messages.batches.retrieve(batch.id)
        latency = (time.perf_counter() - t0) * 1000.0
        out: list[LLMResponse | Exception] = [
            LLMError("missing from the batch results", reason="batch_missing") for _ in requests]
        async for item in await self.client.messages.batches.results(batch.id):
            idx = int(item.custom_id[1:])
            result = item.result
            if result.type == "succeeded":
                try:
                    out[idx] = parse_message(result.message, requests[idx], latency_ms=latency,
                                             retries=0, batch=True)
                except _SchemaViolation as exc:
                    out[idx] = LLMError(f"batch answer: {exc}", reason="schema")
            else:
                out[idx] = LLMError(f"batch request {result.type}", reason=f"batch_{result.type}")
        return out

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
