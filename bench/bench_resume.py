"""Kill a sweep anywhere, resume it, get the uninterrupted result.

    python bench/bench_resume.py                      # README sweep, 10 kill points, tracking on and none
    python bench/bench_resume.py --modes none --points look1,end
    python bench/bench_resume.py --quick              # an 8-case study, 2 kill points, tracking=none

For each tracking mode, one uninterrupted reference sweep, then one sweep per
kill point: started in its own process group and killed with SIGKILL to the
whole group (the launching process, its forked workers and the background
uploader) at the point, then the same command with ``resume=true`` into the
same folder, and ``scripts/compare_sweeps.py`` against the reference (jobs,
per-case results, verdict lines). With tracking on it also checks the store:
no run left RUNNING, the parent FINISHED, one FINISHED run per job.

Kill points (``--points``, comma-separated):

* ``t<pct>``: at pct % of the reference's wall time (``t10`` … ``t85``);
* ``look<k>``: 0.15 s after the last job of round k reported, while the
  look after it runs;
* ``end``: when the end-of-sweep summary starts (the analysis is running);
* ``upload``: when the report's path is printed (the end record and the
  MLflow upload follow).

Every sweep starts in a fresh root (``SILAS_EXP_ROOT``: store and caches).
Writes bench/results/resume.json and prints one row per kill point.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _results import save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]
README = "-m scorer=weights,prompt,online seed=0"
QUICK = "-m scorer=heuristic,weights cases_per_block=4 suite.max_cases=8 seed=0"
POINTS = "t10,t25,t40,t55,t70,t85,look1,look2,end,upload"
ROUND_DONE = re.compile(r"\[(\d+)/(\d+) done")
SUMMARY = re.compile(r"^Sweep \S*: \d+ job")
REPORT = re.compile(r"^  report: ")


def _command(args: list[str], root: Path, mode: str, *extra: str) -> tuple[list[str], dict]:
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "SILAS_EXP_ROOT": str(root),
           "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "silas_exp", *args, f"tracking={mode}",
           f"paths.suites={REPO / 'suites'}", f"hydra.sweep.dir={root / 'multirun'}", *extra]
    return cmd, env


def _start(cmd: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def reference(args: list[str], root: Path, mode: str) -> float:
    cmd, env = _command(args, root, mode)
    t0 = time.perf_counter()
    proc = _start(cmd, env)
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"reference sweep failed ({proc.returncode}):\n{out[-3000:]}")
    return time.perf_counter() - t0


def _trigger(point: str, wall: float):
    """(seconds after start or None, a function of a line -> kill delay or None)."""
    if point.startswith("t"):
        return float(point[1:]) / 100 * wall, None
    rounds = {"n": 0}

    def on_line(line: str) -> float | None:
        if point.startswith("look") and (m := ROUND_DONE.search(line)) and m[1] == m[2]:
            rounds["n"] += 1
            return 0.15 if rounds["n"] == int(point[4:]) else None
        if point == "end" and SUMMARY.match(line):
            return 0.0
        if point == "upload" and REPORT.match(line):
            return 0.0
        return None
    return None, on_line


def cut(args: list[str], root: Path, mode: str, point: str, wall: float) -> dict:
    """The sweep killed at ``point``: what it had done when killed."""
    cmd, env = _command(args, root, mode)
    at, on_line = _trigger(point, wall)
    proc = _start(cmd, env)
    t0 = time.perf_counter()
    killed = threading.Event()

    def kill_after(delay: float) -> None:
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            killed.set()

    if at is not None:
        threading.Thread(target=kill_after, args=(at,), daemon=True).start()
    assert proc.stdout is not None
    for line in proc.stdout:
        delay = on_line(line.rstrip("\n")) if on_line and not killed.is_set() else None
        if delay is not None:
            kill_after(delay)
    proc.wait()
    if not killed.is_set():  # the sweep ended before the point: nothing cut
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its uploader, if any, is done by now
        except ProcessLookupError:
            pass
    folder = root / "multirun"
    state = json.loads((folder / "adaptive.json").read_text()) if (
        folder / "adaptive.json").is_file() else {}
    return {"point": point, "killed": killed.is_set(),
            "killed_after_s": round(time.perf_counter() - t0, 2),
            "jobs_done": len(list(folder.glob("*/result.json"))),
            "looks_recorded": state.get("looked", []), "end_written": (folder / "sweep.done").is_file()}


def resume(args: list[str], root: Path, mode: str) -> tuple[int, float, str]:
    cmd, env = _command(args, root, mode, "resume=true")
    t0 = time.perf_counter()
    proc = _start(cmd, env)
    out, _ = proc.communicate()
    return proc.returncode, time.perf_counter() - t0, out


def compare(a: Path, b: Path) -> tuple[bool, str]:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "compare_sweeps.py"), str(a),
                           str(b)], capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout.strip().splitlines()[-1] if proc.stdout else proc.stderr


def store_check(root: Path) -> dict:
    """With tracking on: runs left RUNNING, the parent's status, FINISHED job runs."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'mlruns' / 'mlflow.db'}")
    runs = [r for e in client.search_experiments()
            for r in client.search_runs([e.experiment_id], max_results=5000)]
    parents = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    jobs = {(r.data.tags.get("silas.variant"), r.data.tags.get("silas.repeat"),
             r.data.tags.get("silas.block")) for r in runs
            if r.data.tags.get("silas.kind") != "sweep" and r.info.status == "FINISHED"}
    return {"running": sum(r.info.status == "RUNNING" for r in runs),
            "parents": [r.info.status for r in parents], "finished_jobs": len(jobs),
            "job_folders": len(list((root / "multirun").glob("*/result.json")))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--args", default=README, help=f"sweep arguments (default {README!r})")
    parser.add_argument("--points", default=POINTS, help=f"kill points (default {POINTS})")
    parser.add_argument("--modes", default="mlflow,none", help="tracking modes (default both)")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK!r}, points look1,end, tracking=none (CI smoke)")
    ns = parser.parse_args()
    if ns.quick:
        ns.args, ns.points, ns.modes = QUICK, "look1,end", "none"
    args, points = shlex.split(ns.args), ns.points.split(",")
    result: dict = {"command": "python -m silas_exp " + ns.args, "modes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ns.modes.split(","):
            ref = Path(tmp) / mode / "reference"
            wall = reference(args, ref, mode)
            rows = []
            print(f"tracking={mode}: reference {wall:.1f} s", flush=True)
            for point in points:
                root = Path(tmp) / mode / point
                row = cut(args, root, mode, point, wall)
                code, took, out = resume(args, root, mode)
                row.update(resume_rc=code, resume_s=round(took, 1),
                           skipped=out.count("already finished"))
                row["identical"], row["compare"] = compare(ref / "multirun", root / "multirun")
                if mode != "none":
                    row["store"] = store_check(root)
                    row["store_ok"] = (row["store"]["running"] == 0
                                       and row["store"]["parents"] == ["FINISHED"]
                                       and row["store"]["finished_jobs"] == row["store"]["job_folders"])
                rows.append(row)
                print(f"  {point:7s} killed={row['killed']!s:5s} at {row['killed_after_s']:6.1f} s  "
                      f"jobs {row['jobs_done']:2d}  looks {row['looks_recorded']}  "
                      f"end {row['end_written']!s:5s} | resume rc {code} {took:5.1f} s, "
                      f"{row['skipped']} kept | {row['compare']}"
                      + (f" | store ok={row['store_ok']}" if "store_ok" in row else ""), flush=True)
            result["modes"][mode] = {"reference_s": round(wall, 1), "points": rows}
    result["identical"] = all(r["identical"] and r["resume_rc"] == 0 and r.get("store_ok", True)
                              for m in result["modes"].values() for r in m["points"])
    print(f"all identical: {result['identical']}")
    save("resume", result)
    if not result["identical"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
