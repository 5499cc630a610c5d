"""The rate limiter on its own: what it reads from the API's headers and 429s."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime, timedelta

from silas_exp.llm.limiter import RateLimiter, SharedPause


def _at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


async def _timed_acquire(limiter: RateLimiter, tokens: int = 0) -> float:
    t0 = time.monotonic()
    ticket = await limiter.acquire(tokens)
    await limiter.release(ticket, tokens, ok=True)
    return time.monotonic() - t0


def test_no_requests_left_holds_the_next_one_until_the_reset():
    async def go() -> tuple[float, float]:
        limiter = RateLimiter(4, max_wait_s=5.0)
        free = await _timed_acquire(limiter)
        limiter.observe({"anthropic-ratelimit-requests-limit": "50",
                         "anthropic-ratelimit-requests-remaining": "0",
                         "anthropic-ratelimit-requests-reset": _at(0.3)})
        return free, await _timed_acquire(limiter)

    free, held = asyncio.run(go())
    assert free < 0.1 and 0.2 < held < 2.0


def test_input_tokens_left_must_cover_the_request():
    async def go() -> tuple[float, float]:
        limiter = RateLimiter(4, max_wait_s=5.0)
        limiter.observe({"anthropic-ratelimit-input-tokens-remaining": "1000",
                         "anthropic-ratelimit-input-tokens-reset": _at(0.3)})
        small = await _timed_acquire(limiter, tokens=500)
        return small, await _timed_acquire(limiter, tokens=5000)

    small, large = asyncio.run(go())
    assert small < 0.1 and 0.2 < large < 2.0


def test_a_429_pauses_every_request_for_its_retry_after_capped():
    async def go() -> float:
        limiter = RateLimiter(4, max_wait_s=0.3)
        ticket = await limiter.acquire()
        limiter.rate_limited(ticket, 120.0)  # a server asking for two minutes
        await limiter.release(ticket, ok=False)
        return await _timed_acquire(limiter)

    waited = asyncio.run(go())
    assert 0.2 < waited < 2.0


def test_429s_shrink_the_requests_allowed_in_flight_once_per_allowance():
    async def go() -> RateLimiter:
        limiter = RateLimiter(9, max_wait_s=0.0)
        tickets = [await limiter.acquire() for _ in range(9)]
        for t in tickets[3:]:  # six rejected from one wave
            limiter.rate_limited(t, None)
        for t in tickets:
            await limiter.release(t, ok=False)
        return limiter

    limiter = asyncio.run(go())
    assert limiter.allowed == 6  # once for the wave, by a third
    assert limiter.rate_limited_count == 6 and "answered 429" in limiter.status()


def test_requests_beyond_the_allowance_wait_for_one_to_end():
    async def go() -> int:
        limiter = RateLimiter(2, max_wait_s=1.0)
        peak = 0

        async def call() -> None:
            nonlocal peak
            ticket = await limiter.acquire()
            peak = max(peak, limiter.in_flight)
            await asyncio.sleep(0.01)
            await limiter.release(ticket, ok=True)

        await asyncio.gather(*(call() for _ in range(8)))
        return peak

    assert asyncio.run(go()) == 2


def test_a_429s_pause_reaches_the_other_processes_sharing_the_folder(tmp_path):
    """Another process's limiter (its own object) on the same file waits too."""
    async def go() -> float:
        ours = RateLimiter(4, max_wait_s=0.3, shared=SharedPause(tmp_path / "pause"))
        theirs = RateLimiter(4, max_wait_s=0.3, shared=SharedPause(tmp_path / "pause"))
        ticket = await ours.acquire()
        ours.rate_limited(ticket, 5.0)
        await ours.release(ticket, ok=False)
        return await _timed_acquire(theirs)

    assert 0.2 < asyncio.run(go()) < 2.0


def test_a_stray_429_among_many_answers_pauses_but_keeps_the_allowance():
    async def go() -> RateLimiter:
        limiter = RateLimiter(6, max_wait_s=0.0)
        for _ in range(30):
            await limiter.release(await limiter.acquire(), ok=True)
        ticket = await limiter.acquire()
        limiter.rate_limited(ticket, None)
        await limiter.release(ticket, ok=False)
        return limiter

    assert asyncio.run(go()).allowed == 6


def test_stray_429s_among_many_answers_neither_pause_the_others_nor_shrink_the_allowance():
    """A server's random 429s (one answer in 25, as a faulty server's are)
    hold back only the request that got one: the others go at once, and the
    allowance stays where it was."""
    async def go() -> tuple[RateLimiter, float]:
        limiter = RateLimiter(6, max_wait_s=5.0)
        for i in range(200):
            ticket = await limiter.acquire()
            if i >= 20 and i % 25 == 0:
                limiter.rate_limited(ticket, 2.0)
                await limiter.release(ticket, ok=False)
            else:
                await limiter.release(ticket, ok=True)
        return limiter, await _timed_acquire(limiter)

    limiter, waited = asyncio.run(go())
    assert limiter.rate_limited_count == 7 and limiter.allowed == 6
    assert waited < 1.0  # not the 2 s the stray 429 asked of its own retry


def test_frequent_429s_after_many_answers_still_pause_every_request():
    async def go() -> tuple[RateLimiter, float]:
        limiter = RateLimiter(6, max_wait_s=5.0)
        for _ in range(30):
            await limiter.release(await limiter.acquire(), ok=True)
        tickets = [await limiter.acquire() for _ in range(6)]
        for t in tickets[1:]:  # five of one wave: a limit reached
            limiter.rate_limited(t, 0.3)
        for t in tickets:
            await limiter.release(t, ok=False)
        return limiter, await _timed_acquire(limiter)

    limiter, waited = asyncio.run(go())
    assert limiter.allowed == 4 and 0.2 < waited < 2.0


def _faulty_run(n: int, limit_429s: range, share_429: float, width: int = 10) -> RateLimiter:
    """``width`` workers send ``n`` requests; a server answers 429 at random to
    ``share_429`` of them, and to every request numbered in ``limit_429s`` (a
    burst: a limit reached)."""
    rng = random.Random(7)

    async def go() -> RateLimiter:
        limiter = RateLimiter(width, max_wait_s=0.0)
        numbers = iter(range(n))

        async def worker() -> None:
            for i in numbers:
                ticket = await limiter.acquire()
                await asyncio.sleep(0)
                if i in limit_429s or rng.random() < share_429:
                    limiter.rate_limited(ticket, None)
                    await limiter.release(ticket, ok=False)
                else:
                    await limiter.release(ticket, ok=True)

        await asyncio.gather(*(worker() for _ in range(width)))
        return limiter

    return asyncio.run(go())


def test_the_allowance_recovers_after_a_burst_of_429s_late_in_a_run_despite_random_ones():
    """A faulty server's random 429s (25 % faults, one kind in six: 429) and a
    burst late in the run that shrinks the allowance: within the answers that
    follow it is back where it was."""
    limiter = _faulty_run(1000, range(600, 612), 0.25 / 6)
    assert limiter.least_allowed < 10  # the burst did shrink it ...
    assert limiter.allowed == 10, limiter.status()  # ... and it recovered


def test_random_429s_alone_leave_the_allowance_at_the_end_where_it_started():
    limiter = _faulty_run(1000, range(0), 0.25 / 6)
    assert limiter.rate_limited_count > 20 and limiter.allowed == 10, limiter.status()
