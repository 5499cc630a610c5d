"""Do two sweep folders hold the same results? For checking that a sweep
reproduces on another machine (another OpenBLAS kernel) or after a change that
must not alter outputs.

Per job and case (``results.jsonl``): every decision and count is compared
exactly, every float to a relative tolerance, wall-clock fields not at all.
Then the verdict lines of both ``ablation.md``. Exit 0 when both agree, 1 when
they differ (each difference printed), 2 on bad input.

    python scripts/compare_sweeps.py multirun/A multirun/B [--rtol 1e-9]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

WALL_CLOCK = {"latency_ms", "started_at", "ended_at", "duration_s", "timestamp"}


def differences(a, b, path: str, rtol: float) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys differ: {sorted(set(a) ^ set(b))}"]
        return [d for k in sorted(a) if k not in WALL_CLOCK
                for d in differences(a[k], b[k], f"{path}/{k}", rtol)]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} entries"]
        return [d for i, (u, v) in enumerate(zip(a, b, strict=True))
                for d in differences(u, v, f"{path}[{i}]", rtol)]
    if isinstance(a, float) and isinstance(b, float):
        same = (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)
        return [] if same else [f"{path}: {a!r} vs {b!r}"]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def case_lines(folder: Path) -> dict[str, list[dict]]:
    return {job.name: [json.loads(line) for line in job.joinpath("results.jsonl").read_text().splitlines()
                       if line.strip()]
            for job in sorted(folder.iterdir()) if job.joinpath("results.jsonl").is_file()}


def verdict_lines(folder: Path) -> list[str]:
    report = folder / "ablation.md"
    if not report.is_file():
        return []
    return [line for line in report.read_text().splitlines()
            if line.startswith("|") and any(w in line for w in ("ship", "inconclusive"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--rtol", type=float, default=1e-9)
    args = parser.parse_args(argv)
    for folder in (args.a, args.b):
        if not folder.is_dir():
            print(f"error: {folder} is not a sweep folder; give two folders under multirun/",
                  file=sys.stderr)
            return 2
    a, b = case_lines(args.a), case_lines(args.b)
    found = differences(a, b, "jobs", args.rtol)
    va, vb = verdict_lines(args.a), verdict_lines(args.b)
    if va != vb:
        found.append("verdicts differ:\n  " + "\n  ".join(va) + "\nvs\n  " + "\n  ".join(vb))
    for line in found[:50]:
        print(line)
    cases = sum(len(v) for v in a.values())
    print(f"{len(a)} jobs, {cases} case results, {len(va)} verdict lines: "
          + ("IDENTICAL" if not found else f"{len(found)} differences"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
