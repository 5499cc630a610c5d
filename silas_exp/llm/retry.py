"""Retry policy for model calls, written by hand because the SDK's own retries
wait for any ``retry-after`` without a cap (a ``retry-after: 120`` stalls the
call two minutes) and cannot tell a schema-violating answer from a good one.

The SDK runs with ``max_retries=0``; ``backoff`` decides how long to wait
before the next attempt: the server's ``retry-after-ms`` / ``retry-after``
when given, else exponential back-off with full jitter, both capped at
``llm.max_retry_wait_s``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

# failure categories that another attempt may cure
RETRYABLE = frozenset({"rate_limited", "overloaded", "server_error", "timeout", "connection",
                       "malformed", "schema"})


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait, or None."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue  # an HTTP date: treat as absent, fall back to back-off
        if value >= 0:
            return value
    return None


def backoff(attempt: int, *, server_hint: float | None, cap_s: float, base_s: float = 0.5,
            rng: random.Random | None = None) -> float:
    """Wait before retry ``attempt`` (1 = first retry), never above ``cap_s``."""
    if server_hint is not None:
        return min(server_hint, cap_s)
    r = rng or random
    return min(cap_s, r.uniform(0.0, base_s * 2 ** (attempt - 1)))
