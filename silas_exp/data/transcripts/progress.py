"""What ``silas-exp import`` says while it works, and the size it refuses.

An import reads each file whole, then scrubs every string of every session
twice (once to learn the identities it shows, once to replace them), which is
most of its time: 0.26-0.31 MB of input per CPU-second for the generated
coding sessions of ``bench/bench_import.py``, 5 MB and 50 MB alike. A large export therefore takes
minutes; the import says so as it goes, on stderr, and refuses a file over
``--max-mb`` (memory grows with the file: it is parsed whole) before reading it.

Lines start with ``import:``. The first names each file and its size; during
the scrubbing, one line every ``every`` seconds gives the share done, the
rate and the time left; each later step of a large import is named as it
starts; the last line gives the whole import's size, time and MB/s. An
import of small files prints only that last line.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from silas_exp.errors import SuiteError

MB = 1 << 20
DEFAULT_MAX_MB = 200.0  # --max-mb: a larger file is refused before it is read
LARGE_MB = 1.0  # from this input size on, each step is named as it starts
EVERY_S = 5.0  # at most one progress line this often during the scrubbing
# MB of input per CPU-second, bench/bench_import.py's range (0.26-0.31) rounded outwards
RATE_RANGE = (0.25, 0.35)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def check_size(path: Path, max_mb: float) -> float:
    """The file's size in MB; a SuiteError naming the limit and the fix when
    it is larger than ``max_mb``."""
    size = path.stat().st_size / MB
    if size > max_mb:
        slow, fast = (size / rate for rate in RATE_RANGE)
        raise SuiteError(
            f"{path}: {size:,.0f} MB is over the import's limit of {max_mb:g} MB (--max-mb). "
            "An import parses the file whole (memory grows with it) and scrubs its text at "
            f"about {RATE_RANGE[0]}-{RATE_RANGE[1]} MB per CPU-second, so this one would take "
            f"{_duration(fast)} to {_duration(slow)} of CPU. Split the session into smaller "
            f"files, or pass --max-mb {math.ceil(size)} to import it whole.")
    return size


class ImportProgress:
    """Progress lines on ``out`` (stderr by default); ``clock`` for tests."""

    def __init__(self, out: TextIO | None = None, every: float = EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.out, self.every, self.clock = out or sys.stderr, every, clock
        self.started = clock()
        self.total_mb = 0.0

    def say(self, text: str) -> None:
        self.out.write(f"import: {text}\n")
        self.out.flush()

    @property
    def large(self) -> bool:
        return self.total_mb >= LARGE_MB

    def file(self, path: Path, size_mb: float) -> None:
        self.total_mb += size_mb
        if self.large:
            self.say(f"{path.name}: {size_mb:,.1f} MB; reading it")

    def step(self, text: str) -> None:
        """A step of a large import, named as it starts."""
        if self.large:
            self.say(text)

    def work(self, label: str, total_chars: int) -> Callable[[int], None]:
        """A counter for a long step over ``total_chars`` characters: call it
        with the characters just done; it prints at most every ``every`` s."""
        start = last = self.clock()
        done = 0

        def tick(chars: int) -> None:
            nonlocal done, last
            done += chars
            now = self.clock()
            if now - last < self.every or not total_chars:
                return
            last = now
            rate = done / max(now - start, 1e-9)
            left = (total_chars - done) / rate if rate else math.inf
            self.say(f"{label}: {min(done / total_chars, 1.0):.0%} done, {rate / MB:.2f} MB of "
                     f"text/s, ~{_duration(left)} left")

        return tick

    def finished(self) -> str:
        """The whole import's size, time and rate (one line for the report)."""
        seconds = self.clock() - self.started
        return (f"imported {self.total_mb:,.1f} MB in {_duration(seconds)} "
                f"({self.total_mb / max(seconds, 1e-9):.2f} MB/s)")
