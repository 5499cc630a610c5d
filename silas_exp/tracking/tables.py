"""A job folder's results as columns for MLflow tables: the per-case table
(from its record and results file, its floats as reports show them) and the
probe table (``probes.json``). No MLflow import here."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from silas_exp.metrics.numbers import rounded
from silas_exp.records import read_job_result
from silas_exp.schema.benchmark import BenchmarkResult

CASE_TABLE_ROWS = 1000  # rows per logged case table: the UI stays usable at any suite size


def case_table(results: Iterable[BenchmarkResult], keys: list[str] | None = None
               ) -> dict[str, list[Any]]:
    """Per-case results as columns for ``log_table``; ``keys``: the metric
    columns (default: every metric these results report)."""
    results = list(results)
    if keys is None:
        keys = sorted({k for r in results for k in r.metrics})
    table: dict[str, list[Any]] = {
        "case_id": [r.case_id for r in results],
        "status": [r.status for r in results],
        "latency_ms": [round(r.latency_ms, 2) for r in results],
        "token_cost": [r.token_cost for r in results],
        "llm_judge_score": [_shown(r.llm_judge_score) for r in results],
        "error": [r.error or "" for r in results],
    }
    for key in keys:
        table[key] = [_shown(r.metrics.get(key)) for r in results]
    return table


def _shown(value: Any) -> Any:
    """A float as the table shows it (``rounded``); the exact value is in ``results.jsonl``."""
    return rounded(value) if isinstance(value, float) else value


def case_tables(out_dir: Path, rows: int = CASE_TABLE_ROWS) -> Iterator[tuple[str, dict[str, list[Any]]]]:
    """(artifact name, columns) of a job's case table, read from its results file:
    ``cases.json`` when the job has at most ``rows`` cases, else ``cases/part-0001.json``,
    ``cases/part-0002.json`` … of ``rows`` cases each, all with the same columns
    (the full per-case results are the ``results.jsonl`` artifact)."""
    result = read_job_result(out_dir)
    keys: set[str] = set()
    n = 0
    for r in result.cases(out_dir):
        keys.update(r.metrics)
        n += 1
    columns, again, part = sorted(keys), result.cases(out_dir), 0
    while chunk := list(islice(again, rows)):
        part += 1
        yield (f"cases/part-{part:04d}.json" if n > rows else "cases.json",
               case_table(chunk, columns))


def probe_table(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The probe rows of ``probes.json`` as columns for ``log_table``: one row per probe."""
    criteria = sorted({c for r in rows for c in (r.get("scores") or {})})
    table: dict[str, list[Any]] = {k: [r.get(k) for r in rows] for k in
                                   ("case_id", "probe_id", "type", "event", "turn", "question",
                                    "answer", "overall", "error")}
    for cid in criteria:
        table[f"score.{cid}"] = [(r.get("scores") or {}).get(cid) for r in rows]
    table["reasoning"] = ["; ".join(f"{c}: {t}" for c, t in (r.get("reasoning") or {}).items())
                          for r in rows]
    return table
