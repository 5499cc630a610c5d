"""Running what a bench measures: a command under a wrapper that reports its
own CPU time and peak RSS, and another commit's tree to measure against."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# runs one command and prints its exit code, wall time and rusage as JSON
WRAPPER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"returncode": proc.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "max_rss_kb": ru.ru_maxrss, "stdout": proc.stdout[-2000:],
                  "stderr": proc.stderr[-3000:]}))
"""


def extract_commit(rev: str, dest: Path) -> str:
    """The tree of commit ``rev`` of this repository into ``dest``; its full id."""
    found = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        sys.exit(f"--against {rev}: no such commit in {REPO}. Give a commit id, tag or branch "
                 "of this repository (git log --oneline lists them).")
    commit = found.stdout.strip()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return commit
