"""Run ``python -m silas_exp`` sweeps for the benches: wall time, CPU time of the
sweep and every process it waited for (uploader, launcher workers), and a
breakdown from the arrival time of its output lines."""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# "[job 3] scorer=online#r0: 15 cases, … (1.1s) [4/20 done, ~35 s left] -> …"; Ray prefixes lines
JOB_LINE = re.compile(r"\[job \d+\] .*\((\d+\.\d+)s\)(?: \[[^]]*\])? -> ")
LAUNCHING = re.compile(r"Launching \d+ jobs")
VERDICT = re.compile(r"^  (\S+=\S+): (ship|do not ship|inconclusive)")


@dataclass
class SweepRun:
    wall_s: float
    cpu_s: float  # user + system
    startup_s: float | None = None  # until the launcher starts the first job
    jobs_s: float | None = None  # first job started .. last job line
    job_own_s: float | None = None  # sum of the jobs' own times (their "(1.1s)")
    end_s: float | None = None  # last job line .. exit: summary, ablation, tracking tail
    jobs: int = 0
    job_times: list[float] = field(default_factory=list)  # each job's own time
    verdicts: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # what the sweep printed

    def figures(self) -> dict:
        return {k: v for k, v in asdict(self).items()
                if k not in ("job_times", "verdicts", "lines")}


def run_sweep(args: list[str], extra_env: dict[str, str] | None = None, tree: Path | None = None,
              keep: Path | None = None) -> SweepRun:
    """One sweep in a fresh temporary root (fresh store, cold caches). ``tree``:
    the code of another checkout (a ``git worktree`` of another commit), run
    from there with ``PYTHONPATH`` on it; the suites stay this tree's.
    ``keep``: where the sweep's folder is copied (for ``compare_sweeps.py``)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "SILAS_EXP_ROOT": tmp,
               "PYTHONUNBUFFERED": "1", "RAY_DEDUP_LOGS": "0", **(extra_env or {})}
        if tree is not None:
            env["PYTHONPATH"] = str(tree)
        cmd = [sys.executable, "-m", "silas_exp", *args, f"paths.suites={REPO / 'suites'}",
               f"hydra.sweep.dir={tmp}/multirun"]
        run = run_command(cmd, tree or REPO, env, Path(tmp) / "stderr.txt")
        if keep is not None:
            shutil.copytree(Path(tmp) / "multirun", keep, dirs_exist_ok=True)
        return run


def run_command(cmd: list[str], cwd: Path, env: dict[str, str], err: Path) -> SweepRun:
    """Run a sweep's command in ``cwd``: its wall and CPU time (its own and every
    process it waited for), and the breakdown from its output lines; its
    standard error goes to ``err``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    lines: list[tuple[float, str]] = []
    with open(err, "w") as errfile:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=errfile, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))
        code = proc.wait()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise SystemExit(f"sweep failed ({code}): {' '.join(cmd)}\n{err.read_text()[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run = SweepRun(wall, cpu)
    started = next((t for t, line in lines if LAUNCHING.search(line)), None)
    jobs = [(t, float(m.group(1))) for t, line in lines if (m := JOB_LINE.search(line))]
    run.verdicts = [m.group(0).strip() for _, line in lines if (m := VERDICT.match(line))]
    if started is not None and jobs:
        run.startup_s, run.jobs_s = started, jobs[-1][0] - started
        run.end_s, run.job_own_s = wall - jobs[-1][0], sum(s for _, s in jobs)
    run.jobs, run.job_times = len(jobs), [s for _, s in jobs]
    run.lines = [line for _, line in lines]
    return run


def medians(runs: list[SweepRun]) -> dict:
    """Median of every figure over runs, and the runs themselves."""
    out: dict = {}
    for key, value in runs[0].figures().items():
        values = [getattr(r, key) for r in runs if getattr(r, key) is not None]
        out[key] = statistics.median(values) if values and isinstance(value, float) else value
    out["runs"] = [r.figures() for r in runs]
    return out


def empty_multirun() -> float:
    """Wall time of the reference floor: a plain Hydra multirun of 20 empty jobs,
    each logging 30 params and 20 metrics to a fresh MLflow SQLite store."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(REPO / "bench" / "_empty_multirun.py"), "-m",
                        "+i=range(0,20)", f"+store=sqlite:///{tmp}/mlflow.db",
                        f"hydra.sweep.dir={tmp}/multirun"], check=True, capture_output=True,
                       cwd=tmp, env={"MLFLOW_DISABLE_TELEMETRY": "true", "PATH": "/usr/bin:/bin"})
        return time.perf_counter() - t0
