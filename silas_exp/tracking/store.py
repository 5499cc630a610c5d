"""MLflow tracking: the only module that imports mlflow.

Uses ``MlflowClient`` with explicit run ids throughout (no fluent "active
run" state), so a job that crashed can never leave a run active for the next
job in the same process. The database and the experiment are created once by
the launching process; jobs receive the experiment id. Everything is logged
in batches (per-call logging costs ~2.3 ms on SQLite, ~50 ms via a server).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import mlflow  # noqa: E402
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from silas_exp.errors import TrackingError  # noqa: E402
from silas_exp.records import exclusive  # noqa: E402
from silas_exp.tracking import permissions  # noqa: E402
from silas_exp.tracking.payload import (  # noqa: E402
    BASELINE_NAME_MARK,
    EXPERIMENT_KIND,
    NOTE_END,
    baseline_pointers,
    experiment_note,
    with_first_line,
)

T = TypeVar("T")

BATCH = 100  # MLflow accepts at most 100 params/tags per batch request
METRIC_BATCH = 800
TERMINAL = ("FINISHED", "FAILED", "KILLED")
NOTE = "mlflow.note.content"  # a run's or experiment's description (markdown) in the UI


def _own_connections_after_fork() -> None:
    """A forked process (the default launcher's workers) opens its own database
    connections: it drops the ones it copied from its parent without closing
    them, which are the parent's (SQLAlchemy's ``dispose(close=False)``, its
    recipe for fork). SQLite forbids carrying a connection across a fork."""
    module = sys.modules.get("mlflow.store.tracking.sqlalchemy_store")  # none opened: nothing to do
    engines = getattr(getattr(module, "SqlAlchemyStore", None), "_engine_map", {})
    for engine in list(engines.values()):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_own_connections_after_fork)


def _sqlite_path(uri: str) -> Path | None:
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1000)


def artifact_root_for(uri: str, artifact_root: str | None) -> str | None:
    """A tracking server (http/https) stores artifacts where it was told to; a
    local folder is applied only to database stores. URIs (s3://…) always apply."""
    if artifact_root and uri.startswith(("http://", "https://")) and "://" not in artifact_root:
        return None
    return artifact_root


class _WriteLock:
    """Serialises writes to a SQLite store across processes (``records.exclusive``,
    a lock on ``<db>.lock``) and retries "database is locked"; MLflow's SQLite
    store has neither. A no-op for server and other database URIs."""

    def __init__(self, db: Path | None, uri: str = "", retries: int = 8) -> None:
        self.db, self.uri, self.retries = db, uri, retries

    def held(self) -> contextlib.AbstractContextManager[None]:
        return exclusive(self.db) if self.db is not None else contextlib.nullcontext()

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        for attempt in range(self.retries):
            try:
                with self.held():
                    return fn(*args, **kwargs)
            except MlflowException as exc:
                if exc.error_code == "PERMISSION_DENIED":
                    raise permissions.refused(self.uri, getattr(fn, "__name__", "a write")) from None
                if "locked" not in str(exc).lower() or attempt == self.retries - 1:
                    raise
                time.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")


def build_sqlite_schema(path: Path) -> bool:
    """Build a new SQLite store's schema (MLflow's own tables and migrations) in
    ``path`` without a sync per statement, then sync it once. MLflow would
    otherwise commit each of its ~60 migrations with an fsync: 2-6 s on a busy
    disk, before the first run can be written. False (nothing built) when
    MLflow's private helper is not there: MLflow then builds the store itself."""
    import sqlalchemy

    try:
        from mlflow.store.db.utils import _initialize_tables
    except ImportError:
        return False
    engine = sqlalchemy.create_engine(f"sqlite:///{path}")

    @sqlalchemy.event.listens_for(engine, "connect")
    def _no_sync(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA synchronous=OFF")
        cursor.execute("PRAGMA journal_mode=MEMORY")
        cursor.close()

    try:
        _initialize_tables(engine)
    finally:
        engine.dispose()
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())
    return True


@contextlib.contextmanager
def schema_ahead(uri: str) -> Iterator[Path | None]:
    """A new store's schema, built now in a temporary folder, for a SQLite
    store that does not exist yet (else None): the background uploader builds
    it (~2.5 s of CPU) while the sweep starts, and hands it to ``MlflowStore``
    once the first job has started; nothing of it is left behind."""
    db = _sqlite_path(uri)
    if db is None or db.exists() or db.name == ":memory:" or "?" in uri:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="silas-schema-") as tmp:
        schema = Path(tmp) / "mlflow.db"
        try:
            built = build_sqlite_schema(schema)
        except Exception:  # noqa: BLE001  (MlflowStore builds the store itself then)
            built = False
        yield schema if built else None


def _create_sqlite_store(db: Path, schema: Path | None = None) -> None:
    """A new SQLite store: its schema built (``build_sqlite_schema``), or copied
    from ``schema`` (built ahead), in a temporary file next to it, then linked
    into place. Left to MLflow when its private helper is not there."""
    tmp = db.with_name(f".{db.name}.{os.getpid()}.new")
    try:
        if schema is not None and schema.is_file():
            shutil.copyfile(schema, tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        elif not build_sqlite_schema(tmp):
            return
        os.link(tmp, db)  # never replaces a store that appeared meanwhile
    except Exception:  # noqa: BLE001  (a store that appeared meanwhile; else MLflow tries itself)
        pass
    finally:
        tmp.unlink(missing_ok=True)


class MlflowStore:
    def __init__(self, uri: str, artifact_root: str | None = None,
                 schema: Path | None = None) -> None:
        """``schema``: a new store's schema built ahead (``schema_ahead``), used
        when the SQLite store does not exist yet."""
        self.uri, self.artifact_root = uri, artifact_root_for(uri, artifact_root)
        self.user = permissions.Identity(uri)  # who the server takes this process for
        if permissions.is_server(uri):  # refused credentials: one paragraph now, no retries later
            permissions.refuse_credentials_in_uri(uri)
            self.user = permissions.whoami(uri)
        db = _sqlite_path(uri)
        self._lock = _WriteLock(db, uri)
        if db is not None:
            try:
                db.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise TrackingError(f"cannot create the tracking store folder {db.parent}: {exc}. "
                                    "Point tracking.uri elsewhere or fix the permissions.") from None
            if not db.exists() and db.name != ":memory:" and "?" not in uri:
                with self._lock.held():
                    if not db.exists():
                        _create_sqlite_store(db, schema)
        self.client = MlflowClient(tracking_uri=uri)

    # -- store and experiment (launching process only) -------------------------
    def ensure_store(self) -> None:
        try:
            self._lock.run(self.client.search_experiments, max_results=1)
        except Exception as exc:
            raise TrackingError(
                f"tracking store {self.uri} is not usable: {exc}. Check tracking.uri, or run with "
                "tracking=none; results are also kept in each job's output folder."
            ) from None

    def ensure_experiment(self, name: str, tags: Mapping[str, str] | None = None) -> str:
        """The experiment's id, created if needed, tagged so the UI opens on its runs."""
        exp = self.client.get_experiment_by_name(name)
        if exp is not None:
            missing = {k: v for k, v in EXPERIMENT_KIND.items() if k not in exp.tags}
            for key, value in missing.items():
                self.set_experiment_tag(exp.experiment_id, key, value)
            if NOTE_END in exp.tags.get(NOTE, NOTE_END):  # none yet, or in an older form
                self.refresh_experiment_note(exp.experiment_id)
            return exp.experiment_id
        location = None
        if self.artifact_root and "://" in self.artifact_root:
            location = f"{self.artifact_root.rstrip('/')}/{name}"
        elif self.artifact_root:
            location = Path(self.artifact_root, name).resolve().as_uri()
        try:
            exp_id = self._lock.run(self.client.create_experiment, name,
                                    artifact_location=location,
                                    tags={**EXPERIMENT_KIND, **(tags or {})})
        except MlflowException:
            exp = self.client.get_experiment_by_name(name)  # created concurrently
            if exp is None:
                raise
            return exp.experiment_id
        self.refresh_experiment_note(exp_id)
        return exp_id

    def refresh_experiment_note(self, experiment_id: str) -> None:
        """The experiment's description: a link to its runs view and each suite's
        current baseline (from its tags); what a user added below is kept."""
        tags = self.experiment_tags(experiment_id)
        names = {}
        for run_id in baseline_pointers(tags).values():
            with contextlib.suppress(MlflowException):
                run = self.get_run(run_id)
                name = run.info.run_name.removesuffix(BASELINE_NAME_MARK)
                variant = run.data.tags.get("silas.baseline_variant")  # a study's promoted variant
                study = next((w for w in name.split() if w.startswith("sweep-")), name)
                names[run_id] = f"{variant} of {study}" if variant and \
                    run.data.tags.get("silas.kind") == "sweep" else name
        note = experiment_note(experiment_id, tags, tags.get(NOTE, ""), names)
        if note != tags.get(NOTE):
            self.set_experiment_tag(experiment_id, NOTE, note)

    def writing(self) -> contextlib.AbstractContextManager[None]:
        """Hold the store's write lock around writes made outside this class
        (traces); do not call this class's own writing methods inside."""
        return self._lock.held()

    def set_experiment_tag(self, experiment_id: str, key: str, value: str) -> None:
        self._lock.run(self.client.set_experiment_tag, experiment_id, key, value)

    def delete_experiment_tag(self, experiment_id: str, key: str) -> None:
        self._lock.run(self.client.delete_experiment_tag, experiment_id, key)

    def experiment_tags(self, experiment_id: str) -> dict[str, str]:
        return dict(self.client.get_experiment(experiment_id).tags)

    # -- runs ------------------------------------------------------------------
    def start_run(self, experiment_id: str, name: str, tags: Mapping[str, str],
                  parent_run_id: str | None = None, start_time: float | None = None) -> str:
        """``start_time`` (seconds since the epoch): when the job started, for runs
        created after the fact (the UI's Created and Duration come from it)."""
        all_tags = dict(tags)
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        run = self._lock.run(self.client.create_run, experiment_id, run_name=name, tags=all_tags,
                             start_time=_ms(start_time))
        return run.info.run_id

    def log_dataset(self, run_id: str, dataset: Mapping[str, Any]) -> None:
        """A suite as the run's dataset input (Dataset column, ``dataset.name`` filters):
        MLflow's MetaDataset with a file-system source, version and case count as profile,
        without an ``evaluation`` context, so the job stays a "Model training" run."""
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.data.sources import LocalArtifactDatasetSource

        meta = MetaDataset(LocalArtifactDatasetSource(dataset["source"]), name=dataset["name"],
                           digest=dataset["digest"])
        d = meta.to_dict()
        entity = Dataset(name=d["name"], digest=d["digest"], source_type=d["source_type"],
                         source=d["source"],
                         profile=json.dumps({"version": dataset["version"], "cases": dataset["cases"]}))
        # no mlflow.data.context=evaluation: MLflow 3.17's UI lists such runs as GenAI "Eval" runs
        # and leaves the runs table for its evaluation view when one is clicked
        inp = DatasetInput(entity, tags=[InputTag("silas.suite_version", dataset["version"])])
        try:
            self._lock.run(self.client.log_inputs, run_id, datasets=[inp])
        except MlflowException as exc:
            # two jobs logging the same new dataset at once (jobs that log their own runs to a
            # server): the loser's insert breaks the unique key; the dataset exists now, link it
            if not _duplicate_key(exc):
                raise
            self._lock.run(self.client.log_inputs, run_id, datasets=[inp])

    def log_text(self, run_id: str, text: str, artifact_file: str) -> None:
        self.client.log_text(run_id, text, artifact_file)

    def log(self, run_id: str, params: Mapping[str, str] | None = None,
            metrics: Mapping[str, float] | None = None, tags: Mapping[str, str] | None = None,
            step: int = 0) -> None:
        now = int(time.time() * 1000)
        p = [Param(k, v) for k, v in (params or {}).items()]
        t = [RunTag(k, v) for k, v in (tags or {}).items()]
        m = [Metric(k, float(v), now, step) for k, v in (metrics or {}).items()]
        # MLflow limits one batch to 100 params, 100 tags and 1000 entities in all
        chunks = max(math.ceil(len(p) / BATCH), math.ceil(len(t) / BATCH),
                     math.ceil(len(m) / METRIC_BATCH), 1)
        for i in range(chunks):
            self._lock.run(
                self.client.log_batch, run_id, metrics=m[i * METRIC_BATCH:(i + 1) * METRIC_BATCH],
                params=p[i * BATCH:(i + 1) * BATCH], tags=t[i * BATCH:(i + 1) * BATCH],
            )

    def log_artifacts(self, run_id: str, folder: Path, artifact_path: str | None = None) -> None:
        self.client.log_artifacts(run_id, str(folder), artifact_path)

    def log_artifact(self, run_id: str, path: Path, artifact_path: str | None = None) -> None:
        self.client.log_artifact(run_id, str(path), artifact_path)

    def log_table(self, run_id: str, data: Mapping[str, list[Any]], artifact_file: str) -> None:
        self._lock.run(self.client.log_table, run_id, data=dict(data), artifact_file=artifact_file)

    def end_run(self, run_id: str, status: str = "FINISHED", end_time: float | None = None) -> None:
        self._lock.run(self.client.set_terminated, run_id, status=status, end_time=_ms(end_time))

    def note_first(self, run_id: str, line: str, prefix: str) -> None:
        """Put ``line`` at the top of the run's description (collapsed, the UI
        shows only its first lines), replacing an earlier one starting with ``prefix``."""
        note = self.get_run(run_id).data.tags.get(NOTE, "")
        self.log(run_id, tags={NOTE: with_first_line(note, line, prefix)})

    def set_status(self, run_id: str, status: str) -> None:
        self._lock.run(self.client.update_run, run_id, status=status)

    def run_status(self, run_id: str) -> str:
        return self.client.get_run(run_id).info.status

    # -- reading back (analysis) -------------------------------------------------
    def get_run(self, run_id: str) -> Any:
        return self.client.get_run(run_id)

    def search_runs(self, experiment_ids: list[str], filter_string: str = "",
                    max_results: int = 5000) -> list[Any]:
        return self.client.search_runs(experiment_ids, filter_string=filter_string,
                                       max_results=max_results)

    def get_experiment_by_name(self, name: str) -> Any:
        return self.client.get_experiment_by_name(name)

    def download_artifact(self, run_id: str, path: str, dst: Path) -> Path:
        dst.mkdir(parents=True, exist_ok=True)
        return Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=path,
                                                        dst_path=str(dst), tracking_uri=self.uri))


def _duplicate_key(exc: Exception) -> bool:
    """An insert that lost a race for a unique key (PostgreSQL, MySQL or SQLite wording)."""
    text = str(exc).lower()
    return any(t in text for t in ("duplicate key", "unique constraint", "uniqueviolation",
                                   "duplicate entry"))
