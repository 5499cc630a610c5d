"""Do two sweep folders hold the same results? For checking that a sweep
reproduces on another machine (another OpenBLAS kernel) or after a change that
must not alter outputs.

Per job and case (``results.jsonl``): every decision and count is compared
exactly, every float to a relative tolerance, wall-clock fields not at all.
Then the verdict lines of both ``ablation.md``. Exit 0 when both agree, 1 when
they differ (each difference printed), 2 on bad input.

Billing is reported apart: how a case's answers were obtained and what that
was billed (``llm.calls`` against ``llm.cache_hits``, prompt-cache writes and
reads, ``llm.cost_usd``, retries: the metrics declared ``billing``) depends on
which call reached the API or the response cache first, so it can differ
between a run one case at a time and one with cases in flight or jobs in
parallel while every answer is the same. Those differences are printed with
their totals (what each sweep was billed) and do not change the verdict;
``--strict`` counts them as differences.

    python scripts/compare_sweeps.py multirun/A multirun/B [--rtol 1e-9] [--strict]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from silas_exp.metrics.registry import find_spec  # noqa: E402

WALL_CLOCK = {"latency_ms", "started_at", "ended_at", "duration_s", "timestamp"}
RETRIES = "retries"  # a case result's retried calls: billing, as llm.retries is


def is_billing(path: str) -> bool:
    """A case result's field that says how its answers were obtained, not what they were."""
    parent, _, key = path.rpartition("/")
    if key == RETRIES and parent.endswith("]"):
        return True
    spec = find_spec(key) if parent.endswith("/metrics") else None
    return spec is not None and spec.billing


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


def billing_totals(cases: dict[str, list[dict]]) -> dict[str, float]:
    """Each billing metric summed over every case of the sweep."""
    out: dict[str, float] = {}
    for rows in cases.values():
        for row in rows:
            for key, value in (row.get("metrics") or {}).items():
                if is_billing(f"jobs/metrics/{key}") and isinstance(value, int | float):
                    out[key] = out.get(key, 0.0) + value
            out[RETRIES] = out.get(RETRIES, 0.0) + (row.get(RETRIES) or 0)
    return out


def billed(folder: Path) -> dict[str, float]:
    """What the sweep was billed in all: its jobs' own calls and those made only to measure."""
    out = {"calls": 0.0, "cost_usd": 0.0}
    for result in sorted(folder.glob("*/result.json")):
        metrics = json.loads(result.read_text()).get("metrics") or {}
        for key in out:
            out[key] += metrics.get(f"llm.{key}", 0.0) + metrics.get(f"llm.overhead.{key}", 0.0)
    return out


def _amount(key: str, value: float) -> str:
    return f"${value:.4f}" if "cost_usd" in key else f"{value:,.0f}"


def billing_lines(a: dict[str, list[dict]], b: dict[str, list[dict]], found: list[str],
                  folders: tuple[Path, Path]) -> list[str]:
    """Where and by how much the billing of the two sweeps differs."""
    ta, tb = billing_totals(a), billing_totals(b)
    cases = {d.split(":")[0].rpartition("/")[0].removesuffix("/metrics") for d in found}
    lines = [f"billing differs in {len(found)} value(s) of {len(cases)} case result(s): which call "
             "reached the API or the response cache first (cases in flight, jobs in parallel); "
             "not counted as a difference (--strict counts it). Over the case results:"]
    for key in sorted(set(ta) | set(tb)):
        va, vb = ta.get(key, 0.0), tb.get(key, 0.0)
        if not math.isclose(va, vb, rel_tol=1e-9, abs_tol=1e-12):
            lines.append(f"  {key}: {_amount(key, va)} vs {_amount(key, vb)} "
                         f"({'+' if vb >= va else '-'}{_amount(key, abs(vb - va))})")
    if len(lines) == 1:
        lines.append("  the same totals (moved between cases)")
    sa, sb = (billed(f) for f in folders)
    lines.append("billed in all (llm.* and llm.overhead.* of every job): "
                 + ", ".join(f"{k} {_amount(k, sa[k])} vs {_amount(k, sb[k])}" for k in sa))
    return lines


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
    parser.add_argument("--strict", action="store_true",
                        help="count billing differences (calls against cache hits, prompt-cache "
                             "writes, cost, retries) as differences")
    args = parser.parse_args(argv)
    for folder in (args.a, args.b):
        if not folder.is_dir():
            print(f"error: {folder} is not a sweep folder; give two folders under multirun/",
                  file=sys.stderr)
            return 2
    a, b = case_lines(args.a), case_lines(args.b)
    found = differences(a, b, "jobs", args.rtol)
    billing = [d for d in found if is_billing(d.split(":")[0])]
    if not args.strict:
        found = [d for d in found if d not in billing]
    va, vb = verdict_lines(args.a), verdict_lines(args.b)
    if va != vb:
        found.append("verdicts differ:\n  " + "\n  ".join(va) + "\nvs\n  " + "\n  ".join(vb))
    for line in found[:50]:
        print(line)
    if billing and not args.strict:
        print("\n".join(billing_lines(a, b, billing, (args.a, args.b))))
    cases = sum(len(v) for v in a.values())
    print(f"{len(a)} jobs, {cases} case results, {len(va)} verdict lines: "
          + ("IDENTICAL" if not found else f"{len(found)} differences")
          + (" (billing apart: above)" if billing and not args.strict else ""))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
