"""The replay loop compiled ahead (eviction/two_tier/ahead.py): a sweep starts
the compile in a process of its own when numba's cache lacks the loop, and the
first replay waits for it, then loads the code from the cache."""

from __future__ import annotations

import os
import subprocess
import sys

from silas_exp.eviction.two_tier import ahead, compiled

from ..conftest import REPO


def test_every_module_of_compiled_functions_is_listed():
    """A module whose functions numba caches is one whose cache ``cached`` reads."""
    found = set()
    for path in (REPO / "silas_exp").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "numba" in text and "cache=True" in text:
            found.add(".".join(path.relative_to(REPO).with_suffix("").parts))
    assert found == set(ahead.KERNEL_MODULES)


def test_cached_reads_numba_s_own_index(tmp_path):
    """Cached once the warm-up has loaded (or compiled) the loop; not in an empty
    cache folder."""
    compiled.warm_up()
    assert ahead.cached()
    proc = subprocess.run([sys.executable, "-c", "from silas_exp.eviction.two_tier import ahead; "
                           "print(ahead.cached())"], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False"


def test_nothing_starts_when_the_cache_holds_the_loop_or_replays_are_python(monkeypatch):
    monkeypatch.setattr(ahead, "cached", lambda: True)
    assert not ahead.start() and not ahead.compiling()
    monkeypatch.setattr(ahead, "cached", lambda: False)
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "python")
    assert not ahead.start() and not ahead.compiling()


def test_a_started_compile_runs_beside_and_the_first_replay_waits_for_it(monkeypatch):
    """With the cache taken as cold, ``start`` runs the warm-up in another process
    (here it loads from the cache this test suite made); the next replay in this
    process waits for that process to end before it runs."""
    monkeypatch.setattr(ahead, "cached", lambda: False)
    assert ahead.start()
    try:
        assert ahead.compiling()
        child = ahead._compile
        assert child is not None and child.args[1:3] == ["-m", "silas_exp.eviction.two_tier.warm"]
        assert not ahead.start()  # one compile at a time
        compiled.warm_up()
        assert child.returncode == 0 and not ahead.compiling() and ahead._compile is None
    finally:
        ahead.wait()
