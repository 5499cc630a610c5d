"""End to end through the real CLI, Hydra multirun and MLflow (SQLite), read
back with the MLflow client."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from tests.plugins.test_declared_once import silas
from tests.plugins.test_example_plugin import fake_install

UNFIT = "unfit = tests.plugins.kinds:UNFIT"


def _client(tmp_path) -> MlflowClient:
    return MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")


def test_sweep_logs_parent_and_children_with_config_tags_metrics_artifacts(cli, tmp_path):
    proc = cli("-m", "scorer=heuristic,weights", "suite=smoke", "repeats=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "scorer=weights" in proc.stdout and "repeats" in proc.stdout  # summary table
    client = _client(tmp_path)
    exp = client.get_experiment_by_name("silas-smoke")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id], max_results=100)
    parents = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId")]
    assert len(parents) == 1 and len(children) == 4
    parent = parents[0]
    assert parent.info.status == "FINISHED"
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}
    seeds = {}
    for child in children:
        tags, params, metrics = child.data.tags, child.data.params, child.data.metrics
        assert child.info.status == "FINISHED"
        assert tags["silas.sweep_id"] == parent.data.tags["silas.sweep_id"]
        assert tags["silas.variant"] in ("scorer=heuristic", "scorer=weights")
        assert tags["llm.backend"] == "simulated" and tags["llm.simulated"] == "true"
        assert len(tags["silas.config_hash"]) == 16
        assert tags["silas.git_revision"] and "mlflow 3." in tags["silas.versions"]
        assert params["scorer.name"] == tags["silas.variant"].split("=")[1]
        # params: swept keys and values that differ from the defaults, nothing else
        assert params["suite.name"] == "smoke" and "budget.total" not in params
        assert 0.0 <= metrics["context.retrieval_relevance"] <= 1.0
        assert "summary.pass_rate" in metrics and "llm.calls" in metrics
        seeds.setdefault(tags["silas.repeat"], set()).add(params["job.seed"])
        arts = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {"cases.json", "result.json", "feedback.sqlite", "hydra"} <= arts
        hydra_arts = {a.path for a in client.list_artifacts(child.info.run_id, "hydra")}
        assert {"hydra/config.yaml", "hydra/overrides.yaml"} <= hydra_arts
        table = json.loads(open(client.download_artifacts(child.info.run_id, "cases.json",
                                                           str(tmp_path / "dl"))).read())
        assert "case_id" in table["columns"] and len(table["data"]) == 2
    # paired design: a repeat's seed is shared by the variants and differs across repeats
    assert all(len(s) == 1 for s in seeds.values()) and len({next(iter(s)) for s in seeds.values()}) == 2
    by_variant = {}
    for c in children:
        by_variant.setdefault(c.data.tags["silas.variant"], []).append(
            c.data.metrics["feedback.exclusion_rate"])
    assert by_variant["scorer=heuristic"] != by_variant["scorer=weights"]


def test_failed_job_ends_failed_and_next_job_gets_fresh_run(tmp_path):
    """A job that fails from code (a plug-in scorer whose calibration raises)."""
    site = fake_install(tmp_path / "site", "unfit-plugin", "0.1", "silas_exp.scorers", UNFIT)
    proc = silas(tmp_path, site, "-m", "scorer=unfit,heuristic", "suite=smoke",
                 "hydra.launcher.n_jobs=1")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "failed" in proc.stdout and "RuntimeError: the fit broke" in proc.stdout
    assert "Traceback" not in proc.stderr
    runs = _client(tmp_path).search_runs(
        [_client(tmp_path).get_experiment_by_name("silas-smoke").experiment_id], max_results=100)
    status = {}
    for r in runs:
        if r.data.tags.get("silas.kind") != "sweep":
            status.setdefault(r.data.tags["silas.variant"], set()).add(r.info.status)
    assert status == {"scorer=unfit": {"FAILED"}, "scorer=heuristic": {"FINISHED"}}
    assert not [r for r in runs if r.info.status == "RUNNING"]


@pytest.mark.parametrize("args,expect", [
    (["scorer=magic"], ["scorer=magic: 'magic' is not an option", "heuristic", "weights"]),
    (["scorer.weights.zone.chronicle=-1"], ["scorer.weights.zone.chronicle", "-1", "greater than"]),
    (["scorer.weights.age_decay=nan"], ["scorer.weights.age_decay", "finite"]),
    (["repeats=0"], ["repeats", "greater than or equal to 1"]),
])
def test_bad_input_exits_2_with_one_paragraph(cli, args, expect):
    proc = cli(*args, "tracking=none")
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    for part in expect:
        assert part in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_broken_suite_file_exits_2_naming_file(cli, tmp_path):
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "suite.json").write_text("{not json")
    proc = cli(f"suite.path={bad}", "tracking=none")
    assert proc.returncode == 2
    assert str(bad / "suite.json") in proc.stderr and "not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
    verbose = cli(f"suite.path={bad}", "tracking=none", "--verbose")
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr


def test_help_lists_groups(cli):
    proc = cli("--help", isolate=False)
    assert proc.returncode == 0
    for word in ("scorer:", "heuristic", "weights", "eviction", "mlflow ui"):
        assert word in proc.stdout
