"""Content-addressed response cache (SQLite, shared by the jobs of a sweep).

Key = sha256(model, repeat namespace, request fingerprint). The namespace is
the job's repeat (and case), so each repeat draws its own sample while a rerun
of the same repeat is answered from the cache; repeats never collapse into one
answer. Only successful, schema-valid answers are stored: an error is never
cached. Modes (``llm.cache_mode``): ``read_write`` (default), ``replay`` (a
miss is an error: for CI and for reproducing a logged sweep), ``off``.

Several worker processes write the same file: WAL mode, a busy timeout and
one short transaction per answer keep that safe.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Literal

from silas_exp.errors import LLMError
from silas_exp.llm.base import LLMRequest, LLMResponse, Usage

CacheMode = Literal["read_write", "replay", "off"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    task TEXT NOT NULL,
    text TEXT NOT NULL,
    data TEXT,
    usage TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
)
"""


def cache_key(request: LLMRequest, namespace: str) -> str:
    blob = f"{request.model}\n{namespace}\n{request.fingerprint()}"
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: Path, mode: CacheMode = "read_write") -> None:
        self.path, self.mode = Path(path), mode
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if mode != "off":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False,
                                         isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            # no fsync per answer (WAL stays consistent; a power cut loses the
            # last answers, which are asked again)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA busy_timeout=60000")
            self._conn.execute(_SCHEMA)

    def get(self, request: LLMRequest, namespace: str) -> LLMResponse | None:
        """The cached answer, or None on a miss (``replay`` mode: LLMError)."""
        if self._conn is None:
            return None
        with self._lock:
            row = self._conn.execute(
                "SELECT text, data, usage, model FROM responses WHERE key = ?",
                (cache_key(request, namespace),)).fetchone()
        if row is None:
            if self.mode == "replay":
                raise LLMError(
                    f"llm.cache_mode=replay and no cached answer for a {request.task!r} call to "
                    f"{request.model} (namespace {namespace!r}) in {self.path}. Record the answers "
                    "first with llm.cache_mode=read_write, or point llm.cache_dir at the cache that "
                    "has them.", reason="cache_miss")
            return None
        text, data, usage, model = row
        return LLMResponse(text=text, data=json.loads(data) if data else None,
                           usage=Usage(**json.loads(usage)), model=model, backend="cache",
                           cached=True)

    def put(self, request: LLMRequest, namespace: str, response: LLMResponse) -> None:
        if self._conn is None or self.mode == "replay" or response.cached:
            return
        row = (cache_key(request, namespace), response.model, request.task, response.text,
               json.dumps(response.data) if response.data is not None else None,
               json.dumps(asdict(response.usage)))
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, task, text, data, usage) "
                "VALUES (?, ?, ?, ?, ?, ?)", row)

    def __len__(self) -> int:
        if self._conn is None:
            return 0
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        if self._conn is not None:
            with self._lock:
                self._conn.close()
            self._conn = None
