"""Plain records of model calls, for whoever wants to see them (e.g. tracing).

The client hands every finished call — answered, answered from the cache, or
failed — to the sinks installed with ``recording(sink)``; with none installed
it does nothing. A record carries what went to the model and what came back,
tokens, cost, latency and retries; never the API key (no backend setting is
part of it) and never ``LLMRequest.sim`` (simulated-only ground truth).

``JsonlCallLog`` appends one JSON line per call and flushes it, so the file is
complete as soon as the last call returns, even if the process dies after.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from silas_exp.llm.base import LLMRequest, LLMResponse

CallSink = Callable[["CallRecord"], None]
_SINKS: list[CallSink] = []
_LOCK = threading.Lock()


@dataclass(frozen=True)
class CallRecord:
    task: str
    model: str
    namespace: str
    started_at: float  # seconds since the epoch
    ended_at: float
    system: str | None
    messages: list[dict[str, str]]
    max_tokens: int
    structured: bool  # the request asked for a JSON-schema answer
    backend: str = ""
    text: str | None = None
    data: dict[str, Any] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    latency_ms: float = 0.0  # the answering attempt, as the backend measured it
    retries: int = 0
    cached: bool = False
    batch: bool = False
    error: str | None = None  # failure category and message; then no answer

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str)

    @classmethod
    def from_json(cls, line: str) -> CallRecord:
        return cls(**json.loads(line))


def active() -> bool:
    return bool(_SINKS)


def emit(request: LLMRequest, namespace: str, started_at: float, *,
         response: LLMResponse | None = None, cost_usd: float = 0.0,
         error: str | None = None, retries: int = 0) -> None:
    """Hand one finished call to every installed sink (no-op when none)."""
    if not _SINKS:
        return
    record = CallRecord(
        task=request.task, model=request.model, namespace=namespace, started_at=started_at,
        ended_at=time.time(), system=request.system,
        messages=[{"role": m.role, "content": m.content} for m in request.messages],
        max_tokens=request.max_tokens, structured=request.output_schema is not None,
        error=error, retries=retries if response is None else response.retries)
    if response is not None:
        record = CallRecord(**{**asdict(record), "backend": response.backend, "text": response.text,
                               "data": response.data, "usage": asdict(response.usage),
                               "cost_usd": cost_usd, "latency_ms": response.latency_ms,
                               "cached": response.cached, "batch": response.batch})
    with _LOCK:
        sinks = list(_SINKS)
    for sink in sinks:
        sink(record)


@contextlib.contextmanager
def recording(sink: CallSink) -> Iterator[CallSink]:
    """Install ``sink`` for the duration of the block (process-wide: the client's
    event-loop thread finishes calls too)."""
    with _LOCK:
        _SINKS.append(sink)
    try:
        yield sink
    finally:
        uninstall(sink)
        close = getattr(sink, "close", None)
        if close is not None:
            close()


def uninstall(sink: CallSink) -> None:
    """Remove ``sink`` if it is installed: a sink that has seen the calls it
    wanted removes itself, and the calls after it cost nothing (``emit``
    returns at once with no sink)."""
    with _LOCK:
        if sink in _SINKS:
            _SINKS.remove(sink)


class JsonlCallLog:
    """A sink writing one JSON line per call to ``path`` (a fresh file per job)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115  (closed by close())
        self._lock = threading.Lock()

    def __call__(self, record: CallRecord) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.write(record.to_json() + "\n")
                self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def read_call_log(path: Path) -> list[CallRecord]:
    return [CallRecord.from_json(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
