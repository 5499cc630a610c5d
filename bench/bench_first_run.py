"""A newcomer's first run against their second: the README sweep on a fresh clone.

    python bench/bench_first_run.py [--against REV] [--pairs 1] [--args "-m scorer=weights,prompt,online"]
    python bench/bench_first_run.py --quick     # a 2-job sweep on the smoke suite: Python replay, no tracking
    python bench/bench_first_run.py --another-clone   # also: a new clone of the same commit, same HOME

Each tree (this repository's HEAD commit, and with ``--against REV`` that
commit too) is cloned afresh with ``git clone``: no numba cache beside the
compiled replay, no generated pool, no ``.cache/``, no MLflow store. From the
clone's root, with ``HOME`` an empty folder (no ``~/.cache``, no matplotlib
font list), the README command runs twice: the first run, then the same
command again. Reported: wall and CPU time of each (CPU of every process the
run waited for: launcher workers, the background compile, the uploader) and
first ÷ second. With ``--against``, each pair runs both trees, alternating
which goes first, so the machine's drift falls on both alike. The interpreter
is this one (its environment's packages); the code is the clone's (checked
before the runs). Target: first ÷ second <= 1.2 (wall). Both runs of a tree
must print the same verdicts. ``--another-clone``: after the two runs, a
second fresh clone of the same commit runs the command once with the same
``HOME`` (what survives a new clone: numba's cache of the compiled loop, kept
per version of the code in ``~/.cache/silas_exp/numba``, and matplotlib's
font list), reported as another clone ÷ second. Writes
bench/results/first_run.json.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import save  # bench/ helper
from _sweeps import REPO, run_command

DEFAULT = "-m scorer=weights,prompt,online"
QUICK = "-m scorer=heuristic,weights repeats=1 suite=smoke tracking=none"
TARGET = 1.2
# what a newcomer's shell does not have: caches and stores pointed elsewhere
SCRUBBED = ("NUMBA_", "SILAS_EXP_", "MLFLOW_TRACKING_", "MLFLOW_EXPERIMENT_", "XDG_", "MPLCONFIGDIR",
            "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")


def commit_of(rev: str) -> str:
    found = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        sys.exit(f"--against {rev}: no such commit in {REPO}. Give a commit id, tag or branch "
                 "of this repository (git log --oneline lists them).")
    return found.stdout.strip()


def fresh_clone(commit: str, dest: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(REPO), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", commit], check=True)
    return dest


def newcomer_env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    # telemetry off as in every bench: a newcomer's first run would otherwise try the network
    return {**env, "HOME": str(home), "PYTHONUNBUFFERED": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
            **extra}


def check_code(clone: Path, env: dict[str, str]) -> None:
    """The clone's silas_exp and Hydra plug-ins are the ones a run imports."""
    probe = ("import silas_exp, hydra_plugins.silas_sweeper.silas_sweeper as s, "
             "hydra_plugins.silas_launcher.silas_launcher as l; print(silas_exp.__file__, s.__file__, l.__file__)")
    out = subprocess.run([sys.executable, "-B", "-c", probe], cwd=clone, env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    if not all(Path(f).resolve().is_relative_to(clone.resolve()) for f in out):
        sys.exit(f"a run from {clone} would import code from elsewhere: {out}")


def first_and_second(commit: str, args: list[str], extra_env: dict[str, str],
                     another_clone: bool = False) -> dict:
    """The command twice on a fresh clone of ``commit``, with an empty HOME (and
    once on another fresh clone with that HOME)."""
    with tempfile.TemporaryDirectory() as tmp:
        clone = fresh_clone(commit, Path(tmp) / "clone")
        home = Path(tmp) / "home"
        home.mkdir()
        env = newcomer_env(home, extra_env)
        check_code(clone, env)
        runs = {}
        for which in ("first", "second"):
            runs[which] = run_command([sys.executable, "-m", "silas_exp", *args], clone, env,
                                      Path(tmp) / f"{which}.stderr")
        if another_clone:
            other = fresh_clone(commit, Path(tmp) / "another")
            check_code(other, env)
            runs["another"] = run_command([sys.executable, "-m", "silas_exp", *args], other, env,
                                          Path(tmp) / "another.stderr")
    first, second = runs["first"], runs["second"]
    if any(run.verdicts != first.verdicts for run in runs.values()):
        sys.exit(f"{commit[:12]}: the runs printed different verdicts: "
                 f"{ {name: run.verdicts for name, run in runs.items()} }")
    extra = {}
    if another_clone:
        extra = {"another": runs["another"].figures(),
                 "another_wall_ratio": runs["another"].wall_s / second.wall_s}
    return {**extra, "first": first.figures(), "second": second.figures(), "verdicts": first.verdicts,
            "wall_ratio": first.wall_s / second.wall_s, "cpu_ratio": first.cpu_s / second.cpu_s,
            "first_startup_s": first.startup_s, "second_startup_s": second.startup_s,
            "load_average": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--args", default=DEFAULT, help=f"sweep arguments (default: {DEFAULT!r})")
    parser.add_argument("--against", metavar="REV", default=None,
                        help="also measure commit REV of this repository, paired in the same run")
    parser.add_argument("--pairs", type=int, default=1, help="rounds of one first and second run per tree")
    parser.add_argument("--another-clone", action="store_true",
                        help="after the two runs, once more on a new clone of the same commit, same HOME")
    parser.add_argument("--quick", action="store_true",
                        help=f"one round of {QUICK!r} with SILAS_EXP_REPLAY=python (CI smoke)")
    ns = parser.parse_args()
    extra = {}
    if ns.quick:
        ns.args, ns.pairs, extra = QUICK, 1, {"SILAS_EXP_REPLAY": "python"}
    args = shlex.split(ns.args)
    trees = {"this": commit_of("HEAD")}
    if subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD"]).returncode != 0:
        print("note: the work tree has changes that are not committed; the clone measures HEAD")
    if ns.against:
        trees["reference"] = commit_of(ns.against)
    result: dict = {"command": "python -m silas_exp " + ns.args, "trees": trees, "pairs": [],
                    "target": TARGET}
    for i in range(ns.pairs):
        names = list(trees) if i % 2 else list(trees)[::-1]
        pair = {}
        for name in names:
            pair[name] = figures = first_and_second(trees[name], args, extra, ns.another_clone)
            print(f"pair {i + 1} {name:9s} ({trees[name][:12]}): first {figures['first']['wall_s']:6.1f} s "
                  f"wall, {figures['first']['cpu_s']:6.1f} s CPU; second {figures['second']['wall_s']:6.1f} s "
                  f"wall, {figures['second']['cpu_s']:6.1f} s CPU; first/second {figures['wall_ratio']:.2f}x "
                  f"wall, {figures['cpu_ratio']:.2f}x CPU (load {figures['load_average'][0]:.1f})", flush=True)
            if "another" in figures:
                print(f"pair {i + 1} {name:9s} another clone, same HOME: {figures['another']['wall_s']:6.1f} s "
                      f"wall, {figures['another']['cpu_s']:6.1f} s CPU; ÷ second "
                      f"{figures['another_wall_ratio']:.2f}x wall", flush=True)
        result["pairs"].append(pair)
    for name in trees:
        walls = [p[name]["wall_ratio"] for p in result["pairs"]]
        cpus = [p[name]["cpu_ratio"] for p in result["pairs"]]
        result[name] = {"wall_ratio": statistics.median(walls), "cpu_ratio": statistics.median(cpus)}
        print(f"{name:9s} first/second, median of {len(walls)}: {result[name]['wall_ratio']:.2f}x wall, "
              f"{result[name]['cpu_ratio']:.2f}x CPU; target <= {TARGET}x wall")
    result["wall_ratio"] = result["this"]["wall_ratio"]
    print("saved", save("first_run", result))


if __name__ == "__main__":
    main()
