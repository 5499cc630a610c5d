"""A sweep read back from the MLflow store, as the UI would show it: true job
times, standard fields, dataset input, few params, the experiment kind, and
one baseline per suite after promotions, with regress outcomes on the run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from silas_exp.tracking.payload import MAX_PARAMS

from ..conftest import REPO
from .conftest import run_silas


def _cli(tmp: Path, *args: str) -> object:
    return run_silas(tmp, *args, "--tracking-uri", f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}",
                     module="silas_exp.cli.main")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("readback")
    proc = run_silas(tmp, "-m", "scorer=heuristic,weights", "suite=smoke", "repeats=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("silas-smoke")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    return tmp, client, exp, runs


def _children(runs):
    return [r for r in runs if r.data.tags.get("silas.kind") != "sweep"]


def test_experiment_opens_on_runs(swept):
    _, _, exp, _ = swept
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"


def test_child_runs_carry_the_jobs_own_times(swept):
    tmp, _, _, runs = swept
    jobs = {}
    for folder in sorted((tmp / "multirun").glob("[0-9]*")):
        job = json.loads((folder / "job.json").read_text())
        result = json.loads((folder / "result.json").read_text())
        ended = datetime.fromisoformat(result["run"]["completed_at"]).timestamp()
        jobs[job["run_name"]] = (job["started_at"], ended)
    children = _children(runs)
    assert len(children) == 4 and set(jobs) == {c.info.run_name for c in children}
    for c in children:
        started, ended = jobs[c.info.run_name]
        assert abs(c.info.start_time / 1000 - started) < 1.0
        assert abs(c.info.end_time / 1000 - ended) < 1.0
        assert c.info.end_time > c.info.start_time


def test_standard_fields_dataset_and_few_params(swept):
    _, _, _, runs = swept
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).parent).stdout.strip()
    for c in _children(runs):
        tags, params = c.data.tags, c.data.params
        assert tags["mlflow.source.git.commit"] == head
        assert tags["mlflow.user"] and tags["mlflow.source.name"] == "python -m silas_exp"
        note = tags["mlflow.note.content"]
        assert tags["silas.variant"] in note and "suite `smoke`" in note and "pass rate" in note
        assert not any(k.startswith("version.") for k in tags) and "mlflow 3." in tags["silas.versions"]
        assert 0 < len(params) <= MAX_PARAMS
        assert not any(k.startswith(("llm.prices.", "tracking.", "paths.")) for k in params)
        assert not any(v.startswith("/") for v in params.values())  # no machine paths
        assert params["scorer.name"] == tags["silas.scorer"] and params["suite.name"] == "smoke"
        [inp] = c.inputs.dataset_inputs
        assert inp.dataset.name == "smoke" and len(inp.dataset.digest) == 12
        assert json.loads(inp.dataset.source)["uri"] == "suites/smoke"  # relative to the project
        # lineage kept, and no "evaluation" context: the UI keeps the job a Model training run
        assert {t.key: t.value for t in inp.tags}.get("mlflow.data.context") != "evaluation"
        assert json.loads(inp.dataset.profile) == {"version": "1.0.0", "cases": 4}
        assert {t.key: t.value for t in inp.tags}["silas.suite_version"] == "1.0.0"
    digests = {c.inputs.dataset_inputs[0].dataset.digest for c in _children(runs)}
    assert len(digests) == 1  # same suite files, same digest


# -- where the other half of the parent run goes (filled by the end-of-sweep analysis) --
def test_sweep_end_record_reaches_the_parent_run(tmp_path):
    from silas_exp.records import SweepEnd, read_sweep_end, write_sweep_end
    from silas_exp.tracking.parent import close_parent
    from silas_exp.tracking.store import MlflowStore

    store = MlflowStore(f"sqlite:///{tmp_path / 'mlflow.db'}", str(tmp_path / "artifacts"))
    exp_id = store.ensure_experiment("parents")
    run_id = store.start_run(exp_id, "sweep-x", {"silas.kind": "sweep"})
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.html").write_text("<h1>verdict</h1>")
    write_sweep_end(tmp_path, SweepEnd(
        status="FAILED", params={"swept": "scorer"}, metrics={"variant.weights.delta": 0.01},
        tags={"silas.verdict.weights": "ship"}, description="| variant | outcome |",
        artifacts=["report", "missing.md"]))
    close_parent(store, run_id, tmp_path, read_sweep_end(tmp_path))
    run = store.get_run(run_id)
    assert run.info.status == "FAILED"
    assert run.data.params == {"swept": "scorer"}
    assert run.data.metrics == {"variant.weights.delta": 0.01}
    assert run.data.tags["silas.verdict.weights"] == "ship"
    assert run.data.tags["mlflow.note.content"] == "| variant | outcome |"
    assert [a.path for a in store.client.list_artifacts(run_id, "report")] == ["report/report.html"]


def _row(report: str, metric: str) -> str:
    """A gated metric's row of a regression report."""
    return next(line for line in report.splitlines() if f"(`{metric}`) |" in line)


def test_one_baseline_per_suite_history_kept_and_regress_recorded(swept):
    tmp, client, exp, runs = swept
    suites = tmp / "suites"
    shutil.copytree(Path(__file__).parents[2] / "suites" / "smoke", suites / "smoke")
    [parent] = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    study = _cli(tmp, "baseline", "promote", parent.data.tags["silas.sweep_id"],
                 "scorer=heuristic", "--suite-dir", str(suites / "smoke"))
    assert study.returncode == 0, study.stderr
    # a plain run of the whole suite carries the baseline it ran against, and can be promoted
    plain = run_silas(tmp, "suite=smoke", "scorer=weights")
    assert plain.returncode == 0, plain.stderr[-2000:]
    [single] = [r for r in client.search_runs([exp.experiment_id], "tags.`silas.scorer` = 'weights'")
                if not r.data.tags.get("silas.sweep_id")]
    assert single.data.tags["silas.baseline_run_id"] == parent.info.run_id
    proc = _cli(tmp, "baseline", "promote", single.info.run_id, "--suite-dir", str(suites / "smoke"))
    assert proc.returncode == 0, proc.stderr
    found = client.search_runs([exp.experiment_id], "tags.`silas.baseline` = 'true'")
    assert [r.info.run_id for r in found] == [single.info.run_id]
    old = client.get_run(parent.info.run_id).data.tags
    assert old["silas.baseline"] == "false" and old["silas.baseline_superseded_by"] == single.info.run_id
    assert old["silas.baseline_demoted_at"]
    exp_tags = client.get_experiment(exp.experiment_id).tags
    assert exp_tags["silas.baseline.smoke"] == single.info.run_id
    history = json.loads(exp_tags["silas.baseline.smoke.history"])
    assert [(h["run_id"], h["variant"]) for h in history] == [
        (parent.info.run_id, "scorer=heuristic"), (single.info.run_id, "scorer=weights")]
    assert history[1]["replaced"] == [parent.info.run_id]  # the demotion, kept in the history
    lines = (suites / "smoke" / "baseline_history.jsonl").read_text().splitlines()
    assert [json.loads(x)["run_id"] for x in lines] == [parent.info.run_id, single.info.run_id]
    shown = _cli(tmp, "baseline", "show", "--suite", "smoke")
    assert shown.returncode == 0 and json.loads(shown.stdout)["run_id"] == single.info.run_id

    # regress records its outcome on the run it checked, and fails the command
    later = run_silas(tmp, "suite=smoke", "scorer=random", "eviction.keepbacks=false")
    assert later.returncode == 0, later.stderr[-2000:]
    [new] = [r for r in client.search_runs([exp.experiment_id], "tags.`silas.scorer` = 'random'")]
    reg = _cli(tmp, "regress", new.info.run_id, "--suite-dir", str(suites / "smoke"))
    assert reg.returncode == 1, reg.stdout + reg.stderr
    tags = client.get_run(new.info.run_id).data.tags
    assert tags["silas.regress"] in ("regression", "regression_not_ruled_out")
    assert tags["silas.regress_baseline"] == single.info.run_id and tags["silas.regress_by"]
    md = Path(client.download_artifacts(new.info.run_id, "regress.md", str(tmp / "dl"))).read_text()
    assert "REGRESSION" in md
    accepted = _cli(tmp, "regress", new.info.run_id, "--accept-regression", "a known cost",
                    "--suite-dir", str(suites / "smoke"))
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    tags = client.get_run(new.info.run_id).data.tags
    assert tags["silas.regress_accepted"].startswith("a known cost (by ")

    # a run of the baseline's configuration under another seed is decided against that
    # configuration under the same seed (identical here), not against the logged results
    seeded = run_silas(tmp, "suite=smoke", "scorer=weights", "seed=7")
    assert seeded.returncode == 0, seeded.stderr[-2000:]
    [seven] = [r for r in client.search_runs([exp.experiment_id], "tags.`silas.scorer` = 'weights'")
               if not r.data.tags.get("silas.sweep_id") and r.info.run_id != single.info.run_id]
    reg = _cli(tmp, "regress", seven.info.run_id, "--no-log", "--suite-dir", str(suites / "smoke"))
    row = _row(reg.stdout, "context.retrieval_relevance")
    assert "| +0.000 [" in row and "[+0.000, +0.000]" not in row, reg.stdout  # 2 cases: no zero width
    assert "note: checked under other seeds than the baseline's, so decided against" in reg.stdout

    # a study after the promotion, under another seed, ran the baseline's configuration as its
    # control arm: the check pairs with that arm and runs nothing for it
    study = run_silas(tmp, "-m", "scorer=random", "eviction.keepbacks=false", "suite=smoke",
                      "seed=3", f"paths.suites={suites}", f"paths.mlruns={tmp / 'mlruns'}",
                      f"paths.cache={tmp / 'cache'}", f"hydra.sweep.dir={tmp / 'study3'}",
                      isolate=False)
    assert study.returncode == 0, study.stderr[-2000:]
    sweep3 = json.loads((tmp / "study3" / "sweep.json").read_text())["sweep_id"]
    reg = _cli(tmp, "regress", sweep3, "scorer=random,eviction.keepbacks=false", "--no-log",
               "--suite-dir", str(suites / "smoke"), "--work-dir", str(tmp / "check3"))
    assert "note: checked under other seeds than the baseline's, so decided against" in reg.stdout, \
        reg.stdout + reg.stderr
    assert not (tmp / "check3" / "baseline_configuration").exists()  # its own arm: the control


def test_parent_run_tells_the_result(swept):
    _, client, _, runs = swept
    [parent] = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    tags, metrics, params = parent.data.tags, parent.data.metrics, parent.data.params
    assert tags["silas.verdict.weights"] in ("ship", "do_not_ship", "inconclusive")
    assert tags["silas.control"] == "scorer=heuristic"
    note = tags["mlflow.note.content"]
    assert "| scorer=weights |" in note and "Verdict rule (non-inferiority)" in note
    assert "margins vs heuristic/weights.context.retrieval_relevance" in metrics
    assert params["swept.scorer"] == "heuristic,weights" and params["fixed.suite"] == "smoke"
    assert "scorer=heuristic,weights" in parent.info.run_name
    names = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"ablation.html", "ablation.md", "ablation_table.json"} <= names


REPLAY_GATED = {"context.retrieval_relevance", "context.tokens_per_served_need", "ir.ndcg_at_10",
                "summary.pass_rate", "summary.error_rate"}  # README: what a replay suite gates


def _as_read(x: float) -> float:
    """Four significant digits, whole units from 1,000: what the reports print."""
    return float(round(x)) if abs(x) >= 1000 else float(f"{x:.4g}")


def test_a_job_run_shows_its_gated_metrics_first_and_rounded_and_keeps_exact_values(swept):
    tmp, client, _, runs = swept
    folders = {json.loads((f / "job.json").read_text())["run_name"]: f
               for f in (tmp / "multirun").glob("[0-9]*")}
    changed = 0
    for c in _children(runs):
        exact = json.loads((folders[c.info.run_name] / "result.json").read_text())["metrics"]
        metrics = c.data.metrics  # in the order the run page lists them: the order logged
        keys = list(metrics)
        assert set(keys[:len(REPLAY_GATED)]) == REPLAY_GATED, keys[:8]
        assert keys[len(REPLAY_GATED):len(exact)] == sorted(set(exact) - REPLAY_GATED)
        assert {k for k in keys if "/" in k} == {f"gated/{k}" for k in REPLAY_GATED}
        for key in REPLAY_GATED:  # a section of their own: the run's charts open on it
            assert metrics[f"gated/{key}"] == metrics[key]
        for key, value in exact.items():
            assert metrics[key] == _as_read(value), (key, value, metrics[key])
            changed += metrics[key] != value
        logged = Path(client.download_artifacts(c.info.run_id, "result.json", str(tmp / "dl" / c.info.run_id)))
        assert json.loads(logged.read_text())["metrics"] == exact  # the exact values, in MLflow too
        table = json.loads(Path(client.download_artifacts(
            c.info.run_id, "cases.json", str(tmp / "dl" / c.info.run_id))).read_text())
        column = table["columns"].index("context.retrieval_relevance")
        cells = [row[column] for row in table["data"]]
        assert cells and all(v == _as_read(v) for v in cells)
    assert changed > 0  # the exact values had more digits than a reader needs


def test_compare_stores_finds_the_same_sweep_and_a_changed_metric(swept):
    """scripts/compare_stores.py reads two stores back as MLflow does: a store's
    copy is IDENTICAL; one metric logged again with another value is named."""
    tmp, client, _, runs = swept
    copy = tmp / "copy.db"
    shutil.copy(tmp / "mlruns" / "mlflow.db", copy)
    script = [sys.executable, str(REPO / "scripts" / "compare_stores.py"),
              f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}", f"sqlite:///{copy}", "--experiment", "silas-smoke"]
    same = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert same.returncode == 0 and same.stdout.strip().endswith("IDENTICAL"), same.stdout + same.stderr
    child = _children(runs)[0]
    MlflowClient(f"sqlite:///{copy}").log_metric(child.info.run_id, "summary.pass_rate", 2.0)
    changed = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert f"/{child.info.run_name}/metrics/summary.pass_rate: " in changed.stdout
    assert "1 difference(s)" in changed.stdout
