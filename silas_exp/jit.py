"""Where numba keeps silas_exp's compiled machine code: one folder per version
of the code in the user's cache, so a new clone (or a new virtualenv) of the
same version loads the replay loop instead of compiling it again.

numba's own locators key a cache by the source file's folder: beside the
module (``__pycache__``, so every clone starts empty) or, with
``NUMBA_CACHE_DIR``, under a hash of the folder's absolute path (a clone in
another folder misses too). ``VersionLocator`` keeps silas_exp's compiled
functions under

    <user cache>/silas_exp/numba/<digest of silas_exp's sources>/<folder in the package>

``<user cache>`` is ``$XDG_CACHE_HOME``, else ``~/.cache``. The same code
finds the same entries wherever it is cloned. Any edit anywhere in the
package starts a new folder. numba itself checks only the function's own file, so a kernel
built against another module's constant or record type could otherwise load
stale machine code after an edit there. numba's index still checks what it
always does within a folder: the file's content, numba's version, the
signature and the CPU.
The newest ``KEEP`` folders are kept; older ones go when a new one is made.

When ``NUMBA_CACHE_DIR`` is set, numba's own locator is used, as the user
asked. When the user cache cannot be written, numba's next locator (beside
the module) is used, as before.

Hand-written: numba has no public API to choose a cache folder per function.
``install`` puts the locator first in numba's list of locator classes
(``numba.core.caching.CacheImpl._locator_classes``, the list
``NUMBA_CACHE_LOCATOR_CLASSES`` also overrides), before the compiled modules
decorate their functions. If that list moves in a later numba, ``install``
does nothing and numba caches beside the module, as it did before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
KEEP = 4  # versions of the code whose machine code stays in the user cache


@lru_cache(maxsize=1)
def source_digest() -> str:
    """sha256 over silas_exp's Python sources (paths relative to the package, and bytes)."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        h.update(path.relative_to(PACKAGE).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def cache_root() -> Path:
    """The folder that holds one subfolder per version of the code."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "silas_exp" / "numba"


def version_folder() -> Path:
    return cache_root() / source_digest()[:16]


def prune(root: Path, keep: str, most: int = KEEP) -> None:
    """Remove all but the ``most`` newest version folders under ``root`` (never ``keep``)."""
    try:
        folders = [p for p in root.iterdir() if p.is_dir() and p.name != keep]
    except OSError:
        return
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[most - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def _locator_class():
    from numba.core.caching import _CacheLocator, _SourceFileBackedLocatorMixin

    class VersionLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
        """numba's cache of a silas_exp function, under this version's folder."""

        _pruned = False

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            inner = Path(py_file).resolve().parent.relative_to(PACKAGE)
            self._cache_path = str(version_folder() / inner)

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            # the file's bytes, not its modification time: a new clone has new times
            return hashlib.sha256(Path(self._py_file).read_bytes()).hexdigest()

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.environ.get("NUMBA_CACHE_DIR") or not Path(py_file).resolve().is_relative_to(PACKAGE):
                return None
            try:
                self = cls(py_func, py_file)
                self.ensure_cache_path()
            except OSError:
                return None  # numba's next locator: beside the module
            if not cls._pruned:
                cls._pruned = True
                prune(cache_root(), version_folder().name)
            return self

    return VersionLocator


@lru_cache(maxsize=1)
def install() -> bool:
    """Put ``VersionLocator`` first among numba's cache locators (once per
    process); False when numba's internals moved and numba's own are used."""
    try:
        from numba.core import caching

        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # ``_CacheImpl`` in older numba
        locator = _locator_class()
        if locator not in impl._locator_classes:
            impl._locator_classes.insert(0, locator)
    except (ImportError, AttributeError, TypeError):
        return False
    return True
