"""The facade every caller uses: ``client.complete(request, namespace=...)``.

Sync and thread-safe. Async backends run on one background event-loop thread
owned by the client; the simulated backend answers inline. Accounting is
per client (one client per job)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from silas_exp.errors import BudgetExceeded, LLMError
from silas_exp.llm.accounting import Accounting
from silas_exp.llm.base import LLMBackend, LLMRequest, LLMResponse
from silas_exp.llm.settings import LLMSettings
from silas_exp.llm.simulated import SimulatedBackend


class LLMClient:
    def __init__(self, backend: LLMBackend, settings: LLMSettings, accounting: Accounting) -> None:
        self.backend, self.settings, self.accounting = backend, settings, accounting
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sem: asyncio.Semaphore | None = None
        self._start_lock = threading.Lock()

    @property
    def backend_name(self) -> str:
        return self.backend.name

    def __repr__(self) -> str:
        return f"LLMClient(backend={self.backend.name!r})"

    # -- async core ----------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                                name="silas-llm-loop")
                self._thread.start()
            return self._loop

    def _check_budget(self) -> None:
        cap = self.settings.max_usd
        spent = self.accounting.snapshot().cost_usd
        if cap is not None and spent >= cap:
            raise BudgetExceeded(f"LLM budget reached: spent ${spent:.4f} of llm.max_usd=${cap:.4f}. "
                                 "Finished work is kept; raise llm.max_usd or resume later.")

    async def acomplete(self, request: LLMRequest, *, namespace: str) -> LLMResponse:
        self._check_budget()
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.settings.max_connections)
        async with self._sem:
            try:
                response = await self.backend.acomplete(request, namespace=namespace)
            except LLMError as exc:
                self.accounting.record_error(getattr(exc, "reason", "error"))
                raise
        self.accounting.record(request.task, response)
        return response

    # -- sync facade ---------------------------------------------------------
    def complete(self, request: LLMRequest, *, namespace: str) -> LLMResponse:
        if isinstance(self.backend, SimulatedBackend) and not self.backend.latency_ms:
            self._check_budget()
            response = self.backend.answer(request, namespace)
            self.accounting.record(request.task, response)
            return response
        fut = asyncio.run_coroutine_threadsafe(self.acomplete(request, namespace=namespace),
                                               self._ensure_loop())
        return fut.result()

    def complete_many(self, requests: Sequence[LLMRequest], *,
                      namespace: str) -> list[LLMResponse | LLMError]:
        async def gather() -> list[Any]:
            return await asyncio.gather(
                *(self.acomplete(r, namespace=namespace) for r in requests), return_exceptions=True)

        results = asyncio.run_coroutine_threadsafe(gather(), self._ensure_loop()).result()
        for r in results:
            if isinstance(r, BudgetExceeded):
                raise r
            if isinstance(r, BaseException) and not isinstance(r, LLMError):
                raise r
        return results

    def close(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._loop = None

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_client(settings: LLMSettings, *, seed: int, cache_dir: str | None) -> LLMClient:
    accounting = Accounting(dict(settings.prices))
    if settings.backend == "simulated":
        backend: LLMBackend = SimulatedBackend(seed, settings.simulated_latency_ms)
    else:
        from silas_exp.llm.anthropic_backend import AnthropicBackend

        backend = AnthropicBackend(settings)
    return LLMClient(backend, settings, accounting)
