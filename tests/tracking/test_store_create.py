"""A new SQLite store is built once, completely, and never replaces one that exists."""

from __future__ import annotations

import sqlalchemy
from mlflow.store.db.utils import _get_latest_schema_revision, _get_schema_version

from silas_exp.tracking.store import MlflowStore


def test_a_new_store_has_mlflows_current_schema_and_no_leftovers(tmp_path):
    db = tmp_path / "mlruns" / "mlflow.db"
    store = MlflowStore(f"sqlite:///{db}", str(tmp_path / "artifacts"))
    store.ensure_store()
    exp = store.ensure_experiment("silas-x")
    run = store.start_run(exp, "r", {"k": "v"})
    store.end_run(run)
    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    assert _get_schema_version(engine) == _get_latest_schema_revision()
    engine.dispose()
    assert sorted(p.name for p in db.parent.iterdir()) == ["mlflow.db", "mlflow.db.lock"]


def test_an_existing_store_is_kept(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = MlflowStore(uri, str(tmp_path / "artifacts"))
    exp = first.ensure_experiment("silas-x")
    again = MlflowStore(uri, str(tmp_path / "artifacts"))
    assert again.get_experiment_by_name("silas-x").experiment_id == exp
