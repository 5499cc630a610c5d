"""Two jobs that log their own runs to a server can insert the same new
dataset at the same moment; the one whose insert loses the unique key links
the dataset the other made, and the job goes on."""

from __future__ import annotations

import pytest
from mlflow.exceptions import MlflowException

from silas_exp.tracking.payload import suite_dataset
from silas_exp.tracking.store import MlflowStore
from tests.conftest import REPO


def test_a_dataset_insert_that_loses_the_race_links_the_existing_one(tmp_path, monkeypatch):
    store = MlflowStore(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = store.ensure_experiment("race")
    run = store.start_run(exp, "job", {})
    real, calls = store.client.log_inputs, []

    def racing(run_id, datasets):
        calls.append(run_id)
        if len(calls) == 1:  # what PostgreSQL answered the job that came second
            raise MlflowException('(psycopg2.errors.UniqueViolation) duplicate key value violates '
                                  'unique constraint "dataset_pk"')
        return real(run_id, datasets=datasets)

    monkeypatch.setattr(store.client, "log_inputs", racing)
    store.log_dataset(run, suite_dataset(str(REPO / "suites" / "smoke"), "smoke", "1.0.0",
                                         str(REPO)))
    assert len(calls) == 2
    assert [d.dataset.name for d in store.client.get_run(run).inputs.dataset_inputs] == ["smoke"]


def test_any_other_refusal_is_raised(tmp_path, monkeypatch):
    store = MlflowStore(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = store.start_run(store.ensure_experiment("race"), "job", {})

    def refused(run_id, datasets):
        raise MlflowException("PERMISSION_DENIED: no")

    monkeypatch.setattr(store.client, "log_inputs", refused)
    with pytest.raises(MlflowException, match="PERMISSION_DENIED"):
        store.log_dataset(run, suite_dataset(str(REPO / "suites" / "smoke"), "smoke", "1.0.0",
                                             str(REPO)))
