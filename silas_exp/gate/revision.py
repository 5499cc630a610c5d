"""Code revisions: which code a side of a check runs, and a way to run a past
revision's code when today's differs.

A baseline is code, configuration and results. Its code is the revision its
jobs recorded (``silas.git_revision``: a commit, ``-dirty`` when the checkout
had uncommitted changes). A gate compares code with code, so whatever must be
run as the control (other seeds, cases the baseline does not cover, a study's
control arm) runs the baseline's own revision whenever the code here differs
from it.

"The code" is what takes part in a run (:data:`RUNTIME`: the package, its
Hydra plug-ins, configs, suites, probe sets and declared dependencies), so a
commit that only changes docs, tests or benches leaves it the same and the
control runs here, in this process.

Otherwise the revision runs from a ``git worktree`` of its commit (detached,
kept under ``.cache/silas_exp/worktrees/`` of the checkout and reused), in a
process of its own with this environment (this Python and its packages, the
same variables) and ``PYTHONPATH`` set to the worktree. A bootstrap
(:data:`BOOT`) takes this environment's editable install of silas_exp out of
the import path first and checks that silas_exp and its Hydra plug-ins are
imported from the worktree. :func:`site_for` says why a revision cannot be run
(no git, a commit the history does not hold, uncommitted changes, other
declared dependencies).

Hand-written on ``git`` itself: GitPython and pygit2 would add a dependency to
wrap the five commands used here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from silas_exp.records import exclusive
from silas_exp.tracking.payload import RUNTIME_PATHS as RUNTIME
from silas_exp.tracking.payload import changes_digest

WORKTREES = Path(".cache") / "silas_exp" / "worktrees"

# run a module from the tree in argv[1], not from this environment's editable install
BOOT = """\
import runpy, sys
from pathlib import Path
tree = Path(sys.argv[1]).resolve()
sys.meta_path[:] = [f for f in sys.meta_path
                    if not str(getattr(f, "__module__", "")).startswith("__editable__")]
sys.path_hooks[:] = [h for h in sys.path_hooks
                     if not str(getattr(h, "__module__", "")).startswith("__editable__")]
sys.path[:] = [p for p in sys.path if p and not str(p).startswith("__editable__")]  # no cwd
sys.path.insert(0, str(tree))
sys.path_importer_cache.clear()
import importlib.util, pkgutil, hydra_plugins, silas_exp
own = [m.name for m in pkgutil.iter_modules([str(tree / "hydra_plugins")])]
found = [silas_exp.__file__, *(importlib.util.find_spec("hydra_plugins." + m).origin for m in own)]
wrong = [p for p in found if not Path(p).resolve().is_relative_to(tree)]
if wrong:
    sys.exit(f"silas_exp meant to run from {tree} imported {wrong}")
sys.argv = [sys.argv[2], *sys.argv[3:]]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


class NotRunnable(Exception):
    """A revision this checkout cannot run; the message says why."""


@dataclass(frozen=True)
class Revision:
    """A code revision as jobs record it."""

    commit: str | None  # None: unknown (no git when it ran)
    dirty: bool = False  # it ran with uncommitted changes
    digest: str | None = None  # of those changes (None: not recorded)

    @classmethod
    def parse(cls, text: str | None) -> Revision:
        """``abc…``, ``abc…-dirty-<digest>``, ``abc…-dirty`` (a record from before
        digests) or ``unknown`` (``silas.git_revision``)."""
        text = (text or "").strip()
        if not text or text == "unknown":
            return cls(None)
        commit, _, rest = text.partition("-dirty")
        return cls(commit, bool(_), rest.removeprefix("-") or None)

    def same_changes(self, other: Revision) -> bool:
        """The same commit with the same uncommitted changes (both known)."""
        return (self.commit is not None and self.commit == other.commit and self.dirty
                and other.dirty and self.digest is not None and self.digest == other.digest)

    def __str__(self) -> str:
        if self.commit is None:
            return "an unknown revision"
        return self.commit[:12] + (" with uncommitted changes" if self.dirty else "")


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          timeout=120, check=check)


@cache
def checkout() -> Path | None:
    """The git checkout silas_exp runs from (None: an installed copy, or no git)."""
    here = Path(__file__).resolve().parents[2]
    if shutil.which("git") is None:
        return None
    try:
        top = _git(here, "rev-parse", "--show-toplevel").stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None
    return Path(top) if top and Path(top).resolve() == here else None


def here(repo: Path | None = None) -> Revision:
    """The code this process runs (``repo``: default the checkout it runs from):
    HEAD, and whether it has uncommitted changes to what takes part in a run."""
    repo = repo or checkout()
    if repo is None:
        return Revision(None)
    head = _git(repo, "rev-parse", "HEAD").stdout.strip()
    dirty = _changed(repo, head)
    return Revision(head, dirty, changes_digest(repo) if dirty else None)


def _changed(repo: Path, commit: str) -> bool:
    """Whether the working tree's runtime files differ from ``commit``'s."""
    diff = _git(repo, "diff", "--quiet", commit, "--", *RUNTIME, check=False)
    if diff.returncode not in (0, 1):
        raise NotRunnable(f"git diff against {commit[:12]} failed: {diff.stderr.strip()}")
    untracked = _git(repo, "ls-files", "--others", "--exclude-standard", "--", *RUNTIME).stdout
    return diff.returncode == 1 or bool(untracked.strip())


def _has(repo: Path, commit: str) -> bool:
    return _git(repo, "cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0


def same_code(a: Revision, b: Revision, repo: Path | None = None) -> bool | None:
    """Whether two recorded revisions run the same code; None when it cannot
    be told (an unknown or uncommitted revision, a commit not in the history)."""
    repo = repo or checkout()
    if a.same_changes(b):
        return True
    if repo is None or a.commit is None or b.commit is None or a.dirty or b.dirty:
        return None
    if a.commit == b.commit:
        return True
    if not (_has(repo, a.commit) and _has(repo, b.commit)):
        return None
    diff = _git(repo, "diff", "--quiet", a.commit, b.commit, "--", *RUNTIME, check=False)
    return diff.returncode == 0


def differs_here(rev: Revision, repo: Path | None = None) -> bool | None:
    """Whether the code here differs from ``rev``'s; None when it cannot be told."""
    repo = repo or checkout()
    if repo is None or rev.commit is None:
        return None
    if rev.dirty:
        return False if rev.same_changes(here(repo)) else None
    if not _has(repo, rev.commit):
        return None
    return _changed(repo, rev.commit)


def _dependencies(text: str) -> dict[str, object]:
    project = tomllib.loads(text).get("project", {})
    return {"dependencies": sorted(project.get("dependencies", [])),
            "requires-python": project.get("requires-python")}


@dataclass(frozen=True)
class Site:
    """Where a side's jobs run: here (``tree`` None) or a worktree of ``revision``."""

    revision: Revision
    tree: Path | None = None

    def describe(self) -> str:
        if self.tree is None:
            return f"{self.revision} (this checkout's code)"
        return f"{self.revision} (a worktree of it: {self.tree})"


def site_for(rev: Revision, repo: Path | None = None) -> Site:
    """Where ``rev``'s code can run: here when the code here is the same, else
    a worktree of its commit. Raises NotRunnable saying why neither can."""
    repo = repo or checkout()
    if repo is None:
        raise NotRunnable("silas_exp does not run from a git checkout here, so no other "
                          "revision can be checked out")
    if rev.commit is None:
        raise NotRunnable("its jobs recorded no code revision (they ran without git)")
    if rev.dirty:
        if rev.same_changes(here(repo)):
            return Site(rev)  # the same uncommitted changes here: the same code
        raise NotRunnable(f"its jobs ran commit {rev.commit[:12]} with uncommitted changes, "
                          "which no commit holds (and this checkout does not have them)")
    if not _has(repo, rev.commit):
        raise NotRunnable(f"commit {rev.commit[:12]} is not in the history of {repo} (fetch it, "
                          "or clone the repository it was promoted from)")
    if not _changed(repo, rev.commit):
        return Site(rev)
    then = _git(repo, "show", f"{rev.commit}:pyproject.toml", check=False)
    mine = (repo / "pyproject.toml").read_text() if (repo / "pyproject.toml").is_file() else ""
    if then.returncode == 0 and _dependencies(then.stdout) != _dependencies(mine):
        old, new = _dependencies(then.stdout), _dependencies(mine)
        gone = sorted(set(old["dependencies"]) - set(new["dependencies"]))  # type: ignore[arg-type]
        added = sorted(set(new["dependencies"]) - set(old["dependencies"]))  # type: ignore[arg-type]
        raise NotRunnable(f"its pyproject.toml declares other dependencies than today's (then: "
                          f"{', '.join(gone) or '—'}; now: {', '.join(added) or '—'}), so this "
                          "environment does not run it as it ran")
    return Site(rev, worktree(repo, rev.commit))


def worktree(repo: Path, commit: str) -> Path:
    """A detached worktree of ``commit`` under the checkout's cache, made once
    and reused (a lock keeps two checks from making it at once)."""
    tree = repo / WORKTREES / commit[:12]
    with exclusive(tree.with_name(tree.name + ".make")):
        if (tree / ".git").exists():
            head = _git(tree, "rev-parse", "HEAD", check=False).stdout.strip()
            if head == commit:
                return tree
            _git(repo, "worktree", "remove", "--force", str(tree), check=False)
        shutil.rmtree(tree, ignore_errors=True)
        _git(repo, "worktree", "prune", check=False)
        made = _git(repo, "worktree", "add", "--detach", str(tree), commit, check=False)
        if made.returncode != 0:
            raise NotRunnable(f"git worktree add of {commit[:12]} failed: {made.stderr.strip()}")
    return tree


def tree_command(tree: Path, module: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment that run ``python -m module args`` with the
    code of ``tree`` and this environment's packages."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return [sys.executable, "-c", BOOT, str(tree), module, *args], env


def code_note(recorded: str | None, repo: Path | None = None) -> str:
    """What a study whose control is a baseline says about code: empty when
    today's code is the baseline's revision."""
    rev = Revision.parse(recorded)
    differs = differs_here(rev, repo)
    if differs is False:
        return ""
    why = ("today's code differs from the baseline's revision" if differs else
           "today's code cannot be compared with the baseline's revision")
    return (f"{why} ({rev}), so this study compares configurations on today's code; "
            "`silas-exp regress` compares the code with the baseline's")
