"""numba's cache of silas_exp's compiled functions, one folder per version of the
code in the user cache (silas_exp/jit.py): a second copy of the same code in
another folder loads what the first compiled; an edit anywhere in the package
compiles again; ``NUMBA_CACHE_DIR`` and an unwritable cache fall back to numba's
own locators."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from silas_exp import jit

from ..conftest import REPO

PROBE = '''
from numba import njit

from silas_exp import jit

jit.install()


@njit(cache=True)
def plus_one(x):
    return x + 1
'''

RUN = ("import json, silas_exp, silas_exp._probe as p; p.plus_one(1); "
       "print(json.dumps({'file': silas_exp.__file__, 'hits': sum(p.plus_one.stats.cache_hits.values()), "
       "'misses': sum(p.plus_one.stats.cache_misses.values()), "
       "'path': p.plus_one._cache._cache_path}))")


def copy_of_package(dest: Path) -> Path:
    """This silas_exp, plus a module with one cached compiled function, at ``dest``."""
    shutil.copytree(REPO / "silas_exp", dest / "silas_exp",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (dest / "silas_exp" / "_probe.py").write_text(PROBE, encoding="utf-8")
    return dest


def run_probe(root: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", RUN], cwd=root, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(root)}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).resolve().is_relative_to(root.resolve()), out  # the copy's code ran
    return out


def newcomer(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    return {**env, "XDG_CACHE_HOME": str(cache)}


def test_a_new_copy_of_the_same_code_loads_what_the_first_compiled(tmp_path):
    env = newcomer(tmp_path / "cache")
    first = run_probe(copy_of_package(tmp_path / "a"), env)
    assert (first["hits"], first["misses"]) == (0, 1)
    assert Path(first["path"]).is_relative_to(tmp_path / "cache" / "silas_exp" / "numba")
    time.sleep(0.01)  # the second copy's files are newer: numba must not read times
    second = run_probe(copy_of_package(tmp_path / "b"), env)
    assert (second["hits"], second["misses"]) == (1, 0)
    assert second["path"] == first["path"]


def test_an_edit_elsewhere_in_the_package_compiles_again(tmp_path):
    """The function's own file is unchanged; another module is edited (numba
    alone would load the old machine code)."""
    env = newcomer(tmp_path / "cache")
    first = run_probe(copy_of_package(tmp_path / "a"), env)
    edited = copy_of_package(tmp_path / "b")
    with open(edited / "silas_exp" / "errors.py", "a", encoding="utf-8") as f:
        f.write("\n# an edit\n")
    second = run_probe(edited, env)
    assert (second["hits"], second["misses"]) == (0, 1)
    assert second["path"] != first["path"]


def test_numba_cache_dir_and_an_unwritable_cache_use_numba_s_own_locators(tmp_path):
    root = copy_of_package(tmp_path / "a")
    chosen = run_probe(root, {**newcomer(tmp_path / "cache"), "NUMBA_CACHE_DIR": str(tmp_path / "nb")})
    assert Path(chosen["path"]).is_relative_to(tmp_path / "nb")
    (tmp_path / "file").write_text("not a folder")
    beside = run_probe(root, newcomer(tmp_path / "file"))
    assert Path(beside["path"]) == root / "silas_exp" / "__pycache__"


def test_old_versions_are_pruned_to_the_newest_few(tmp_path):
    for i in range(jit.KEEP + 2):
        folder = tmp_path / f"v{i}"
        folder.mkdir()
        os.utime(folder, (1_000 + i, 1_000 + i))
    (tmp_path / "current").mkdir()
    jit.prune(tmp_path, "current")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["current", *[f"v{i}" for i in range(3, jit.KEEP + 2)]])


def test_the_digest_covers_every_source_file():
    assert len(jit.source_digest()) == 64
    assert jit.version_folder().name == jit.source_digest()[:16]


@pytest.mark.parametrize("module", ["silas_exp.eviction.two_tier.kernel", "silas_exp.scorers.prompt_kernel"])
def test_the_compiled_modules_install_the_locator_before_they_compile(module):
    import importlib

    importlib.import_module(module)
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    assert impl._locator_classes[0].__name__ == "VersionLocator"
