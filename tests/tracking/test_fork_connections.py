"""A forked process (the default launcher's workers) never uses the SQLite
connections it copied from its parent: SQLite forbids carrying a connection
across fork, and two processes writing through one corrupt the store."""

from __future__ import annotations

import os

from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from silas_exp.tracking.store import MlflowStore


def _pooled_in_child(engine) -> int:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what its copy of the pool holds
        os.write(write, str(engine.pool.checkedin()).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    return int(os.read(read, 16))


def test_a_forked_process_drops_the_parents_pooled_connections(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    store = MlflowStore(uri)
    store.ensure_store()
    store.start_run(store.ensure_experiment("fork"), "r", {})
    engine = SqlAlchemyStore._engine_map[uri]
    assert engine.pool.checkedin() >= 1  # the parent keeps connections pooled
    assert _pooled_in_child(engine) == 0
    assert engine.pool.checkedin() >= 1  # and still has them: closed in neither process
    store.start_run(store.ensure_experiment("fork"), "after", {})  # the parent's store still works
