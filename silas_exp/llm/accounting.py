"""Thread-safe accounting of calls, cache hits, retries, tokens and cost."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field, fields, replace

from silas_exp.llm.base import LLMResponse, Usage
from silas_exp.llm.settings import ModelPrice


@dataclass(frozen=True)
class Totals:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0

    def delta(self, before: Totals) -> Totals:
        return Totals(**{f.name: getattr(self, f.name) - getattr(before, f.name) for f in fields(self)})


BATCH_DISCOUNT = 0.5  # Message Batches API: half the standard price


def cost_of(price: ModelPrice | None, r: LLMResponse) -> float:
    """USD this response cost: 0 when answered from the cache (tokens are still
    counted: they are what the answer takes, whoever paid for it)."""
    if r.cached:
        return 0.0
    return usage_cost(price, r.usage, r.batch)


def usage_cost(price: ModelPrice | None, u: Usage, batch: bool = False) -> float:
    """USD a call's tokens cost at ``price`` (0 for a model without a price)."""
    if price is None:
        return 0.0
    usd = (u.input_tokens * price.input + u.output_tokens * price.output
           + u.cache_creation_input_tokens * price.cache_write
           + u.cache_read_input_tokens * price.cache_read) / 1e6
    return usd * (BATCH_DISCOUNT if batch else 1.0)


@dataclass
class Accounting:
    prices: dict[str, ModelPrice]
    _totals: Totals = field(default_factory=Totals)
    by_task: Counter = field(default_factory=Counter)
    errors_by_reason: Counter = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, task: str, response: LLMResponse) -> None:
        u = response.usage
        with self._lock:
            t = self._totals
            self._totals = Totals(  # every field, as replace() would (without its cost per call)
                calls=t.calls + (0 if response.cached else 1),
                cache_hits=t.cache_hits + (1 if response.cached else 0),
                retries=t.retries + response.retries,
                errors=t.errors,
                input_tokens=t.input_tokens + u.input_tokens,
                output_tokens=t.output_tokens + u.output_tokens,
                cache_read_tokens=t.cache_read_tokens + u.cache_read_input_tokens,
                cache_write_tokens=t.cache_write_tokens + u.cache_creation_input_tokens,
                cost_usd=t.cost_usd + cost_of(self.prices.get(response.model), response),
            )
            self.by_task[task] += 1

    def record_usages(self, task: str, model: str, usages: list[Usage]) -> None:
        """Calls answered by the model (not from the cache, no retries, not in
        a batch), one after the other, counted from their usage alone: what
        ``record`` counts of each response, for a caller that made no response
        objects (the cost summed call by call, as ``record`` sums it)."""
        price = self.prices.get(model)
        with self._lock:
            t = self._totals
            cost = t.cost_usd
            for u in usages:
                cost = cost + usage_cost(price, u)
            self._totals = Totals(
                calls=t.calls + len(usages), cache_hits=t.cache_hits, retries=t.retries,
                errors=t.errors,
                input_tokens=t.input_tokens + sum(u.input_tokens for u in usages),
                output_tokens=t.output_tokens + sum(u.output_tokens for u in usages),
                cache_read_tokens=t.cache_read_tokens + sum(u.cache_read_input_tokens for u in usages),
                cache_write_tokens=t.cache_write_tokens
                + sum(u.cache_creation_input_tokens for u in usages),
                cost_usd=cost,
            )
            self.by_task[task] += len(usages)

    def record_error(self, reason: str, retries: int = 0) -> None:
        with self._lock:
            t = self._totals
            self._totals = replace(t, errors=t.errors + 1, retries=t.retries + retries)
            self.errors_by_reason[reason] += 1

    def absorb(self, other: Accounting) -> None:
        """Add what ``other`` counted (a case's calls, counted apart while
        several cases were in flight) to this accounting."""
        add = other.snapshot()
        with other._lock:
            by_task, reasons = Counter(other.by_task), Counter(other.errors_by_reason)
        with self._lock:
            t = self._totals
            self._totals = Totals(**{f.name: getattr(t, f.name) + getattr(add, f.name)
                                     for f in fields(t)})
            self.by_task.update(by_task)
            self.errors_by_reason.update(reasons)

    def snapshot(self) -> Totals:
        with self._lock:
            return self._totals

    def as_metrics(self) -> dict[str, float]:
        t = self.snapshot()
        out = {f"llm.{f.name}": float(getattr(t, f.name)) for f in fields(t)}
        with self._lock:
            out.update({f"llm.calls.{task}": float(n) for task, n in self.by_task.items()})
            out.update({f"llm.errors.{why}": float(n) for why, n in self.errors_by_reason.items()})
        return out
