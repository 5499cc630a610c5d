"""A loaded suite, kept for the next job of the same process.

The basic launcher runs every job of a sweep in one process, and each job used
to load and validate the same suite again (~0.2 s a job for the shipped
``default`` suite: pydantic validation of every case and session). A suite is
read-only data once loaded (per-case parses and probe plans are filled
deterministically), so jobs share one ``LoadedSuite`` as long as no file under
the suite's folder changed: the cache key is the path and, for every file under
the folder, its size and modification time.
"""

from __future__ import annotations

import os
from pathlib import Path

from silas_exp.data.suites.loader import LoadedSuite, load_suite

_LOADED: dict[str, tuple[tuple, LoadedSuite]] = {}


def signature(root: Path) -> tuple:
    """Every file under ``root``: (folder, name, size, modification time in ns).
    A generated pool's case files are left out: they appear as jobs first read
    them, and each is made from the recipe, never edited."""
    entries = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".pool-"))
        for name in sorted(files):
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue  # vanished while listing: the load itself will say so
            entries.append((folder, name, st.st_size, st.st_mtime_ns))
    return tuple(entries)


def load_suite_cached(path: str | Path) -> LoadedSuite:
    """``load_suite(path)``, reused while the suite's files are unchanged."""
    where = Path(path).resolve()
    key, sig = f"{where}|{path}", signature(where if where.is_dir() else where.parent)
    hit = _LOADED.get(key)
    if hit is not None and hit[0] == sig:
        return hit[1]
    loaded = load_suite(path)
    _LOADED[key] = (sig, loaded)
    return loaded
