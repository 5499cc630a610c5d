"""The default launcher: the basic launcher's jobs in forked workers. Same
results as the basic launcher, jobs really side by side, a job's
BaseException stops the batch without losing finished work, bad input exits 2,
and jobs that write MLflow themselves get their own database connections."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from hydra_plugins.silas_launcher.silas_launcher import SilasLauncher
from silas_exp.errors import ConfigError

from ..conftest import REPO


class Stop(BaseException):
    """What silas_exp's ``Reported`` is to the launcher: not an Exception."""


def _mark(cfg: DictConfig) -> Path:
    out = Path(HydraConfig.get().runtime.output_dir)
    (out / "ran.json").write_text(json.dumps({"pid": os.getpid(), "start": time.time()}))
    return out


def _slow_second_stops(cfg: DictConfig) -> int:
    out = _mark(cfg)
    if cfg.a == 1:
        raise Stop("job 1 stops the sweep")
    time.sleep(1.5 if cfg.a == 0 else 0.0)
    (out / "end.json").write_text(json.dumps({"end": time.time()}))
    return int(cfg.a)


def _sweep(runner, tmpdir, task, *overrides):
    return runner(calling_file=None, calling_module="hydra.test_utils.a_module",
                  task_function=task, config_path="configs", config_name="compose.yaml",
                  overrides=["hydra/launcher=silas", *overrides], temp_dir=tmpdir)


@pytest.mark.usefixtures("hydra_restore_singletons")
def test_jobs_run_side_by_side_in_worker_processes(hydra_sweep_runner, tmpdir):
    def task(cfg: DictConfig) -> int:
        _mark(cfg)
        time.sleep(1.0)
        return int(cfg.a) * 10

    with _sweep(hydra_sweep_runner, tmpdir, task, "hydra.launcher.n_jobs=2", "+a=0,1,2,3") as sweep:
        assert [r.return_value for r in sweep.returns[0]] == [0, 10, 20, 30]  # batch order
        assert [r.hydra_cfg.hydra.job.num for r in sweep.returns[0]] == [0, 1, 2, 3]
        ran = [json.loads((Path(sweep.temp_dir) / str(i) / "ran.json").read_text())
               for i in range(4)]
    assert os.getpid() not in {r["pid"] for r in ran}
    assert len({r["pid"] for r in ran}) == 2  # two workers, each ran two jobs
    assert abs(ran[0]["start"] - ran[1]["start"]) < 0.9  # the first two started together


@pytest.mark.usefixtures("hydra_restore_singletons")
def test_a_jobs_base_exception_stops_the_batch_and_finished_work_stays(hydra_sweep_runner, tmpdir):
    with pytest.raises(Stop, match="job 1 stops"):
        with _sweep(hydra_sweep_runner, tmpdir, _slow_second_stops, "hydra.launcher.n_jobs=2",
                    "+a=0,1,2,3"):
            pass
    root = Path(tmpdir)
    assert (root / "0" / "end.json").is_file()  # running when job 1 stopped: it finished
    assert (root / "1" / "ran.json").is_file()
    assert not (root / "2").exists() and not (root / "3").exists()  # never started


def _second_dies(cfg: DictConfig) -> None:
    if cfg.a == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer, a segfault


@pytest.mark.usefixtures("hydra_restore_singletons")
def test_a_worker_that_dies_fails_the_sweep_instead_of_hanging(hydra_sweep_runner, tmpdir):
    with pytest.raises(BrokenProcessPool):
        with _sweep(hydra_sweep_runner, tmpdir, _second_dies, "hydra.launcher.n_jobs=2",
                    "+a=0,1,2"):
            pass


@pytest.mark.usefixtures("hydra_restore_singletons")
def test_one_job_or_n_jobs_1_runs_in_this_process(hydra_sweep_runner, tmpdir):
    pids = []

    def task(cfg: DictConfig) -> None:
        pids.append(os.getpid())

    with _sweep(hydra_sweep_runner, tmpdir, task, "hydra.launcher.n_jobs=1", "+a=0,1"):
        pass
    assert pids == [os.getpid(), os.getpid()]


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
