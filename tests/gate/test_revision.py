"""Code revisions on a throwaway git repository: what counts as the same code,
which revisions can be run and why the others cannot, and the worktree a past
revision runs from (made once, reused)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from silas_exp.gate import revision
from silas_exp.gate.revision import NotRunnable, Revision

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def _commit(repo, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "silas_exp").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / ".gitignore").write_text(".cache/\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["numpy>=1"]\n')
    (repo / "silas_exp" / "scorer.py").write_text("WEIGHT = 1\n")
    (repo / "docs" / "a.md").write_text("a\n")
    _git(tmp_path, "init", "-q", str(repo))
    return repo


def test_revisions_read_as_recorded():
    assert Revision.parse("abc123-dirty") == Revision("abc123", True)  # no digest recorded
    assert Revision.parse("abc123-dirty-0123456789ab") == Revision("abc123", True, "0123456789ab")
    assert Revision.parse("unknown") == Revision(None) == Revision.parse(None)
    assert str(Revision("0123456789abcdef")) == "0123456789ab"
    assert str(Revision("0123456789abcdef", True)) == "0123456789ab with uncommitted changes"


def test_only_what_takes_part_in_a_run_makes_code_differ(repo):
    first = _commit(repo, "first")
    assert revision.here(repo) == Revision(first, False)
    (repo / "docs" / "a.md").write_text("b\n")
    docs = _commit(repo, "docs only")
    assert revision.same_code(Revision(first), Revision(docs), repo) is True
    assert revision.differs_here(Revision(first), repo) is False
    (repo / "suites").mkdir()
    (repo / "suites" / "x").mkdir()
    (repo / "suites" / "x" / "baseline.json").write_text("{}")  # the gate's own record
    assert revision.differs_here(Revision(first), repo) is False
    (repo / "silas_exp" / "new.py").write_text("x = 1\n")  # untracked, imported code
    assert revision.differs_here(Revision(first), repo) is True
    assert revision.here(repo).dirty
    (repo / "silas_exp" / "new.py").unlink()
    (repo / "silas_exp" / "scorer.py").write_text("WEIGHT = 2\n")
    changed = _commit(repo, "code")
    assert revision.same_code(Revision(first), Revision(changed), repo) is False
    assert revision.same_code(Revision(first, True), Revision(first), repo) is None
    assert revision.same_code(Revision("f" * 40), Revision(first), repo) is None
    assert "differs from the baseline's revision" in revision.code_note(first, repo)
    assert "`silas-exp regress` compares the code" in revision.code_note(first, repo)
    assert revision.code_note(changed, repo) == ""


def test_a_past_revision_runs_from_a_worktree_made_once(repo):
    first = _commit(repo, "first")
    (repo / "silas_exp" / "scorer.py").write_text("WEIGHT = 2\n")
    _commit(repo, "changed")
    site = revision.site_for(Revision(first), repo)
    assert site.tree == repo / ".cache" / "silas_exp" / "worktrees" / first[:12]
    assert (site.tree / "silas_exp" / "scorer.py").read_text() == "WEIGHT = 1\n"
    assert _git(site.tree, "rev-parse", "HEAD") == first
    stamp = site.tree / "silas_exp" / "__pycache__"
    stamp.mkdir()
    assert revision.site_for(Revision(first), repo).tree == site.tree and stamp.exists()  # reused
    assert revision.site_for(Revision(_git(repo, "rev-parse", "HEAD")), repo).tree is None  # here
    assert not _git(repo, "status", "--porcelain")  # the cache is not part of the checkout


@pytest.mark.parametrize("recorded,why", [
    (None, "recorded no code revision"),
    ("HEAD-dirty", "with uncommitted changes, which no commit holds"),
    ("f" * 40, "is not in the history of"),
    ("OLD", "declares other dependencies than today's (then: numpy>=1; now: numpy>=2)"),
])
def test_revisions_that_cannot_run_say_why(repo, recorded, why):
    first = _commit(repo, "first")
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["numpy>=2"]\n')
    head = _commit(repo, "new numpy")
    text = (recorded or "").replace("HEAD", head).replace("OLD", first) or None
    with pytest.raises(NotRunnable, match=why.replace("(", r"\(").replace(")", r"\)")):
        revision.site_for(Revision.parse(text), repo)


def test_no_checkout_runs_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setattr(revision, "checkout", lambda: None)
    with pytest.raises(NotRunnable, match="does not run from a git checkout"):
        revision.site_for(Revision("a" * 40))


def test_a_run_is_recorded_dirty_only_for_changes_to_what_runs(repo):
    """``silas.git_revision`` (the revision a baseline records) marks uncommitted
    changes that no commit reproduces: the code, new files beside it included,
    not the docs."""
    from silas_exp.tracking.payload import git_revision

    head = _commit(repo, "first")
    recorded = git_revision.__wrapped__  # uncached: the checkout changes under the test
    (repo / "docs" / "a.md").write_text("changed\n")
    assert recorded(str(repo)) == head
    (repo / "silas_exp" / "new.py").write_text("x = 1\n")
    with_new = recorded(str(repo))
    assert with_new.startswith(head + "-dirty-") and len(with_new) == len(head) + 19
    (repo / "silas_exp" / "new.py").unlink()
    (repo / "silas_exp" / "scorer.py").write_text("WEIGHT = 3\n")
    edited = recorded(str(repo))
    assert edited.startswith(head + "-dirty-") and edited != with_new  # other changes, other code
    assert Revision.parse(edited) == revision.here(repo)  # what the gate sees here


def test_uncommitted_changes_run_here_only_when_they_are_the_same(repo):
    _commit(repo, "first")
    (repo / "silas_exp" / "scorer.py").write_text("WEIGHT = 5\n")
    then = revision.here(repo)
    assert then.dirty and then.digest
    assert revision.site_for(then, repo).tree is None  # the same changes: the same code, here
    assert revision.differs_here(then, repo) is False
    (repo / "silas_exp" / "scorer.py").write_text("WEIGHT = 6\n")
    with pytest.raises(NotRunnable, match="this checkout does not have them"):
        revision.site_for(then, repo)
    assert revision.differs_here(then, repo) is None


def test_a_tree_runs_its_own_code_and_never_this_install(tmp_path):
    """The bootstrap takes this environment's editable install out of the path:
    a tree's silas_exp is imported from the tree, and a tree without one fails
    instead of quietly running today's code."""
    tree = tmp_path / "tree"
    (tree / "silas_exp").mkdir(parents=True)
    (tree / "hydra_plugins").mkdir()
    (tree / "silas_exp" / "__init__.py").write_text("")
    (tree / "silas_exp" / "__main__.py").write_text("import silas_exp\nprint(silas_exp.__file__)\n")
    cmd, env = revision.tree_command(tree, "silas_exp")
    ran = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and ran.stdout.strip() == str(tree / "silas_exp" / "__init__.py")
    empty = tmp_path / "empty"
    empty.mkdir()
    cmd, env = revision.tree_command(empty, "silas_exp")
    refused = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "No module named 'silas_exp'" in refused.stderr
