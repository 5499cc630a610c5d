"""A job's record on disk and the one reader of it.

``<job folder>/result.json`` (format 3): variant, repeat, status, error, the
run-level metrics, the suite version and the §20.2 ``BenchmarkRun`` without
its per-case results, which are in ``results_file``:
``<job folder>/results.jsonl``, one ``BenchmarkResult`` a line, appended as
each case finishes (a job that dies keeps the cases it finished).

Before format 3 (no ``format`` key) ``run.results`` was inside result.json.
Every consumer reads through ``read_record`` and ``case_results``, which
understand both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from silas_exp.schema.benchmark import BenchmarkResult, BenchmarkRun

RESULT_FILE = "result.json"
CASES_FILE = "results.jsonl"
FORMAT = 3


class CaseLog:
    """Appends per-case results to ``results.jsonl``, one line each, flushed
    per case. NaN metrics stay NaN (as in result.json, ``allow_nan``)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def append(self, result: BenchmarkResult) -> None:
        self._fh.write(json.dumps(result.model_dump(mode="json"), allow_nan=True) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> CaseLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_record(run: BenchmarkRun) -> dict[str, Any]:
    """The run for result.json: everything but the per-case results."""
    return run.model_dump(mode="json", exclude={"results"})


def job_record(variant: str, repeat: int, status: str, error: str | None,
               metrics: dict[str, float], suite_version: str | None,
               run: BenchmarkRun | None) -> dict[str, Any]:
    return {"format": FORMAT, "variant": variant, "repeat": repeat, "status": status,
            "error": error, "metrics": metrics, "suite_version": suite_version,
            "run": run_record(run) if run is not None else None,
            "results_file": CASES_FILE if run is not None else None}


def write_record(folder: Path, record: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RESULT_FILE
    path.write_text(json.dumps(record, indent=1, allow_nan=True))
    return path


def read_record(path: Path) -> dict[str, Any]:
    """A job's result.json (``path``: the file or its folder)."""
    path = path / RESULT_FILE if path.is_dir() else path
    return json.loads(path.read_text())


def case_results(folder: Path | None, record: dict[str, Any] | None = None
                 ) -> Iterator[dict[str, Any]]:
    """The job's per-case results (BenchmarkResult dicts), one at a time, in
    case order: from its results file in ``folder`` (format 3) or from the
    record itself (earlier formats, baseline.json)."""
    if record is None:
        if folder is None:
            raise ValueError("case_results needs the job folder or its record")
        record = read_record(folder)
    name = record.get("results_file")
    if not name:
        yield from (record.get("run") or {}).get("results", [])
        return
    if folder is None:
        raise ValueError(f"the record's per-case results are in {name}: pass its folder")
    with open(folder / name, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def with_case_results(folder: Path, record: dict[str, Any]) -> dict[str, Any]:
    """The record with its per-case results inside ``run.results`` (the shape
    before format 3), for consumers that need them all at once (baseline.json)."""
    if not record.get("run"):
        return record
    run = {**record["run"], "results": list(case_results(folder, record))}
    return {**{k: v for k, v in record.items() if k != "results_file"}, "run": run}
