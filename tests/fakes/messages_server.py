"""A local HTTP server that speaks the Anthropic Messages API, for tests and
benchmarks: the real ``anthropic`` SDK is pointed at it with ``base_url``.

Endpoints: ``POST /v1/messages`` (text and forced-tool structured output,
prompt-caching usage), ``GET /v1/models/{id}``, ``POST /v1/messages/batches``,
``GET /v1/messages/batches/{id}``, ``.../cancel``, ``.../results`` (JSONL).

Faults are injected per ``/v1/messages`` request from a queue (``inject``)
or a function of the request number (``fault_fn``); ``max_concurrent=K``
answers 429 with ``retry-after`` to a request that arrives while K are in
flight, as a rate-limited tier would:

* ``rate_limit`` (429 with ``retry-after``), ``overloaded`` (529),
  ``server_error`` (500), ``slow`` (sleeps ``slow_s`` before answering),
  ``malformed`` (200 with a body that is not JSON), ``bad_schema`` (a tool
  answer that breaks the requested schema), ``bad_auth`` (401).

Answers come from ``responder(body) -> dict``: the structured answer for a
forced tool call (or ``{"text": ...}`` for plain text); a responder with
``wants_headers`` set is called as ``responder(body, headers)`` (lower-case
names) instead. The default answers
the request types silas_exp makes (scorer, keep-back, judge) and otherwise
builds the smallest instance of the requested schema.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
import re
import secrets
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KNOWN_MODELS = ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-5")
# A throwaway key made per test session and kept in the environment, so servers
# started in spawned processes accept the same one; no key lives in the repository.
API_KEY = os.environ.setdefault("SILAS_FAKE_API_KEY", f"fake-key-{secrets.token_hex(16)}")


@dataclass(frozen=True)
class Fault:
    kind: str
    retry_after: float | None = None  # seconds, for rate_limit / overloaded


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 3.5))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def minimal_instance(schema: dict) -> Any:
    t = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if t == "object":
        return {k: minimal_instance(schema["properties"][k]) for k in schema.get("required", [])}
    if t == "array":
        return []
    if t in ("number", "integer"):
        return schema.get("minimum", 0)
    if t == "boolean":
        return False
    return "x"


def default_responder(body: dict) -> dict:
    """Deterministic answers shaped like what silas_exp asks for."""
    user = "\n".join(_text_of(m["content"]) for m in body.get("messages", []))
    tools = body.get("tools") or []
    if not tools:
        return {"text": "ok: " + user[:40]}
    schema = tools[0]["input_schema"]
    props = schema.get("properties", {})
    if "scores" in props:  # scorer: one relevance per item line "<ctx_id> | zone | ..."
        scores = []
        for line in user.splitlines():
            m = re.match(r"^(\S+) \| (\w+) \| (\w+) \| age=(\d+) \|", line.strip())
            if m:
                h = int(hashlib.sha256(m[1].encode()).hexdigest()[:6], 16) / 0xFFFFFF
                rel = 0.6 * h + 0.4 / (1 + int(m[4]) / 10) + (0.3 if m[2] == "system" else 0.0)
                scores.append({"ctx_id": m[1], "relevance": round(min(rel, 1.0), 4)})
        return {"scores": scores}
    if "exclude_ctx_ids" in props:  # keep-back: keep items whose snippet mentions an error
        keep = [m[1] for m in (re.match(r"^(\S+) \| score=[\d.]+ \| (.*)$", ln.strip())
                               for ln in user.splitlines()) if m and "error" in m[2].lower()]
        return {"exclude_ctx_ids": keep, "reasons": [{"ctx_id": k, "reason": "error still open"}
                                                      for k in keep]}
    return minimal_instance(schema)


class FakeMessagesServer:
    """``with FakeMessagesServer(latency_s=0.2) as srv: ... srv.base_url``"""

    def __init__(self, *, latency_s: float = 0.0, jitter_s: float = 0.0,
                 responder: Callable[[dict], dict] | None = None, slow_s: float = 5.0,
                 batch_delay_s: float = 0.1, api_key: str = API_KEY,
                 max_concurrent: int | None = None, limit_retry_after: float = 0.1,
                 min_cache_tokens: int | dict[str, int] = 0) -> None:
        """``latency_s`` ± uniform ``jitter_s``: time each answer takes.
        ``min_cache_tokens``: the shortest system prompt prompt caching caches
        (per model id, or one for all; the API's own floors, e.g. 4,096 tokens
        for Haiku 4.5): a shorter one marked for caching is billed in full."""
        self.min_cache_tokens = min_cache_tokens
        self.latency_s, self.jitter_s = latency_s, jitter_s
        self.max_concurrent, self.limit_retry_after = max_concurrent, limit_retry_after
        self.slow_s, self.batch_delay_s = slow_s, batch_delay_s
        self._rng = random.Random(0)
        self.responder = responder or default_responder
        self.api_key = api_key
        self.faults: deque[Fault] = deque()
        self.fault_fn: Callable[[int, dict], Fault | None] | None = None
        self.counts: Counter[str] = Counter()
        self.message_requests = 0
        self.bodies: list[dict] = []  # every /v1/messages request body, in order
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._cached_systems: set[str] = set()
        self._batches: dict[str, dict] = {}
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None

    # -- control -------------------------------------------------------------
    def inject(self, *faults: Fault | str) -> None:
        self.faults.extend(f if isinstance(f, Fault) else Fault(f) for f in faults)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeMessagesServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True, name="fake-messages").start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    # -- behaviour -----------------------------------------------------------
    def next_fault(self, body: dict) -> Fault | None:
        with self._lock:
            self.message_requests += 1
            self.bodies.append(body)
            n = self.message_requests
            if self.faults:
                return self.faults.popleft()
        return self.fault_fn(n, body) if self.fault_fn else None

    def message(self, body: dict, *, bad_schema: bool = False,
                headers: dict[str, str] | None = None) -> dict:
        system = body.get("system") or []
        system_text = _text_of(system) if system else ""
        cache_marked = isinstance(system, list) and any(b.get("cache_control") for b in system)
        floor = self.min_cache_tokens
        if isinstance(floor, dict):
            floor = floor.get(body.get("model", ""), 0)
        cache_marked = cache_marked and _tokens(system_text) >= floor
        cache_read = cache_write = 0
        if cache_marked:
            with self._lock:
                if system_text in self._cached_systems:
                    cache_read = _tokens(system_text)
                else:
                    self._cached_systems.add(system_text)
                    cache_write = _tokens(system_text)
        prompt = "\n".join(_text_of(m["content"]) for m in body.get("messages", []))
        tools = body.get("tools") or []
        answer = (self.responder(body, headers or {}) if getattr(self.responder, "wants_headers", False)
                  else self.responder(body))
        if tools:
            if bad_schema:
                answer = {"unexpected": True}
            content = [{"type": "tool_use", "id": f"toolu_{next(self._ids):06d}",
                        "name": tools[0]["name"], "input": answer}]
            out_text, stop = json.dumps(answer), "tool_use"
            prompt += json.dumps(tools)
        else:
            out_text, stop = answer.get("text", ""), "end_turn"
            content = [{"type": "text", "text": out_text}]
        uncached = _tokens(prompt) + (0 if cache_marked else _tokens(system_text) if system_text else 0)
        return {
            "id": f"msg_{next(self._ids):08d}", "type": "message", "role": "assistant",
            "model": body.get("model"), "content": content, "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": uncached, "output_tokens": _tokens(out_text),
                      "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read},
        }

    def create_batch(self, body: dict) -> dict:
        bid = f"msgbatch_{next(self._ids):08d}"
        results = []
        for entry in body["requests"]:
            fault = self.next_fault(entry["params"])
            if fault is not None and fault.kind == "server_error":
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "internal"}}}
            else:
                msg = self.message(entry["params"], bad_schema=bool(fault and fault.kind == "bad_schema"))
                result = {"type": "succeeded", "message": msg}
            results.append({"custom_id": entry["custom_id"], "result": result})
        with self._lock:
            self._batches[bid] = {"created": time.monotonic(), "results": results, "cancelled": False}
        self.counts["batch_create"] += 1
        return self.batch_object(bid)

    def batch_object(self, bid: str) -> dict:
        b = self._batches[bid]
        ended = b["cancelled"] or time.monotonic() - b["created"] >= self.batch_delay_s
        n = len(b["results"])
        ok = sum(r["result"]["type"] == "succeeded" for r in b["results"])
        return {
            "id": bid, "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else n, "succeeded": ok if ended else 0,
                               "errored": (n - ok) if ended else 0, "canceled": 0, "expired": 0},
            "created_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:01:00Z" if ended else None, "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.base_url}/v1/messages/batches/{bid}/results" if ended else None,
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # a client that gave up (timeout test) closes its socket: expected


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without TCP_NODELAY, Nagle + the
    # client's delayed ACK add ~40 ms to every keep-alive answer
    disable_nagle_algorithm = True
    fake: FakeMessagesServer

    def log_message(self, *args: Any) -> None:
        return None

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
              raw: bytes | None = None, ctype: str = "application/json") -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_{time.monotonic_ns()}")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)

    def _authorised(self) -> bool:
        bearer = (self.headers.get("authorization") or "").removeprefix("Bearer ").strip()
        if self.fake.api_key not in (self.headers.get("x-api-key"), bearer):
            self._error(401, "authentication_error", "invalid x-api-key")
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        if not self._authorised():
            return
        fake, path = self.fake, self.path.split("?")[0]
        if m := re.fullmatch(r"/v1/models/([^/]+)", path):
            if m[1] in KNOWN_MODELS:
                self._send(200, {"type": "model", "id": m[1], "display_name": m[1],
                                 "created_at": "2025-10-01T00:00:00Z"})
            else:
                self._error(404, "not_found_error", f"model: {m[1]}")
        elif m := re.fullmatch(r"/v1/messages/batches/([^/]+)/results", path):
            lines = "\n".join(json.dumps(r) for r in fake._batches[m[1]]["results"]) + "\n"
            self._send(200, None, raw=lines.encode(), ctype="application/binary")
        elif m := re.fullmatch(r"/v1/messages/batches/([^/]+)", path):
            fake.counts["batch_poll"] += 1
            self._send(200, fake.batch_object(m[1]))
        else:
            self._error(404, "not_found_error", path)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self._authorised():
            return
        fake, path = self.fake, self.path.split("?")[0]
        if path == "/v1/messages/batches":
            self._send(200, fake.create_batch(body))
            return
        if m := re.fullmatch(r"/v1/messages/batches/([^/]+)/cancel", path):
            fake._batches[m[1]]["cancelled"] = True
            self._send(200, fake.batch_object(m[1]))
            return
        if path != "/v1/messages":
            self._error(404, "not_found_error", path)
            return
        with fake._lock:
            over = fake.max_concurrent is not None and fake._in_flight >= fake.max_concurrent
            if not over:
                fake._in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
        if over:
            with fake._lock:
                fake.message_requests += 1
            fake.counts["rate_limit"] += 1
            self._error(429, "rate_limit_error", f"more than {fake.max_concurrent} requests at once",
                        {"retry-after": str(fake.limit_retry_after)})
            return
        try:
            self._message(body)
        finally:
            with fake._lock:
                fake._in_flight -= 1

    def _message(self, body: dict) -> None:
        fake = self.fake
        fault = fake.next_fault(body)
        kind = fault.kind if fault else "ok"
        fake.counts[kind] += 1
        if kind == "rate_limit":
            headers = {"retry-after": str(fault.retry_after if fault.retry_after is not None else 1)}
            self._error(429, "rate_limit_error", "rate limited", headers)
            return
        if kind == "overloaded":
            headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
            self._error(529, "overloaded_error", "Overloaded", headers)
            return
        if kind == "server_error":
            self._error(500, "api_error", "Internal server error")
            return
        if kind == "bad_auth":
            self._error(401, "authentication_error", "invalid x-api-key")
            return
        if body.get("model") not in KNOWN_MODELS:
            self._error(404, "not_found_error", f"model: {body.get('model')}")
            return
        with fake._lock:
            jitter = fake._rng.uniform(-fake.jitter_s, fake.jitter_s) if fake.jitter_s else 0.0
        time.sleep(fake.slow_s if kind == "slow" else max(0.0, fake.latency_s + jitter))
        if kind == "malformed":
            self._send(200, None, raw=b'{"id": "msg_1", "type": "message", "content": [{"ty')
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._send(200, fake.message(body, bad_schema=kind == "bad_schema", headers=headers))
