"""A gate compares code with code, end to end in a scratch clone: a baseline
run with the clone's commit; a committed code change checked under other
seeds, whose control (the baseline's configuration under the same seeds) runs
the baseline's commit from a worktree, in its own process; the same code
reproduces the baseline's side exactly, and the change is caught."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from silas_exp.baselines import SuiteFolder
from silas_exp.gate.revision import tree_command
from silas_exp.records import read_job_result
from silas_exp.schema.baseline import BaselineJob, BaselineRecord

from ..conftest import REPO

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                                 reason="needs git and a clone of the repository")]
TARGET = "silas_exp/scorers/calibrated.py"
ORIGINAL = 'return LinearScorer("weights", np.asarray(ctx.calibration.weights, dtype=float))'
INJECTED = 'return LinearScorer("weights", settings.base.vector())'
DESIGN = ["suite.max_cases=40", "cases_per_block=null", "seed=0"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def _run(clone: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    cmd, env = tree_command(clone, module, *args)
    env = {**env, "SILAS_EXP_ROOT": str(clone), "MLFLOW_DISABLE_TELEMETRY": "true"}
    return subprocess.run(cmd, cwd=clone, env=env, capture_output=True, text=True, timeout=1500)


def _commit(clone: Path, text: str, message: str) -> str:
    (clone / TARGET).write_text(text)
    _git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", message)
    return _git(clone, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A scratch clone of this repository's HEAD with a baseline of
    ``scorer=weights`` on 40 cases, recorded with the clone's commit."""
    tmp = tmp_path_factory.mktemp("code")
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    job = _run(clone, "silas_exp", "scorer=weights", *DESIGN, "tracking=none",
               f"hydra.run.dir={tmp / 'baseline'}")
    assert job.returncode == 0, job.stderr[-3000:]
    result = read_job_result(tmp / "baseline" / "result.json").with_cases(tmp / "baseline")
    store = SuiteFolder(tmp / "store")
    store.dir.mkdir()
    store.write(BaselineRecord(
        suite="default", suite_version=json.loads((clone / "suites" / "default" / "suite.json")
                                                  .read_text())["version"],
        variant="scorer=weights", overrides=["scorer=weights"], design=["suite.max_cases=40"],
        git_revision=_git(clone, "rev-parse", "HEAD"), seed=0, cases_per_block=None,
        source_run_id="b" * 32, jobs=[BaselineJob(metrics=result.metrics,
                                                  results=list(result.run.results))]))
    return clone, store, (clone / TARGET).read_text()


def _regress(clone: Path, store: SuiteFolder, work: Path, *args: str):
    proc = _run(clone, "silas_exp.cli.main", "regress", "--config", "scorer=weights", *args,
                "--no-log", "--suite-dir", str(store.dir), "--work-dir", str(work))
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _delta(stdout: str, metric: str) -> str:
    """The Δ [CI] cell of a gated metric's row."""
    row = next(line for line in stdout.splitlines() if f"(`{metric}`) |" in line)
    return row.split("|")[4].strip()


def test_the_baselines_side_runs_its_own_commit_and_the_change_is_caught(clone, tmp_path):
    clone, store, original = clone
    assert ORIGINAL in original
    base = store.read().git_revision
    same = _commit(clone, original.replace(ORIGINAL, ORIGINAL + "  # a comment"), "comment")
    proc = _regress(clone, store, tmp_path / "same", "--seeds-from", "1")
    worktree = clone / ".cache" / "silas_exp" / "worktrees" / base[:12]
    assert f"code {base[:12]} (a worktree of it: {worktree})" in proc.stdout, proc.stdout
    assert f"code {same[:12]} (this checkout's code)" in proc.stdout
    assert (worktree / TARGET).read_text() == original  # the baseline's own code
    for metric in ("context.retrieval_relevance", "ir.ndcg_at_10", "summary.pass"):
        assert _delta(proc.stdout, metric) == "+0.000 [+0.000, +0.000]", proc.stdout
    _commit(clone, original.replace(ORIGINAL, INJECTED), "the calibration ignored")
    caught = _regress(clone, store, tmp_path / "changed", "--seeds-from", "1")
    assert caught.returncode == 1, caught.stdout[-3000:]
    assert _delta(caught.stdout, "ir.ndcg_at_10").startswith("−")  # nDCG@10 worse, not 0
