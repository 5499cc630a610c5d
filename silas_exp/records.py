"""The records a sweep leaves on disk, as typed models, and the one module that
writes and reads them.

* ``<job folder>/result.json``: a ``JobResult`` (schema 4): variant, repeat,
  status, error, the run-level metrics (NaN allowed), the suite version and the
  §20.2 ``BenchmarkRun`` without its per-case results, which are in
  ``results_file``: ``<job folder>/results.jsonl``, one ``BenchmarkResult`` a
  line, appended as each case finishes (a job that dies keeps the cases it
  finished).
* ``<sweep folder>/sweep.json``: the ``SweepManifest``, the sweep's own facts
  (id, swept keys, planned jobs, start time, tracking state), written by the
  launching process and read by every job.
* ``<sweep folder>/sweep.done``: the ``SweepEnd``, what the end of the sweep
  hands to the tracker for the sweep's parent run.

Older job results still load: format 3 (``"format": 3``, the same shape) and
the earlier ones without a ``format`` key, whose per-case results are inside
``run.results`` (the first of them kept a case's eviction order in
``actual_output``). A file of a newer schema, or one that is not valid JSON,
raises ``RecordError`` naming the file and what to do.

The file primitives every process of a sweep writes with live here too: a
whole-file write a reader never sees half of, and a lock beside a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from silas_exp.errors import RecordError
from silas_exp.schema.benchmark import BenchmarkResult, BenchmarkRun

RESULT_FILE = "result.json"
CASES_FILE = "results.jsonl"
PROBE_TABLE = "probes.json"  # the job's probe rows; logged as an MLflow table of the same name
MANIFEST_FILE = "sweep.json"
SWEEP_END_FILE = "sweep.done"
ADAPTIVE_FILE = "adaptive.json"  # a sequential study's plan and stops (silas_exp.study)

SCHEMA_VERSION = 4  # JobResult; 3 was "format": 3, earlier files had no version key
MANIFEST_VERSION = 1
SWEEP_END_VERSION = 1
_FORMAT_1_EVICTED = '{"evicted"'  # the first results kept the eviction order as output


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    def _dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class JobResult(_Record):
    """One job's outcome (``result.json``). Its per-case results are in
    ``results_file`` beside it, or (older records, baselines, records read back
    from MLflow) inside ``run.results``: read them with ``cases``."""

    schema_version: int = SCHEMA_VERSION
    variant: str
    repeat: int
    status: Literal["finished", "failed"]
    block: int = 0  # which block of the suite's cases the job ran (sequential studies)
    error: str | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    suite_version: str | None = None
    run: BenchmarkRun | None = None
    results_file: str | None = None
    resumed_from: str | None = None  # the run id a resumed sweep took this result from
    config_hash: str | None = None  # the job's variant hash: a resume knows its own record by it

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    def cases(self, folder: Path | None = None) -> Iterator[BenchmarkResult]:
        """The per-case results, one at a time, in case order; ``folder``: the job
        folder holding ``results_file`` (needed when the record has one)."""
        if not self.results_file:
            yield from (self.run.results if self.run is not None else [])
            return
        if folder is None:
            raise ValueError(f"the per-case results are in {self.results_file}: pass its folder")
        yield from case_results(folder / self.results_file)

    def with_cases(self, folder: Path | None = None) -> JobResult:
        """The record with every per-case result inside ``run.results`` (for
        consumers that need them all at once: baseline.json, MLflow read-back)."""
        if self.run is None:
            return self
        run = self.run.model_copy(update={"results": list(self.cases(folder))})
        return self.model_copy(update={"run": run, "results_file": None})


def job_result(variant: str, repeat: int, error: str | None, metrics: dict[str, float],
               suite_version: str | None, run: BenchmarkRun | None, block: int = 0,
               config_hash: str | None = None) -> JobResult:
    """A job's record: failed when ``error`` is set; ``run`` holds no per-case
    results (they stream to ``results.jsonl``)."""
    return JobResult(variant=variant, repeat=repeat, block=block,
                     status="failed" if error else "finished",
                     error=error, metrics=metrics, suite_version=suite_version, run=run,
                     results_file=CASES_FILE if run is not None else None,
                     config_hash=config_hash)


def finished_here(folder: Path, config_hash: str, repeat: int, block: int,
                  suite_version: str) -> JobResult | None:
    """The finished record of this very job (same variant hash, repeat, block
    and suite version) in ``folder``, left by an interrupted invocation of
    the sweep; None when there is none, or another job's."""
    if not (folder / RESULT_FILE).is_file():
        return None
    try:
        result = read_job_result(folder)
    except RecordError:
        return None  # damaged: run the job again
    same = (result.config_hash, result.repeat, result.block, result.suite_version) == (
        config_hash, repeat, block, suite_version)
    return result if same and result.finished else None


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Atomically: a reader (the background uploader, a job) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two writers never share one
    tmp.write_bytes(data)
    tmp.replace(path)
    return path


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold ``path``'s lock (``<path>.lock`` beside it) until the block ends,
    across processes; the kernel drops it if the process dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def write_json_atomic(path: Path, data: dict[str, Any]) -> Path:
    return write_bytes_atomic(path, json.dumps(data, indent=1, allow_nan=True).encode())


def _read_json(path: Path, what: str, fix: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise RecordError(f"{path}: no such file; {fix}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"{path}: not valid JSON ({exc}); the {what} is damaged: {fix}") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: not a {what} (a JSON object was expected); {fix}")
    return data


def _version(path: Path, data: dict[str, Any], key: str, known: int, what: str) -> int:
    version = data.pop(key, None)
    if version is None:
        return 0
    if not isinstance(version, int) or isinstance(version, bool) or version > known or version < 1:
        raise RecordError(
            f"{path}: {what} {key} {version!r} is not one this silas_exp reads (up to {known}); "
            "it was written by a newer silas_exp: upgrade (git pull, then pip install -e .) "
            "to read it")
    return version


def _validated(model: type[_Record], path: Path, data: dict[str, Any], what: str, fix: str):
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise RecordError(f"{path}: not a readable {what}: {where}: {err['msg']}; {fix}") from None


_RESULT_FIX = ("re-run the job (resume=true re-runs what is missing), or move its folder out of "
               "the sweep folder to leave it out")


def upgrade_case(row: dict[str, Any]) -> dict[str, Any]:
    """A per-case result of any format in today's shape: the first results kept
    the case's eviction order in ``actual_output`` instead of ``evicted``."""
    out = row.get("actual_output") or ""
    if row.get("evicted") is None and out.startswith(_FORMAT_1_EVICTED):
        row["evicted"] = json.loads(out)["evicted"]
    return row


def _upgrade_job(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """An older job record in today's shape (same meaning, same numbers)."""
    if "schema_version" in data:
        _version(path, data, "schema_version", SCHEMA_VERSION, "job result")
    elif "format" in data:
        if data.pop("format") != 3:
            raise RecordError(f"{path}: unknown job result format; {_RESULT_FIX}")
    else:  # before format 3: per-case results inside run.results
        for r in (data.get("run") or {}).get("results") or []:
            upgrade_case(r)
    if data.get("run") is not None:
        data["run"].setdefault("results", [])
    return data


def read_job_result(path: Path) -> JobResult:
    """A job's ``result.json`` (``path``: the file or its folder), of any schema."""
    path = path / RESULT_FILE if path.is_dir() else path
    data = _upgrade_job(path, _read_json(path, "job result", _RESULT_FIX))
    return _validated(JobResult, path, data, "job result", _RESULT_FIX)


def write_job_result(folder: Path, result: JobResult) -> Path:
    data = result._dump()
    if result.results_file and data["run"] is not None:
        data["run"].pop("results")  # they are in results_file
    return write_json_atomic(folder / RESULT_FILE, data)


def sweep_job_results(sweep_dir: Path) -> list[tuple[Path, JobResult]]:
    """(job folder, record) of every job of a sweep folder that wrote one, in folder order."""
    return [(p.parent, read_job_result(p)) for p in sorted(sweep_dir.glob(f"*/{RESULT_FILE}"))]


def count_job_results(sweep_dir: Path) -> int:
    """How many jobs of a sweep folder have written their record (finished or failed)."""
    return sum(1 for _ in sweep_dir.glob(f"*/{RESULT_FILE}"))


def case_results(path: Path) -> Iterator[BenchmarkResult]:
    """The per-case results of a results file (``results.jsonl``), one at a time."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield BenchmarkResult.model_validate(json.loads(line))
            except (ValueError, ValidationError) as exc:
                raise RecordError(f"{path}, line {n}: not a per-case result ({exc}); "
                                  f"{_RESULT_FIX}") from None


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


class SweepManifest(_Record):
    """A sweep's own facts (``sweep.json``). The launching process writes it
    before the first job; the tracker fills its part (experiment, parent run)."""

    schema_version: int = MANIFEST_VERSION
    sweep_id: str
    experiment_name: str
    swept_keys: list[str] = Field(default_factory=list)
    command: str = ""
    command_key: str = ""  # the command without resume and output folders: what a resume matches
    jobs_total: int | None = None  # planned jobs (grid sweepers), for progress lines
    started_at: float = 0.0  # time.time() when the sweep started
    ended_at: float | None = None  # its end recorded and handed to tracking: nothing left to do
    # tracking
    experiment_id: str | None = None
    parent_run_id: str | None = None
    tracking_uri: str | None = None
    artifact_root: str | None = None
    background: bool = False  # a background uploader process does all MLflow writes
    parent_tags: dict[str, str] = Field(default_factory=dict)
    default_params: dict[str, str] = Field(default_factory=dict)  # composed once, for run params


_MANIFEST_FIX = "pass the folder of a silas_exp sweep (it holds sweep.json)"


def _read_sweep_record(path: Path, model: type[_Record], known: int, what: str, fix: str,
                       before_versions: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """A record of a sweep folder, None when absent; ``before_versions`` reads
    the shape it had before it carried a schema version (default: the same)."""
    if not path.is_file():
        return None
    data = _read_json(path, what, fix)
    if _version(path, data, "schema_version", known, what) == 0 and before_versions is not None:
        return before_versions(data)
    return _validated(model, path, data, what, fix)


def read_manifest(folder: Path) -> SweepManifest | None:
    """The sweep folder's manifest; None when it has none."""
    return _read_sweep_record(folder / MANIFEST_FILE, SweepManifest, MANIFEST_VERSION,
                              "sweep manifest", _MANIFEST_FIX)


def write_manifest(folder: Path, manifest: SweepManifest) -> Path:
    return write_json_atomic(folder / MANIFEST_FILE, manifest._dump())


def update_manifest(folder: Path, change: Callable[[SweepManifest], object]) -> SweepManifest | None:
    """Read the sweep folder's manifest, ``change`` it and write it back under
    its lock; None (nothing written) when the folder has none. The launching
    process (its sweeper, a tuning study) and the background uploader each
    set fields of their own; with the lock, none writes back a copy read
    before another's change (the uploader's parent run id, a study's swept
    keys)."""
    with exclusive(folder / MANIFEST_FILE):
        manifest = read_manifest(folder)
        if manifest is None:
            return None
        change(manifest)
        write_manifest(folder, manifest)
        return manifest


class SweepEnd(_Record):
    """How a sweep ended, for its parent run (``sweep.done``): status, what it
    shows beyond its job runs (``description`` becomes the run's markdown
    description) and the files to attach (``artifacts``: paths relative to the
    sweep folder, files or folders, logged under the same relative path)."""

    schema_version: int = SWEEP_END_VERSION
    status: Literal["FINISHED", "FAILED", "KILLED"] = "FINISHED"
    params: dict[str, str] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    tags: dict[str, str] = Field(default_factory=dict)
    description: str | None = None
    artifacts: list[str] = Field(default_factory=list)
    tables: dict[str, dict[str, list[Any]]] = Field(default_factory=dict)  # log_table: name -> columns


_END_FIX = "delete it, then upload the sweep folder again (silas-exp upload SWEEP_DIR)"


def read_sweep_end(folder: Path) -> SweepEnd | None:
    """The sweep's end record; None while the sweep runs. Before version 1 the
    file held only the number of failed jobs."""
    return _read_sweep_record(
        folder / SWEEP_END_FILE, SweepEnd, SWEEP_END_VERSION, "sweep end record", _END_FIX,
        lambda old: SweepEnd(status="FAILED" if old.get("failed_jobs") else "FINISHED"))


def write_sweep_end(folder: Path, end: SweepEnd) -> Path:
    return write_json_atomic(folder / SWEEP_END_FILE, end._dump())


def remove_sweep_end(folder: Path) -> None:
    """A sweep starts in ``folder``: an end record left by an earlier sweep there is not its end."""
    (folder / SWEEP_END_FILE).unlink(missing_ok=True)
