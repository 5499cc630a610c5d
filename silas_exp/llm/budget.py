"""Spend ledger for ``llm.max_usd``: one SQLite file per sweep invocation, so
the cap holds across every job and worker process of the sweep.

Each paid answer adds its cost; each call first checks the total. Calls
already in flight when the cap is reached still complete (at most
``llm.max_connections`` of them), so a sweep may overshoot the cap by that
much; docs/llm.md says so.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path


class SpendLedger:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False,
                                     isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=60000")
        self._conn.execute("CREATE TABLE IF NOT EXISTS spend (job TEXT NOT NULL, usd REAL NOT NULL)")

    def add(self, job: str, usd: float) -> None:
        if usd <= 0:
            return
        with self._lock:
            self._conn.execute("INSERT INTO spend (job, usd) VALUES (?, ?)", (job, usd))

    def total(self) -> float:
        with self._lock:
            return float(self._conn.execute("SELECT COALESCE(SUM(usd), 0) FROM spend").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
