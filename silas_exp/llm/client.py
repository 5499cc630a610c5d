"""The facade every caller uses: ``client.complete(request, namespace=...)``.

Sync and thread-safe. Async backends run on one background event-loop thread
owned by the client; the simulated backend answers inline. Accounting is
per client (one client per job); ``view(accounting)`` is the same client
counting in an accounting of its own (one per case in flight)."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from silas_exp.errors import BudgetExceeded, LLMError
from silas_exp.llm import calls
from silas_exp.llm.accounting import Accounting, cost_of
from silas_exp.llm.backends import build_backend
from silas_exp.llm.base import LLMBackend, LLMRequest, LLMResponse
from silas_exp.llm.budget import SpendLedger
from silas_exp.llm.cache import ResponseCache
from silas_exp.llm.settings import LLMSettings
from silas_exp.llm.simulated import SimulatedBackend
from silas_exp.llm.slots import PrioritySlots


class LLMClient:
    def __init__(self, backend: LLMBackend, settings: LLMSettings, accounting: Accounting,
                 cache: ResponseCache | None = None, ledger: SpendLedger | None = None,
                 job_key: str = "") -> None:
        self.backend, self.settings, self.accounting = backend, settings, accounting
        self.cache, self.ledger, self.job_key = cache, ledger, job_key
        # every accounting ever charged (see charged_to): without a ledger, their sum is the spend
        self._accountings = [accounting]
        # shared with every view: one event loop, one bound on connections
        self._loop_box = _LoopBox(PrioritySlots(settings.max_connections))
        self._is_view = False
        self.priority = 0.0  # of this client's requests waiting for a connection (llm/slots.py)

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @contextmanager
    def charged_to(self, accounting: Accounting) -> Iterator[Accounting]:
        """Count the calls made inside the block in ``accounting`` instead of the
        client's own (the spend ledger, and so ``llm.max_usd``, still sees them).
        For calls made only to measure (a job's calibration replays, the
        control's reference replays), which a job makes or not depending on what
        its process already holds. Not for concurrent use from other threads."""
        if not any(a is accounting for a in self._accountings):
            self._accountings.append(accounting)
        saved, self.accounting = self.accounting, accounting
        try:
            yield accounting
        finally:
            self.accounting = saved

    def view(self, accounting: Accounting, priority: float | None = None) -> LLMClient:
        """This client (backend, event loop, connections, cache, spend ledger)
        counting its calls in ``accounting``: for one case of several in flight
        at once, whose calls are counted apart and added to the job's in case
        order. ``priority``: its requests' place among those waiting for a
        connection (the case's size; default: this client's). Without a
        ledger, ``llm.max_usd`` sees a view's spend once it is added. A view
        is not closed; its client is."""
        other = copy.copy(self)
        other.accounting, other._is_view = accounting, True
        if priority is not None:
            other.priority = priority
        return other

    @property
    def concurrent(self) -> bool:
        """Whether calls wait on a backend (a network, a simulated latency), so
        that callers gain by keeping several in flight; the inline simulated
        backend answers at once."""
        return not (isinstance(self.backend, SimulatedBackend) and not self.backend.latency_ms)

    def __repr__(self) -> str:
        return f"LLMClient(backend={self.backend.name!r})"

    # -- async core ----------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop_box.ensure()

    @property
    def _loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop_box.loop

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop()).result()

    def _check_budget(self) -> None:
        cap = self.settings.max_usd
        if cap is None:
            return
        spent = (self.ledger.total() if self.ledger is not None
                 else sum(a.snapshot().cost_usd for a in self._accountings))
        if spent >= cap:
            raise BudgetExceeded(f"LLM budget reached: spent ${spent:.4f} of llm.max_usd=${cap:.4f}. "
                                 "Finished work is kept; raise llm.max_usd and re-run with resume=true.")

    def _record(self, request: LLMRequest, response: LLMResponse, namespace: str,
                started_at: float) -> None:
        # this answer's cost (not a difference of totals: another case may count in the same one)
        cost = cost_of(self.accounting.prices.get(response.model), response)
        self.accounting.record(request.task, response)
        if self.ledger is not None:
            self.ledger.add(self.job_key, cost)
        if self.cache is not None and not response.cached:
            self.cache.put(request, namespace, response)
        calls.emit(request, namespace, started_at, response=response, cost_usd=cost)

    def _record_error(self, request: LLMRequest, namespace: str, started_at: float,
                      exc: LLMError) -> None:
        self.accounting.record_error(exc.reason, exc.retries)
        calls.emit(request, namespace, started_at, error=f"{exc.reason}: {exc}", retries=exc.retries)

    def _cached(self, request: LLMRequest, namespace: str, started_at: float) -> LLMResponse | None:
        if self.cache is None:
            return None
        try:
            hit = self.cache.get(request, namespace)
        except LLMError as exc:  # replay mode miss
            self._record_error(request, namespace, started_at, exc)
            raise
        if hit is not None:
            self.accounting.record(request.task, hit)
            calls.emit(request, namespace, started_at, response=hit)
        return hit

    async def acomplete(self, request: LLMRequest, *, namespace: str) -> LLMResponse:
        started_at = time.time()
        hit = self._cached(request, namespace, started_at)
        if hit is not None:
            return hit
        try:
            response = await self._afetch(request, namespace)
        except LLMError as exc:
            self._record_error(request, namespace, started_at, exc)
            raise
        self._record(request, response, namespace, started_at)
        return response

    async def _afetch(self, request: LLMRequest, namespace: str) -> LLMResponse:
        """The backend's answer, within the bound on requests in flight (no cache, no accounting)."""
        self._check_budget()
        async with self._loop_box.slots.slot(self.priority):
            return await self.backend.acomplete(request, namespace=namespace)

    async def _abatch(self, requests: Sequence[LLMRequest], namespace: str) -> list[Any]:
        out: list[Any] = [None] * len(requests)
        todo: list[int] = []
        started_at = time.time()
        for i, r in enumerate(requests):
            hit = self._cached(r, namespace, started_at)
            if hit is not None:
                out[i] = hit
            else:
                todo.append(i)
        if todo:
            self._check_budget()
            answers = await self.backend.abatch([requests[i] for i in todo], namespace=namespace)
            for i, ans in zip(todo, answers, strict=True):
                if isinstance(ans, LLMError):
                    self._record_error(requests[i], namespace, started_at, ans)
                elif isinstance(ans, LLMResponse):
                    self._record(requests[i], ans, namespace, started_at)
                out[i] = ans
        return out

    # -- sync facade ---------------------------------------------------------
    def complete(self, request: LLMRequest, *, namespace: str) -> LLMResponse:
        if not self.concurrent:
            self._check_budget()
            started_at = time.time() if calls.active() else 0.0
            response = self.backend.answer(request, namespace)
            self._record(request, response, namespace, started_at)
            return response
        # the cache and the accounting in the calling thread (a case's), the event
        # loop only waits on the network: it serves every case in flight
        started_at = time.time()
        hit = self._cached(request, namespace, started_at)
        if hit is not None:
            return hit
        try:
            response = self._run(self._afetch(request, namespace))
        except LLMError as exc:
            self._record_error(request, namespace, started_at, exc)
            raise
        self._record(request, response, namespace, started_at)
        return response

    def complete_many(self, requests: Sequence[LLMRequest], *,
                      namespace: str) -> list[LLMResponse | LLMError]:
        """Many independent requests, concurrently (``llm.max_connections``), or
        as one Message Batch when ``llm.batch`` is on. A failed request is an
        LLMError in its slot; a reached budget raises."""
        if self.settings.batch:
            results = self._run(self._abatch(requests, namespace))
        else:
            async def gather() -> list[Any]:
                return await asyncio.gather(
                    *(self.acomplete(r, namespace=namespace) for r in requests), return_exceptions=True)

            results = self._run(gather())
        for r in results:
            if isinstance(r, BudgetExceeded):
                raise r
            if isinstance(r, BaseException) and not isinstance(r, LLMError):
                raise r
        return results

    def check_models(self, model_ids: Sequence[str]) -> None:
        check = getattr(self.backend, "check_models", None)
        if check is not None:
            self._run(check(model_ids))

    def close(self) -> None:
        if self._is_view:
            return
        if self._loop is not None:
            aclose = getattr(self.backend, "aclose", None)
            if aclose is not None:
                try:
                    self._run(aclose())
                except Exception:  # closing must not mask the job's own outcome
                    pass
            self._loop_box.stop()
        if self.cache is not None:
            self.cache.close()
        if self.ledger is not None:
            self.ledger.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _LoopBox:
    """The client's event-loop thread, started on first use, and the bound on
    requests in flight: one per client, shared by its views."""

    def __init__(self, slots: PrioritySlots) -> None:
        self.slots = slots  # used on the loop only
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
                self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                               name="silas-llm-loop")
                self.thread.start()
            return self.loop

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread is not None:
            self.thread.join(timeout=5)
        self.loop = self.thread = None


def build_client(settings: LLMSettings, *, seed: int, cache_dir: str | None,
                 ledger_path: Path | None = None, job_key: str = "") -> LLMClient:
    """One client per job. The response cache serves real backends only (the
    simulated one is deterministic and free: a lookup would cost more than the
    answer); the spend ledger exists only when ``llm.max_usd`` is set."""
    accounting = Accounting(dict(settings.prices))
    cache = None
    backend, kind = build_backend(settings, seed)
    if kind.trait("cached", True) and settings.cache_mode != "off" and cache_dir:
        cache = ResponseCache(Path(cache_dir) / "responses.sqlite", settings.cache_mode)
    ledger = SpendLedger(ledger_path) if settings.max_usd is not None and ledger_path else None
    return LLMClient(backend, settings, accounting, cache, ledger, job_key)
