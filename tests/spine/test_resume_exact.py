"""A job a resumed sweep finds finished gives the sweeper (Optuna) its exact
metric from its restored record, not MLflow's rounded copy."""

from __future__ import annotations

from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.records import JobResult, SweepManifest, write_job_result, write_manifest
from silas_exp.run import execute as execute_module
from silas_exp.tracking.base import FinishedJob, NullTracker

EXACT = 0.25160998757202574  # a metric as a job computes it; MLflow shows 0.2516


class _Restoring(NullTracker):
    """A store that holds this job, finished by an earlier invocation of the sweep."""

    def find_finished_job(self, manifest, config_hash, repeat, suite_version):
        return FinishedJob("earlier-run")

    def restore_job(self, done, out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
        write_job_result(out_dir, JobResult(variant="scorer=weights", repeat=0, status="finished",
                                            metrics={"context.retrieval_relevance": EXACT}))


def test_a_resumed_job_returns_its_exact_metric(tmp_path, compose, monkeypatch):
    cfg = validate(OmegaConf.to_container(compose(
        "suite=smoke", "scorer=weights", "resume=true",
        "metrics.optimize=context.retrieval_relevance"), resolve=True))
    sweep = tmp_path / "sweep"
    write_manifest(sweep, SweepManifest(sweep_id="s", experiment_name="silas-smoke",
                                        swept_keys=["scorer"]))
    monkeypatch.setattr(execute_module, "make_tracker", lambda cfg: _Restoring())
    assert execute_module.execute(cfg, sweep / "0", ["scorer=weights"], True, 0) == EXACT
