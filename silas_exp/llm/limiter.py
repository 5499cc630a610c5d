"""The API's rate limits, honoured before they are hit: one limiter per backend,
so shared by every case a job has in flight (they share its client).

It holds a request back when:

* the server asked everyone to wait: a 429's ``retry-after`` (capped at
  ``llm.max_retry_wait_s``, as the retries' own waits are) pauses every new
  request, not only the one that got it, when 429s are frequent (``CROWDED``
  of the last ``RECENT`` answers) or come before ``RECENT`` answers; a stray
  429 among many answers pauses only its own request's retry;
* Anthropic's ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining``
  headers say that what is left, less what is in flight, does not cover the
  request: it waits for that limit's ``-reset`` time;
* more requests are in flight than the server has lately accepted: the number
  allowed in flight starts at ``llm.max_connections``, shrinks by a third at a
  429 when 429s are frequent (``CROWDED`` of the last ``RECENT`` answers: a
  stray 429 only retries) and once for the requests sent at one allowance, and
  tries one more after each ``RECENT`` answers since it last changed
  (additive increase, multiplicative decrease). When 429s grow frequent at
  an allowance just raised, the raise went past the server's limit: the next
  one waits twice as long (up to ``PROBE_BACKOFF`` times), so that a limit
  costs few 429s; a raise that holds for a window brings the wait back.
  Random 429s (a faulty server's) seldom reach ``CROWDED``, and when they
  do, the allowance is back within a few windows: they do not leave it
  shrunk.

Time spent waiting here is not part of a call's deadline (the scorer's 2 s):
queueing behind the job's other cases is not the model's slowness.

A 429's pause is shared with the other processes that use the same response
cache folder (a sweep's workers, other sweeps on the machine: one API key's
limits): ``SharedPause`` keeps the time until which to wait in one small file,
read again only when it changed (a ``stat`` per request).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

DIMENSIONS = ("requests", "tokens", "input-tokens", "output-tokens")
DECREASE = 2 / 3  # the allowance kept at a 429
PROBE_BACKOFF = 8  # the most a failed probe's wait is stretched (times RECENT answers)
# 429s among the last RECENT answers that mean too many at once: a server's
# stray 429s (a few per cent of answers) seldom reach it; a concurrency limit
# exceeded by a fifth or more of the requests in flight does within a wave or two
RECENT, CROWDED = 20, 4


@dataclass
class _Budget:
    remaining: float
    reset_at: float  # on the limiter's clock


def _reset_in_s(value: str, now_wall: float) -> float | None:
    """Seconds until an RFC 3339 reset time (or a number of seconds)."""
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() - now_wall)
    except ValueError:
        return None


class SharedPause:
    """The wall-clock time until which every process sharing ``path`` waits."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._seen: float | None = None  # the file's mtime when last read
        self._until = 0.0

    def until(self) -> float:
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except OSError:
            return self._until
        if mtime != self._seen:
            try:
                self._until = max(self._until, float(self.path.read_text() or 0))
            except (OSError, ValueError):  # being replaced: read it next time
                return self._until
            self._seen = mtime
        return self._until

    def extend(self, until: float) -> None:
        if until <= self.until():
            return
        self._until = until
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}")
            tmp.write_text(repr(until))
            os.replace(tmp, self.path)
        except OSError:  # sharing is a courtesy: this process still waits
            pass


class RateLimiter:
    def __init__(self, max_in_flight: int, *, max_wait_s: float,
                 clock: Callable[[], float] = time.monotonic,
                 shared: SharedPause | None = None) -> None:
        self.max_in_flight, self.max_wait_s, self.clock = max_in_flight, max_wait_s, clock
        self.shared = shared
        self.allowed = float(max_in_flight)
        self.in_flight = 0
        self._tokens_in_flight = 0
        self._epoch = 0  # allowance generation: one decrease per generation
        self._streak = 0  # answers since the allowance last changed
        self._probe = False  # the allowance was raised by one and not yet held
        self._wait = 1  # RECENT answers times this before the next probe
        self._recent: deque[bool] = deque(maxlen=RECENT)  # was it a 429, answer by answer
        self._paused_until = 0.0
        self._budgets: dict[str, _Budget] = {}
        self._cond: asyncio.Condition | None = None
        # what the progress line shows
        self.held = 0  # requests that had to wait
        self.held_s = 0.0
        self.rate_limited_count = 0
        self.waiting = 0
        self.least_allowed = max_in_flight

    def _wait_s(self, now: float, tokens: int) -> float:
        """How long a request of ``tokens`` input tokens must wait for time to pass."""
        wait = self._paused_until - now
        if self.shared is not None:
            wait = max(wait, self.shared.until() - time.time())
        for dim, b in self._budgets.items():
            if now >= b.reset_at:
                continue
            in_flight = self.in_flight if dim == "requests" else self._tokens_in_flight
            need = 1 if dim in ("requests", "output-tokens") else tokens
            if b.remaining - in_flight < need:
                wait = max(wait, b.reset_at - now)
        return min(wait, self.max_wait_s)

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:  # made on the loop that uses it
            self._cond = asyncio.Condition()
        return self._cond

    async def acquire(self, tokens: int = 0) -> int:
        """Wait until the request may go; returns its ticket for ``release``."""
        cond = self._condition()
        waited_from = None
        while True:
            async with cond:
                now = self.clock()
                wait = self._wait_s(now, tokens)
                if wait <= 0 and self.in_flight < max(1, int(self.allowed)):
                    self.in_flight += 1
                    self._tokens_in_flight += tokens
                    break
                if waited_from is None:
                    waited_from = now
                    self.held += 1
                self.waiting += 1
                try:
                    if wait <= 0:  # a request in flight must end first
                        await cond.wait()
                finally:
                    self.waiting -= 1
            if wait > 0:
                self.waiting += 1
                try:
                    await asyncio.sleep(wait)
                finally:
                    self.waiting -= 1
        if waited_from is not None:
            self.held_s += self.clock() - waited_from
        return self._epoch

    async def release(self, ticket: int, tokens: int = 0, *, ok: bool) -> None:
        """A request ended; ``ok``: the server answered it (more may follow)."""
        cond = self._condition()
        async with cond:
            self.in_flight -= 1
            self._tokens_in_flight -= tokens
            if ok:
                self._recent.append(False)
            if ok and self.allowed < self.max_in_flight:
                self._streak += 1
                if self._streak >= RECENT * self._wait:  # a window of answers at this allowance
                    if self._probe:  # the last probe held: the next one waits as long as the first
                        self._wait = 1
                    self.allowed = min(float(self.max_in_flight), self.allowed + 1)
                    self._streak, self._probe = 0, True
                    self._epoch += 1
            cond.notify_all()

    def observe(self, headers: Mapping[str, str] | None) -> None:
        """Read the ``anthropic-ratelimit-*`` headers of an answer (or a 429)."""
        if not headers:
            return
        now, wall = self.clock(), time.time()
        for dim in DIMENSIONS:
            remaining = headers.get(f"anthropic-ratelimit-{dim}-remaining")
            reset = headers.get(f"anthropic-ratelimit-{dim}-reset")
            if remaining is None or reset is None:
                continue
            try:
                left = float(remaining)
            except ValueError:
                continue
            in_s = _reset_in_s(reset, wall)
            if in_s is not None:
                self._budgets[dim] = _Budget(left, now + in_s)

    def rate_limited(self, ticket: int, retry_after_s: float | None) -> None:
        """A 429: when 429s are frequent (or nothing is known yet), every new
        request waits ``retry_after_s`` (capped) and fewer go at once; a stray
        429 among many answers waits only in its own retry."""
        self.rate_limited_count += 1
        self._recent.append(True)
        crowded = sum(self._recent) >= CROWDED or len(self._recent) < RECENT
        if retry_after_s is not None and crowded:
            pause = min(retry_after_s, self.max_wait_s)
            self._paused_until = max(self._paused_until, self.clock() + pause)
            if self.shared is not None:
                self.shared.extend(time.time() + pause)
        # the first 429 of requests sent at this allowance, among many lately
        if ticket == self._epoch and crowded:
            if self._probe:  # raised past the server's limit: wait longer before the next raise
                self._wait = min(PROBE_BACKOFF, 2 * self._wait)
            self._epoch += 1
            self._streak, self._probe = 0, False
            self.allowed = float(max(1, int(min(self.allowed, self.in_flight) * DECREASE)))
            self.least_allowed = min(self.least_allowed, max(1, int(self.allowed)))

    def holding_back(self) -> bool:
        return self.waiting > 0

    def status(self) -> str:
        """For the progress line."""
        now = ("holding back now" if self.holding_back() else "not holding back")
        if not self.held and not self.rate_limited_count:
            return f"rate limiter: {now}"
        return (f"rate limiter: {now}; held {self.held} call(s) back {self.held_s:.1f} s in all, "
                f"{self.rate_limited_count} answered 429, {max(1, int(self.allowed))} of "
                f"{self.max_in_flight} allowed in flight (least {self.least_allowed})")
