"""The compiled replay's machine code, compiled ahead of the jobs that need it.

numba keeps the compiled loop's machine code in a cache per version of the
code (``silas_exp/jit.py``), so the first clone of a version on a machine
compiles it on its first replay: ~40 s
of CPU on one core (numba compiles one function at a time), which a sweep's
launching process used to spend before it forked its workers, the second
core idle. ``start`` begins that compile in a process of its own as soon as a
sweep starts, when numba's cache does not hold the loop yet; the pre-flight,
the pool's cases (``silas_exp.study.loop``) and the report's imports then run
beside it, on the other core. The warm-up before the workers fork
(``silas_exp.run.execute.warm_up``) ``wait``s for it, then loads the code from
the cache as on any later run. If the compile fails there (a cache folder it
cannot write, say), the warm-up compiles in the launching process as it
always did: the results are the same either way, only the time differs.

Whether the cache holds the loop is read from numba's own index of each
compiled function (``KERNEL_MODULES``); a module that adds compiled functions
to the warm-up belongs in that list (a test checks it).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

# the modules whose compiled functions ``compiled.warm_up`` loads or compiles
KERNEL_MODULES = ("silas_exp.eviction.two_tier.kernel", "silas_exp.scorers.prompt_kernel")

_compile: subprocess.Popen | None = None  # the compile under way, if any


def cached() -> bool:
    """Whether numba's cache holds the machine code of every function the
    warm-up compiles (of each ``KERNEL_MODULES`` function compiled on its own:
    those inlined into others have none), for this source and numba."""
    from numba.core.dispatcher import Dispatcher

    try:
        for name in KERNEL_MODULES:
            for fn in vars(importlib.import_module(name)).values():
                if (isinstance(fn, Dispatcher) and fn.targetoptions.get("inline", "never") == "never"
                        and not fn._cache._cache_file._load_index()):
                    return False
    except Exception:  # noqa: BLE001  (numba's internals moved: compile ahead, which is harmless)
        return False
    return True


def start() -> bool:
    """Compile the replay's loop in a background process unless numba's cache
    holds it or the compiled replay is off; True when a compile started."""
    global _compile
    from silas_exp.context.replay import compiled_enabled

    if _compile is not None or not compiled_enabled() or cached():
        return False
    root = str(Path(__file__).resolve().parents[3])  # this silas_exp, whatever the child's path
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    _compile = subprocess.Popen([sys.executable, "-m", "silas_exp.eviction.two_tier.warm", str(os.getpid())],
                                env={**os.environ, "PYTHONPATH": path},
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    return True


def compiling() -> bool:
    """Whether the compile ``start`` began is still running."""
    return _compile is not None and _compile.poll() is None


def wait() -> None:
    """Wait for the compile ``start`` began, if any (whatever its outcome: the
    warm-up that follows compiles in this process what is not in the cache)."""
    global _compile
    if _compile is not None:
        _compile.wait()
        _compile = None


def die_with(parent: int) -> None:
    """SIGKILL this process when the sweep that started it ends (Linux's
    ``PR_SET_PDEATHSIG``): no compile outlives its sweep."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the compile ends by itself
        return
    if os.getppid() != parent:  # it ended before the call
        os._exit(1)

