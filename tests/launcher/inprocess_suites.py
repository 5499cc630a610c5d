"""Tests that run Hydra in the test process, run by ``test_silas_launcher.py``
in a pytest of their own: Hydra's test runners scan and execute Hydra's plugin
modules again, which leaves the interpreter's Hydra state changed for the tests
that would follow (a config loader no longer pickles).

* Hydra's own launcher test suites against the ``silas`` launcher, as Hydra's
  launcher plugins run them: sweeps of one and two jobs, overrides, custom
  resolvers, job names and working folders, in the test process and as
  applications in subprocesses.
* The forked workers: jobs side by side in batch order, a job's BaseException
  stops the batch without losing finished work, a dying worker fails the sweep
  instead of hanging, ``before_fork`` runs before the workers exist and
  ``while_waiting`` after, in the launching process only.
"""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig
from hydra.test_utils.launcher_common_tests import IntegrationTestSuite, LauncherTestSuite
from omegaconf import DictConfig

from hydra_plugins.silas_launcher.silas_launcher import can_fork


@pytest.fixture(autouse=True)
def _no_version_base_yet(hydra_restore_singletons):
    """Hydra's suites expect a process in which no application has set a
    version base yet (tests that ran before in this process set 1.3; the
    fixture it depends on restores theirs afterwards)."""
    from hydra import version

    version.VersionBase.instance().version_base = version._UNSPECIFIED_


@pytest.mark.parametrize("launcher_name, overrides",
                         [("silas", ["hydra.launcher.n_jobs=2"])])
class TestSilasLauncher(LauncherTestSuite):
    pass


@pytest.mark.parametrize("task_launcher_cfg, extra_flags",
                         [({}, ["-m", "hydra/launcher=silas", "hydra.launcher.n_jobs=2"])])
class TestSilasLauncherIntegration(IntegrationTestSuite):
    pass


def test_this_machine_forks():
    """The suites above exercise the forked workers only where fork is used."""
    assert can_fork()


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


WAITED: list[int] = []


def note_waiting() -> None:
    WAITED.append(os.getpid())


def _report_waited(cfg: DictConfig) -> int:
    return len(WAITED)  # in a worker: what the launching process had done before the fork


@pytest.mark.usefixtures("hydra_restore_singletons")
def test_while_waiting_runs_once_in_this_process_after_the_fork(hydra_sweep_runner, tmpdir):
    WAITED.clear()
    with _sweep(hydra_sweep_runner, tmpdir, _report_waited, "hydra.launcher.n_jobs=2",
                f"hydra.launcher.while_waiting={__name__}:note_waiting", "+a=0,1,2") as sweep:
        assert [r.return_value for r in sweep.returns[0]] == [0, 0, 0]
    assert WAITED == [os.getpid()]


@pytest.mark.usefixtures("hydra_restore_singletons")
def test_before_fork_runs_in_this_process_and_the_workers_start_with_it(hydra_sweep_runner, tmpdir):
    WAITED.clear()
    with _sweep(hydra_sweep_runner, tmpdir, _report_waited, "hydra.launcher.n_jobs=2",
                f"hydra.launcher.before_fork={__name__}:note_waiting",
                "hydra.launcher.while_waiting=null", "+a=0,1,2") as sweep:
        assert [r.return_value for r in sweep.returns[0]] == [1, 1, 1]
    assert WAITED == [os.getpid()]


@pytest.mark.usefixtures("hydra_restore_singletons")
def test_a_failing_while_waiting_only_logs(hydra_sweep_runner, tmpdir, capfd):
    WAITED.clear()
    with _sweep(hydra_sweep_runner, tmpdir, _report_waited, "hydra.launcher.n_jobs=2",
                "hydra.launcher.while_waiting=no_such_module:prepare", "+a=0,1") as sweep:
        assert [r.return_value for r in sweep.returns[0]] == [0, 0]
    out, err = capfd.readouterr()
    assert "while_waiting=no_such_module:prepare: ModuleNotFoundError" in out + err


def _sigint_in_job(cfg: DictConfig) -> str:
    handler = signal.getsignal(signal.SIGINT)
    return "ignored" if handler == signal.SIG_IGN else "stops" if handler == signal.default_int_handler else "?"


@pytest.mark.usefixtures("hydra_restore_singletons")
@pytest.mark.parametrize("launching, expected", [(signal.default_int_handler, "stops"),
                                                 (signal.SIG_IGN, "ignored")])
def test_a_running_job_handles_ctrl_c_as_the_launching_process_does(hydra_sweep_runner, tmpdir,
                                                                     launching, expected):
    """A process started with Ctrl-C ignored (in the background) runs jobs that
    ignore it, as the basic launcher's would; otherwise a running job stops."""
    before = signal.signal(signal.SIGINT, launching)
    try:
        with _sweep(hydra_sweep_runner, tmpdir, _sigint_in_job, "hydra.launcher.n_jobs=2",
                    "+a=0,1") as sweep:
            assert [r.return_value for r in sweep.returns[0]] == [expected, expected]
    finally:
        signal.signal(signal.SIGINT, before)
