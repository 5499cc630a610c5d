"""The default launcher: the basic launcher's jobs in forked workers. Same
results as the basic launcher, bad input in a worker exits 2, jobs that write
MLflow themselves get their own database connections; and the tests that run
Hydra in the test process (``inprocess_suites.py``), in a pytest of their own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from hydra_plugins.silas_launcher.silas_launcher import SilasLauncher
from silas_exp.errors import ConfigError

from ..conftest import REPO

INPROCESS = Path(__file__).with_name("inprocess_suites.py")


def test_hydras_launcher_suites_and_the_forked_workers_in_a_pytest_of_their_own():
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-o", "addopts=", str(INPROCESS)], cwd=REPO, capture_output=True,
                          text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary
    assert int(summary.split(" passed")[0].split()[-1]) >= 30, summary  # 20 of Hydra's, 10 here


def test_n_jobs_below_one_is_refused():
    with pytest.raises(ConfigError, match="n_jobs=0.*1 or more"):
        SilasLauncher(n_jobs=0)


TIMINGS = ("latency", "seconds", "time", "wall")  # what may differ between two runs
# what a job spent itself on measurement: a variant that reaches a case before
# the control job of its repeat (in the other worker) replays the control's
# proposals itself, else it reads them from the disk cache
OVERHEAD = "llm.overhead."


def _results(sweep_dir: Path) -> dict[str, tuple[dict, list[dict]]]:
    """Each job's metrics and per-case results, minus timings, by variant and repeat."""
    out = {}
    for job in sorted(sweep_dir.glob("*/result.json")):
        record = json.loads(job.read_text())
        cases = [json.loads(line) for line in (job.parent / "results.jsonl").read_text().splitlines()]
        for case in cases:
            case.pop("latency_ms")
        metrics = {k: v for k, v in record["metrics"].items()
                   if not any(t in k for t in TIMINGS) and not k.startswith(OVERHEAD)}
        out[f"{record['variant']}#{record['repeat']}"] = (metrics, cases)
    return out


def _report(sweep_dir: Path) -> list[str]:
    return [line for line in (sweep_dir / "ablation.md").read_text().splitlines()
            if not line.startswith(("# Ablation", "python -m"))]


def test_same_results_as_the_basic_launcher(cli, tmp_path):
    args = ("-m", "scorer=heuristic,weights", "repeats=2", "suite=smoke", "tracking=none")
    forked = cli(*args)
    assert forked.returncode == 0, forked.stderr[-2000:]
    assert "2 at a time in forked workers" in forked.stdout + forked.stderr
    basic_dir = tmp_path / "basic"
    basic = cli(*args, "hydra/launcher=basic", f"paths.suites={REPO / 'suites'}",
                f"paths.cache={basic_dir / 'cache'}", f"hydra.sweep.dir={basic_dir / 'multirun'}",
                isolate=False)
    assert basic.returncode == 0, basic.stderr[-2000:]
    a, b = _results(tmp_path / "multirun"), _results(basic_dir / "multirun")
    assert len(a) == 4 and a == b
    assert _report(tmp_path / "multirun") == _report(basic_dir / "multirun")


def test_bad_input_in_a_worker_exits_2_naming_the_file(cli, tmp_path):
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "suite.json").write_text("{not json")
    proc = cli("-m", "scorer=heuristic,weights", "repeats=2", f"suite.path={bad}", "tracking=none")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert str(bad / "suite.json") in proc.stderr and "not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_jobs_that_write_mlflow_themselves_use_their_own_connections(cli, tmp_path):
    """With tracking.background=false the launching process has MLflow open
    (the parent run) when it forks; each worker must open its own SQLite
    connections, and every run ends FINISHED in the one store."""
    proc = cli("-m", "scorer=heuristic,weights,online", "repeats=2", "suite=smoke",
               "tracking.background=false", "hydra.launcher.n_jobs=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    children = [r for r in runs if r.data.tags.get("silas.kind") != "sweep"]
    assert len(children) == 6 and all(r.info.status == "FINISHED" for r in runs)
    assert all("context.retrieval_relevance" in r.data.metrics for r in children)


def test_a_broken_suite_every_job_shares_is_reported_once_before_any_job(cli, tmp_path):
    bad = tmp_path / "broken"
    (bad / "cases").mkdir(parents=True)
    (bad / "suite.json").write_text((REPO / "suites" / "smoke" / "suite.json").read_text())
    (bad / "cases" / "bad.json").write_text('{"case_id": "x", "input": ')
    proc = cli("-m", "scorer=heuristic,weights", "repeats=2", f"suite.path={bad}", "tracking=none",
               "hydra.launcher.n_jobs=2")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count(f"{bad / 'cases' / 'bad.json'}: not valid JSON") == 1, proc.stderr
    assert not list((tmp_path / "multirun").glob("*/job.json"))  # no job started


def test_a_bad_value_every_running_job_shares_prints_once_per_invocation(cli, tmp_path):
    args = ("-m", "repeat=0,1,2", "scorer=weights", "scorer.l2=-3", "tracking=none",
            "hydra.launcher.n_jobs=2")
    message = "scorer.l2 = -3: input should be greater than or equal to 0"
    for _ in range(2):  # the same broken command again, into the same sweep folder: reported again
        proc = cli(*args)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert proc.stderr.count(message) == 1, proc.stderr
