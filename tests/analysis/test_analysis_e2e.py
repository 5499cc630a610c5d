"""Analysis end to end on a real sweep logged to a real MLflow store."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from ..conftest import REPO


def _row(report: str, metric: str) -> str:
    """A gated metric's row of a regression report."""
    return next(line for line in report.splitlines() if f"(`{metric}`) |" in line)


def _cli(tmp_path, *args):
    env = {"MLFLOW_DISABLE_TELEMETRY": "true", "SILAS_EXP_ROOT": str(tmp_path),
           "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "silas_exp.cli.main", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analysis")
    suites = tmp / "suites"
    shutil.copytree(REPO / "suites" / "smoke", suites / "smoke")
    common = [f"paths.root={tmp}", f"paths.suites={suites}", "suite=smoke"]
    env = {"MLFLOW_DISABLE_TELEMETRY": "true", "PATH": "/usr/bin:/bin"}
    sweep = subprocess.run(
        [sys.executable, "-m", "silas_exp", "-m", "scorer=heuristic,weights", "repeats=2", *common,
         f"hydra.sweep.dir={tmp / 'multirun'}"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=300)
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    worse = subprocess.run(
        [sys.executable, "-m", "silas_exp", "scorer=random", "eviction.keepbacks=false", *common,
         f"hydra.run.dir={tmp / 'worse'}"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=300)
    assert worse.returncode == 0, worse.stderr[-2000:]
    client = MlflowClient(f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("silas-smoke")
    runs = client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"])
    sweep_id = json.loads((tmp / "multirun" / "sweep.json").read_text())["sweep_id"]
    by_variant = {}
    for r in runs:
        if r.data.tags.get("silas.kind") != "sweep":
            by_variant.setdefault(r.data.tags["silas.variant"], r.info.run_id)
    return tmp, sweep_id, by_variant


def test_ablation_reproduced_from_mlflow_alone(logged):
    tmp, sweep_id, _ = logged
    proc = _cli(tmp, "ablation", sweep_id, "--out", str(tmp / "abl"))
    assert proc.returncode == 0, proc.stderr
    from_mlflow = (tmp / "abl" / "ablation.md").read_text()
    at_sweep_end = (tmp / "multirun" / "ablation.md").read_text()
    def strip(md: str) -> list[str]:
        return [line for line in md.splitlines() if "png" not in line]

    assert strip(from_mlflow) == strip(at_sweep_end)
    assert "Verdict rule (non-inferiority)" in from_mlflow
    row = next(line for line in from_mlflow.splitlines() if line.startswith("| scorer=weights |"))
    assert any(word in row for word in ("**ship**", "**do not ship**", "inconclusive")), row
    assert (tmp / "abl" / "pareto_tokens_vs_quality.png").stat().st_size > 1000
    # the parent run carries the end-of-sweep report
    client = MlflowClient(f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}")
    parent = [r for r in client.search_runs([client.get_experiment_by_name('silas-smoke').experiment_id])
              if r.data.tags.get("silas.kind") == "sweep"][0]
    names = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"ablation.md", "summary.md", "ablation"} <= names


def test_promote_then_regress_flags_worse_variant(logged):
    tmp, sweep_id, runs = logged
    control, worse = runs["scorer=heuristic"], runs["scorer=random"]
    promote = _cli(tmp, "baseline", "promote", control)  # a job run: its variant of its study
    assert promote.returncode == 0, promote.stderr
    baseline = json.loads((tmp / "suites" / "smoke" / "baseline.json").read_text())
    assert baseline["variant"] == "scorer=heuristic" and baseline["suite_version"] == "1.0.0"
    assert baseline["sweep_id"] == sweep_id and baseline["overrides"] == ["scorer=heuristic"]
    assert sorted(j["repeat"] for j in baseline["jobs"]) == [0, 1]  # every repeat, every case
    assert all(len(j["results"]) == 2 for j in baseline["jobs"])
    assert _cli(tmp, "baseline", "show", "--suite", "smoke").returncode == 0
    reg = _cli(tmp, "regress", worse, "--out", str(tmp / "regress.md"))
    assert reg.returncode == 1, reg.stdout + reg.stderr
    report = (tmp / "regress.md").read_text()
    assert "REGRESSION" in report and "**Decision**" in report
    accepted = _cli(tmp, "regress", worse, "--accept-regression", "random scorer on purpose")
    assert accepted.returncode == 0 and "accepted: random scorer on purpose (by " in accepted.stdout
    same = _cli(tmp, "regress", control)  # the baseline's own results: every difference is 0 …
    row = _row(same.stdout, "context.retrieval_relevance")
    assert "| +0.000 [" in row and "[+0.000, +0.000]" not in row  # … yet 2 cases show no width
    assert same.returncode == 1 and "only 2 paired cases" in same.stdout  # … on too few cases
    other = _cli(tmp, "regress", "--config", "scorer=heuristic", "--seeds-from", "100", "--no-log",
                 "--suite-dir", str(tmp / "suites" / "smoke"))  # other seeds: a concurrent control
    assert "(repeats 100+: other seeds)" in other.stdout, other.stdout + other.stderr
    row = _row(other.stdout, "context.retrieval_relevance")
    assert "| +0.000 [" in row and "[+0.000, +0.000]" not in row
    assert "note: checked under other seeds than the baseline's, so decided against" in other.stdout


def test_promotion_refusals(logged):
    tmp, sweep_id, runs = logged
    client = MlflowClient(f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}")
    parent = [r for r in client.search_runs([client.get_experiment_by_name('silas-smoke').experiment_id])
              if r.data.tags.get("silas.kind") == "sweep"][0]
    refused = _cli(tmp, "baseline", "promote", parent.info.run_id)  # a study: which variant?
    assert refused.returncode == 2 and "name the one to promote" in refused.stderr
    assert "scorer=weights" in refused.stderr
    suite = tmp / "suites" / "smoke" / "suite.json"
    original = suite.read_text()
    suite.write_text(original.replace('"version": "1.0.0"', '"version": "1.1.0"'))
    try:
        bumped = _cli(tmp, "baseline", "promote", sweep_id, "scorer=weights")
        assert bumped.returncode == 2 and "1.1.0" in bumped.stderr
    finally:
        suite.write_text(original)


def test_fail_under_gates_compare_report_prometheus(logged):
    tmp, _, runs = logged
    gate = _cli(tmp, "regress", runs["scorer=heuristic"], "--no-log",
                "--fail-under", "context.retrieval_relevance=0.99")
    assert gate.returncode == 1 and "FAIL context.retrieval_relevance" in gate.stdout
    cmp_ = _cli(tmp, "compare", runs["scorer=heuristic"], runs["scorer=random"])
    assert cmp_.returncode == 0 and "nDCG@10" in cmp_.stdout and "Shadow diff" in cmp_.stdout
    rep = _cli(tmp, "report", runs["scorer=weights"])
    assert rep.returncode == 0 and "Worst cases" in rep.stdout
    prom = _cli(tmp, "export-prometheus")
    assert 'silas_benchmark_pass_rate{suite="smoke",agent="scorer=weights"}' in prom.stdout
    assert "# TYPE silas_benchmark_pass_rate gauge" in prom.stdout


def test_fixture_gate_exit_codes(tmp_path):
    ok = _cli(REPO, "fixtures", "--fixtures", str(REPO / "fixtures/context/bench_v1.json"),
              "--fail-under", "fixtures.zone_precision=0.95", "--fail-under", "fixtures.guard_accuracy=1")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _cli(REPO, "fixtures", "--fixtures", str(REPO / "fixtures/context/bench_v1.json"),
               "--fail-under", "fixtures.routing_coverage=0.9")
    assert bad.returncode == 1 and "FAIL fixtures.routing_coverage" in bad.stdout
    typo = _cli(REPO, "fixtures", "--fail-under", "nonsense")
    assert typo.returncode == 2 and "metric=value" in typo.stderr
