"""What MLflow shows of a check of a configuration: a run of its own with the
check's settings as params, its figures as metrics, the check's own start and
end, and MLflow's Source, Version and User."""

from __future__ import annotations

import shutil
import time

from silas_exp.schema.baseline import BaselineJob, BaselineRecord
from silas_exp.tracking.baseline import MlflowGateLog
from silas_exp.tracking.reader import MlflowRunReader


def test_a_checks_own_run_carries_its_settings_figures_times_and_source(tmp_path):
    reader = MlflowRunReader(f"sqlite:///{tmp_path / 'mlflow.db'}")
    record = BaselineRecord(suite="default", suite_version="3.0.0", variant="scorer=weights",
                            overrides=["scorer=weights"], source_run_id="b" * 32,
                            jobs=[BaselineJob()])
    started = time.time() - 90
    run_id = MlflowGateLog(reader).check_run(
        record, "regress scorer=weights", tags={"silas.regress": "no_regression"},
        params={"regress.config": "scorer=weights"},
        metrics={"regress.ir.ndcg_at_10.delta": -0.01, "regress.cases": 40.0},
        started=started, ended=started + 60)
    run = reader.store.get_run(run_id)
    assert run.data.params == {"regress.config": "scorer=weights"}
    assert run.data.metrics == {"regress.ir.ndcg_at_10.delta": -0.01, "regress.cases": 40.0}
    assert run.info.end_time - run.info.start_time == 60_000  # the check's own duration
    tags = run.data.tags
    assert tags["mlflow.source.name"] == "silas-exp regress" and tags["mlflow.user"]
    assert tags["silas.kind"] == "regress" and tags["silas.regress"] == "no_regression"
    assert tags["silas.baseline_run_id"] == "b" * 32
    assert tags.get("mlflow.source.git.commit") or shutil.which("git") is None  # Version
