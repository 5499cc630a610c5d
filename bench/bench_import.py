"""``silas-exp import`` of a large generated session: wall and CPU time, MB/s,
peak RSS and the progress it prints, a large session paired with a small one.

    python bench/bench_import.py [--mb 5 50] [--pairs 2] [--quick]

Each size is a generated OpenAI-style chat session (``{"messages": [...]}``,
one JSON document, ``--format openai``): rounds of a coding agent reading,
grepping, testing and editing modules, each tool result a realistic page of
code or test output (~13 KB a message, as a 50 MB, 3,844-message export),
with files read again later (ground truth), e-mail addresses and home paths
to scrub. The file is written to a temporary folder and removed afterwards.
Each import runs as ``silas-exp import`` in its own process under a small
wrapper, so ``getrusage(RUSAGE_CHILDREN)`` gives its CPU time and peak RSS;
sizes alternate in each pair (small, large; then large, small), so a busy
machine slows both alike. MB/s is the file's size over the import's wall
time. ``--quick``: 0.3 and 1.2 MB, one pair (CI smoke, < 60 s).
Writes bench/results/import.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _procs import WRAPPER  # bench/ helper
from _results import save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]
MB = 1 << 20


def _code(rng: random.Random, module: str, lines: int) -> str:
    out = [f'"""The {module} module."""', "import os", ""]
    for i in range(lines):
        name = f"{module}_step_{rng.randrange(10_000)}"
        out.append(f"def {name}(payload, retries={rng.randrange(9)}):")
        out.append(f"    value = compute_{module}_value_{i}(payload)  # {rng.random():.6f}")
        out.append("    return value")
    return "\n".join(out)


def _pytest(rng: random.Random, module: str, tests: int, fail: bool) -> str:
    lines = [f"tests/test_{module}.py::test_case_{i} PASSED" for i in range(tests)]
    if fail:
        lines += [f"FAILED tests/test_{module}.py::test_retry - KeyError: '{module}_retry_after'",
                  f"  File \"/home/dana/repo/src/{module}.py\", line 12"]
    return "\n".join(lines) + f"\n{tests} passed in {rng.random():.2f}s"


def write_session(path: Path, megabytes: float, seed: int = 0) -> int:
    """A coding session of about ``megabytes`` MB as one chat JSON document;
    returns the number of messages."""
    rng = random.Random(seed)
    messages: list[dict] = [{"role": "system", "content": "You are a coding agent in the user's "
                             "repository. Contact: dev.lead@example-corp.io"}]
    size, n, call = 0, 0, 0
    target = megabytes * MB
    read: list[str] = []

    def tool_round(name: str, args: dict, result: str) -> None:
        nonlocal call, size
        call += 1
        cid = f"call_{call:06d}"
        msgs = [{"role": "assistant", "content": None, "tool_calls": [{
                    "id": cid, "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)}}]},
                {"role": "tool", "tool_call_id": cid, "content": result}]
        messages.extend(msgs)
        size += sum(len(json.dumps(m)) for m in msgs)

    while size < target:
        module = f"module_{n}"
        n += 1
        messages.append({"role": "user", "content": f"Now look at src/{module}.py and tidy it "
                         f"up; ask me at dana{n % 2}@example.com if unsure."})
        tool_round("read_file", {"path": f"src/{module}.py"}, _code(rng, module, 300))
        tool_round("bash", {"command": f"pytest tests/test_{module}.py -x"},
                   _pytest(rng, module, 400, fail=n % 3 == 0))
        if n % 2:
            tool_round("grep", {"pattern": f"{module}_step"},
                       "\n".join(f"src/{module}.py:{i}: def {module}_step_{i}" for i in range(60)))
        messages.append({"role": "assistant", "content": f"I'll use a guard clause in {module} "
                         f"instead of nested ifs; {module}_retry_after needs a default."})
        tool_round("edit_file", {"path": f"src/{module}.py", "old": "return value",
                                 "new": "return value or None"}, "The file has been updated.")
        if read and n % 4 == 0:  # an earlier file read again: ground truth for the replay case
            tool_round("read_file", {"path": read[rng.randrange(len(read))]},
                       _code(rng, "again", 40))
        read.append(f"src/{module}.py")
    path.write_text(json.dumps({"messages": messages}))
    return len(messages)


def import_once(session: Path, out: Path) -> dict:
    """One ``silas-exp import`` under the rusage wrapper, its stderr (the
    progress lines) kept whole in a file beside ``out``."""
    log = out.with_suffix(".stderr")
    cmd = [sys.executable, "-c", WRAPPER, "sh", "-c", 'exec "$0" "$@" 2>"$IMPORT_LOG"',
           sys.executable, "-m", "silas_exp.cli.main", "import", str(session), "--format",
           "openai", "--opt-in", "--out", str(out)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True,
                          env={**os.environ, "IMPORT_LOG": str(log)})
    figures = json.loads(proc.stdout)
    if figures["returncode"] != 0:
        raise SystemExit(f"import of {session} failed:\n{log.read_text()[-3000:]}")
    megabytes = session.stat().st_size / MB
    progress = [line for line in log.read_text().splitlines() if line.startswith("import:")]
    return {"mb": round(megabytes, 2), "wall_s": round(figures["wall_s"], 2),
            "cpu_s": round(figures["cpu_s"], 2),
            "mb_per_s": round(megabytes / figures["wall_s"], 3),
            "mb_per_cpu_s": round(megabytes / figures["cpu_s"], 3),
            "peak_rss_mib": round(figures["max_rss_kb"] / 1024, 1),
            "progress_lines": len(progress), "last_progress": progress[-1] if progress else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs=2, default=[5.0, 50.0],
                        metavar=("SMALL", "LARGE"))
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [0.3, 1.2] if args.quick else args.mb
    pairs = 1 if args.quick else args.pairs
    runs: dict[str, list[dict]] = {str(s): [] for s in sizes}
    with tempfile.TemporaryDirectory(prefix="bench_import_") as tmp:
        files = {}
        for s in sizes:
            files[s] = Path(tmp) / f"session-{s:g}mb.json"
            count = write_session(files[s], s)
            print(f"generated {files[s].name}: {files[s].stat().st_size / MB:.1f} MB, "
                  f"{count} messages", flush=True)
        for p in range(pairs):
            for s in (sizes if p % 2 == 0 else sizes[::-1]):
                figures = import_once(files[s], Path(tmp) / f"out-{p}-{s:g}")
                runs[str(s)].append(figures)
                print(f"pair {p}: {figures['mb']} MB in {figures['wall_s']} s wall "
                      f"({figures['mb_per_s']} MB/s), {figures['cpu_s']} s CPU, peak RSS "
                      f"{figures['peak_rss_mib']} MiB, {figures['progress_lines']} progress "
                      f"line(s); last: {figures['last_progress']}", flush=True)
    small, large = (str(s) for s in sizes)
    ratio = [b["mb_per_s"] / a["mb_per_s"] for a, b in zip(runs[small], runs[large], strict=True)]
    result = {"sizes_mb": sizes, "pairs": pairs, "runs": runs,
              "median_mb_per_s": {k: statistics.median(r["mb_per_s"] for r in v)
                                  for k, v in runs.items()},
              "large_over_small_rate": [round(x, 3) for x in ratio]}
    print(json.dumps({k: result[k] for k in ("median_mb_per_s", "large_over_small_rate")}))
    save("import", result)


if __name__ == "__main__":
    main()
