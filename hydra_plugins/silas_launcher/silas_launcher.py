"""Hydra's basic launcher with its jobs spread over forked worker processes.

The basic launcher runs a sweep's jobs one after another in the launching
process: one core. joblib's launcher (loky) starts fresh interpreters, which
import Hydra, numpy, scipy and silas_exp again (~2 s of CPU a worker on this
machine kind) and receive each job pickled; for sub-second jobs that eats
what the second core gives. This launcher forks its workers from the
launching process when a batch starts, after the sweeper has imported and
composed what the jobs need, so a worker starts in milliseconds with warm
imports and the sweeper's compositions (``silas_sweeper._compositions``).
Each job runs exactly as in the basic launcher (Hydra's ``run_job``, same job
numbers, folders and logs); only where it runs changes.

* ``hydra.launcher.n_jobs``: how many jobs run at once; null (the default) is
  the CPUs this process may use, never more than the batch's jobs. With 1, or
  a batch of one job, or where ``fork`` is not the platform's way to start a
  process (Windows, macOS), jobs run in the launching process.
* Jobs start in batch order, at most ``n_jobs`` at a time, and come back in
  batch order. A job that raises a ``BaseException`` (silas_exp's
  ``Reported``: bad input, ``fail_fast``) stops the batch as in the basic
  launcher: no job starts after it, the jobs already running finish (their
  records stay), and the exception is raised in the launching process.
* ``hydra.launcher.before_fork`` (``module:function``): what the launching
  process does just before it forks a batch's workers; by default it imports
  what every job would otherwise import on its own (scipy's stats and optimize).
* ``hydra.launcher.while_waiting`` (``module:function``): what the launching
  process does while its workers run a batch, instead of only waiting; by
  default it imports what the sweep's report needs (matplotlib, the analysis),
  which the report would otherwise import after the last job.
* Ctrl-C reaches every worker (one process group): running jobs stop as they
  would in the basic launcher, and the launching process stops the workers.
  A worker whose launching process dies (``kill -9``) is killed with it.

Forking copies the launching process, open handles included: silas_exp's
tracking layer gives a forked process its own MLflow database connections
(``silas_exp.tracking.store``), and the jobs open their own files.
"""

# No ``from __future__ import annotations``: Hydra reads the config dataclass's types.
import gc
import importlib
import logging
import multiprocessing
import os
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence  # noqa: UP035  (OmegaConf reads these types)

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)


@dataclass
class SilasLauncherConf:
    _target_: str = "hydra_plugins.silas_launcher.silas_launcher.SilasLauncher"
    n_jobs: Optional[int] = None  # noqa: UP045  (null: the CPUs this process may use)
    # module:function the launching process calls just before it forks its
    # workers: here, importing what every job would otherwise import on its own
    before_fork: Optional[str] = "silas_exp.run.execute:warm_up"  # noqa: UP045
    # module:function the launching process calls while its workers run a batch
    # (it waits for them otherwise): here, importing what the sweep's report needs
    while_waiting: Optional[str] = "silas_exp.run.sweep_end:prepare"  # noqa: UP045


ConfigStore.instance().store(group="hydra/launcher", name="silas", node=SilasLauncherConf,
                             provider="silas_exp")


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


class _Raised:
    """A job's ``BaseException``, carried back to the launching process (a
    worker would die of it instead), or why a job's result did not come back."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


# What the forked workers run: set in the launching process just before the
# fork, so nothing of it is pickled (the task function may be a closure).
_BATCH: Any = None


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with(parent: int) -> None:
    """SIGKILL this worker when the launching process dies (``kill -9``), so no
    orphan goes on running jobs of a dead sweep (Linux's ``PR_SET_PDEATHSIG``)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl: an orphan finishes its job and exits
        return
    if os.getppid() != parent:  # it died before the call
        os._exit(1)


# how the launching process handles Ctrl-C, for a worker's running job (a
# process started with SIGINT ignored, e.g. in the background, keeps ignoring it)
_JOB_SIGINT: Any = signal.default_int_handler


def _worker_start(parent: int) -> None:
    _die_with(parent)
    # idle, a worker leaves Ctrl-C to the launching process; what the launching
    # process froze stays frozen here, so the collector never walks (and copies) it
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_in_worker(i: int) -> "JobReturn | _Raised":
    launcher, overrides, first = _BATCH
    signal.signal(signal.SIGINT, _JOB_SIGINT)  # a running job stops on Ctrl-C, as in the basic launcher
    try:
        return launcher.run_one(first + i, overrides[i])
    except BaseException as exc:  # noqa: BLE001  (carried back and raised there)
        return _Raised(exc)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.stdout.flush()
        sys.stderr.flush()


class SilasLauncher(Launcher):
    def __init__(self, n_jobs: Optional[int] = None,  # noqa: UP045
                 before_fork: Optional[str] = None,  # noqa: UP045
                 while_waiting: Optional[str] = None) -> None:  # noqa: UP045
        super().__init__()
        self.before_fork, self.while_waiting = before_fork, while_waiting
        if n_jobs is not None and n_jobs < 1:
            from silas_exp.errors import ConfigError

            raise ConfigError(f"hydra.launcher.n_jobs={n_jobs}: give the number of jobs to run "
                              "at once (1 or more), or null for the CPUs this process may use")
        self.n_jobs = n_jobs
        self.config: Optional[DictConfig] = None  # noqa: UP045
        self.task_function: Optional[TaskFunction] = None  # noqa: UP045
        self.hydra_context: Optional[HydraContext] = None  # noqa: UP045

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction,
              config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def workers(self, jobs: int) -> int:
        if not can_fork():
            return 1
        return max(1, min(self.n_jobs or usable_cpus(), jobs))

    def run_one(self, idx: int, overrides: Sequence[str]) -> JobReturn:
        """One job, as the basic launcher runs it."""
        assert self.config is not None and self.hydra_context is not None
        assert self.task_function is not None
        sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = idx
            sweep_config.hydra.job.num = idx
        ret = run_job(hydra_context=self.hydra_context, task_function=self.task_function,
                      config=sweep_config, job_dir_key="hydra.sweep.dir",
                      job_subdir_key="hydra.sweep.subdir")
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        return ret

    def launch(self, job_overrides: Sequence[Sequence[str]],
               initial_job_idx: int) -> Sequence[JobReturn]:
        setup_globals()
        assert self.config is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        n = self.workers(len(job_overrides))
        how = f", {n} at a time in forked workers" if n > 1 else ""
        log.info(f"Launching {len(job_overrides)} jobs locally{how}")
        for idx, overrides in enumerate(job_overrides):
            log.info(f"\t#{initial_job_idx + idx} : {' '.join(filter_overrides(overrides))}")
        if n == 1:
            return [self.run_one(initial_job_idx + i, overrides)
                    for i, overrides in enumerate(job_overrides)]
        return self._in_workers(list(job_overrides), initial_job_idx, n)

    def _call(self, hook: str) -> None:
        """Call the ``module:function`` named by ``hydra.launcher.<hook>``, if
        any; a failure is only logged, the jobs go on."""
        target = getattr(self, hook)
        if not target:
            return
        module, _, name = target.partition(":")
        try:
            getattr(importlib.import_module(module), name)()
        except Exception as exc:  # noqa: BLE001
            log.warning(f"hydra.launcher.{hook}={target}: {type(exc).__name__}: {exc}")

    def _in_workers(self, job_overrides: List[Sequence[str]], first: int,  # noqa: UP006
                    n: int) -> List[JobReturn]:  # noqa: UP006
        global _BATCH, _JOB_SIGINT
        _BATCH = (self, job_overrides, first)
        _JOB_SIGINT = signal.getsignal(signal.SIGINT) or signal.default_int_handler  # None: not Python's
        sys.stdout.flush()  # or the workers would print the launching process's buffer again
        sys.stderr.flush()
        results: List[Any] = [None] * len(job_overrides)  # noqa: UP006
        stop: Optional[BaseException] = None  # noqa: UP045
        running: Dict[Future, int] = {}  # noqa: UP006
        started = 0

        def top_up() -> None:  # start jobs in batch order while there is room and no stop
            nonlocal started
            while stop is None and len(running) < n and started < len(job_overrides):
                running[pool.submit(_run_in_worker, started)] = started
                started += 1

        self._call("before_fork")
        gc.freeze()  # the workers share the launching process's objects instead of copying them
        pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_worker_start, initargs=(os.getpid(),))
        try:
            top_up()  # the first submission forks every worker
            gc.unfreeze()
            self._call("while_waiting")  # after the fork: the workers never see what it does
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    i = running.pop(future)
                    try:
                        results[i] = future.result()
                    except BaseException as exc:  # noqa: BLE001  (a worker died, a result that does not pickle)
                        results[i] = _Raised(exc)
                    if isinstance(results[i], _Raised):
                        stop = stop or results[i].exc
                top_up()
        except BaseException:  # Ctrl-C in the launching process: running jobs got it too
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)
            gc.unfreeze()  # (already, unless the first fork failed)
            _BATCH = None
        if stop is not None:
            raise stop
        return results
