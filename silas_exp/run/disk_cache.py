"""Results a job computes only to measure (the offline calibration), kept on
disk under ``paths.cache`` and shared by every process of a sweep (the workers
of a parallel launcher) and by later runs.

Each is deterministic in its key. The key also holds what its computation
depends on beyond the config: a digest of silas_exp's own source and the
suite's file signature (every file's size and modification time), so an
edited suite or another version of the code never reads a stale entry. Code
outside silas_exp (a plug-in strategy or control scorer) is not in the
digest: a key that involves a plug-in kind is kept in the process only.

Entries are written atomically: a reader sees a whole entry or none. Pickled
entries hold silas_exp's own objects (the control's reference flushes),
written only here, under the user's cache folder, and read back by the same
code (the key holds its digest). ``computed_once`` reads an entry or computes
and writes it under the entry's lock: parallel workers that need the same
entry at once compute it once, and the others wait and read it (with a real
model, a second computation would be paid twice).
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from silas_exp.data.suites.memo import signature
from silas_exp.jit import source_digest
from silas_exp.plugins import BUILT_IN, Kind
from silas_exp.records import exclusive, write_bytes_atomic

T = TypeVar("T")


def code_digest() -> str:
    """sha256 over silas_exp's Python sources (paths and bytes): the digest
    numba's cache of the compiled loop is kept under too."""
    return source_digest()


def shareable(*kinds: Kind) -> bool:
    """Whether a result computed with these kinds may go to disk (built-in code only)."""
    return all(kind.source == BUILT_IN for kind in kinds)


def cache_key(parts: dict[str, Any], suite_root: Path) -> str:
    """A key for ``parts`` (JSON-able) plus the code digest and the suite's file signature."""
    sig = signature(suite_root if suite_root.is_dir() else suite_root.parent)
    return json.dumps({**parts, "code": code_digest(), "suite_files": sig}, sort_keys=True, default=str)


def entry_path(cache_root: str | Path, kind: str, key: str, suffix: str) -> Path:
    return Path(cache_root) / kind / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}{suffix}"


def computed_once(entry: Path, read: Callable[[Path], T | None], compute: Callable[[], T],
                  write: Callable[[Path, T], object]) -> T:
    """The entry's value: read, or computed and written by the first process
    that needs it while the others wait on its lock."""
    with exclusive(entry):
        value = read(entry)
        if value is None:
            value = compute()
            write(entry, value)
    return value


def write_pickle(entry: Path, value: Any) -> None:
    write_bytes_atomic(entry, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def read_pickle(entry: Path) -> Any | None:
    """The entry, or None when there is none (or it cannot be read: recompute it)."""
    try:
        return pickle.loads(entry.read_bytes())
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001  (a damaged entry is recomputed and replaced)
        return None
