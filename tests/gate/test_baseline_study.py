"""Decide -> promote -> the next study, end to end with Hydra and MLflow on the
smoke suite: the next studies run the baseline's configuration as their
control arm, once, and every listed variant (the heuristic control too) gets a
verdict against it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from ..conftest import REPO

pytestmark = pytest.mark.slow


def _run(tmp, module, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HYDRA_"))}
    env.update(MLFLOW_DISABLE_TELEMETRY="true", SILAS_EXP_ROOT=str(tmp))
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def _sweep(tmp, name, *args):
    proc = _run(tmp, "silas_exp", "-m", *args, "suite=smoke", f"paths.root={tmp}",
                f"paths.suites={tmp / 'suites'}", f"hydra.sweep.dir={tmp / name}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr, json.loads((tmp / name / "sweep.json").read_text())


@pytest.fixture(scope="module")
def promoted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    shutil.copytree(REPO / "suites" / "smoke", tmp / "suites" / "smoke")
    _, first = _sweep(tmp, "first", "scorer=weights,prompt")
    proc = _run(tmp, "silas_exp.cli.main", "baseline", "promote", first["sweep_id"],
                "scorer=weights", "--suite-dir", str(tmp / "suites" / "smoke"))
    assert proc.returncode == 0, proc.stderr
    return tmp, MlflowClient(f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}"), first


def _parent(client, sweep_id):
    [run] = [r for r in client.search_runs(
        [client.get_experiment_by_name("silas-smoke").experiment_id],
        f"tags.`silas.sweep_id` = '{sweep_id}'") if r.data.tags.get("silas.kind") == "sweep"]
    return run


def test_the_next_study_runs_the_baseline_once_as_its_control(promoted):
    tmp, client, first = promoted
    out, manifest = _sweep(tmp, "second", "scorer=weights,prompt,heuristic")
    assert "Control: scorer=weights, the suite's promoted baseline" in out
    control = json.loads((tmp / "second" / "control.json").read_text())
    assert control["added"] == {} and control["baseline"]["overrides"] == ["scorer=weights"]
    jobs = [json.loads(p.read_text())["variant"] for p in (tmp / "second").glob("*/result.json")]
    assert sorted(jobs) == ["scorer=heuristic", "scorer=prompt", "scorer=weights"]  # one arm each
    parent = _parent(client, manifest["sweep_id"])
    tags = parent.data.tags
    assert tags["silas.control"] == "scorer=weights"
    assert {"silas.verdict.heuristic", "silas.verdict.prompt"} <= set(tags)  # short names
    assert "silas.verdict.weights" not in tags  # never against itself
    first_line = tags["mlflow.note.content"].splitlines()[0]
    promoted_run = _parent(client, first["sweep_id"]).info.run_id
    assert "Control: **scorer=weights**, the suite's promoted baseline" in first_line
    assert f"[run {promoted_run[:8]}](#/experiments/" in first_line  # a link to the baseline
    assert tags["silas.baseline_run_id"] == promoted_run


def test_a_study_that_does_not_list_the_baseline_runs_it_too(promoted):
    tmp, client, _ = promoted
    _, manifest = _sweep(tmp, "third", "scorer=prompt,online")
    jobs = sorted(json.loads(p.read_text())["variant"] for p in (tmp / "third").glob("*/result.json"))
    assert jobs == ["scorer=online", "scorer=prompt", "scorer=weights"]  # no heuristic added
    assert _parent(client, manifest["sweep_id"]).data.tags["silas.control"] == "scorer=weights"
    # analysis.use_baseline=false: the §19.5 control again
    _, manifest = _sweep(tmp, "fourth", "scorer=prompt,online", "analysis.use_baseline=false")
    assert _parent(client, manifest["sweep_id"]).data.tags["silas.control"] == "scorer=heuristic"


def test_after_a_demotion_studies_run_the_heuristic_control_and_regress_asks_for_one(promoted):
    """Last in this file: it takes the module's baseline away."""
    tmp, client, first = promoted
    suite_dir = tmp / "suites" / "smoke"
    refused = _run(tmp, "silas_exp.cli.main", "baseline", "demote", "--suite-dir", str(suite_dir))
    assert refused.returncode != 0 and "needs --reason" in refused.stderr
    assert (suite_dir / "baseline.json").is_file()
    proc = _run(tmp, "silas_exp.cli.main", "baseline", "demote", "--suite-dir", str(suite_dir),
                "--reason", "the judge changed")
    assert proc.returncode == 0, proc.stderr
    assert "suite 'smoke' has no baseline now" in proc.stdout
    assert not (suite_dir / "baseline.json").exists()
    old = _parent(client, first["sweep_id"])
    tags = old.data.tags
    assert tags["silas.baseline"] == "false" and tags["silas.baseline_demoted_by"]
    assert tags["silas.baseline_demoted_reason"] == "the judge changed"
    assert not old.info.run_name.endswith(" · baseline")
    assert tags["mlflow.note.content"].startswith("**Baseline:** former baseline of suite `smoke`")
    exp = client.get_experiment_by_name("silas-smoke")
    assert "silas.baseline.smoke" not in exp.tags  # the pointer is gone
    assert exp.tags["mlflow.note.content"].startswith(
        f"No baseline of suite smoke: run {old.info.run_id[:8]} was demoted ")
    history = json.loads(exp.tags["silas.baseline.smoke.history"])
    assert [h["action"] for h in history][-2:] == ["promote", "demote"]
    assert history[-1]["reason"] == "the judge changed" and history[-1]["by"]
    lines = (suite_dir / "baseline_history.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["action"] == "demote"
    shown = _run(tmp, "silas_exp.cli.main", "baseline", "show", "--suite-dir", str(suite_dir))
    assert shown.returncode == 0, shown.stderr
    shown = json.loads(shown.stdout)
    assert shown["run_id"] is None and shown["history"][-1]["action"] == "demote"

    again = _run(tmp, "silas_exp.cli.main", "baseline", "demote", "--suite-dir", str(suite_dir),
                 "--reason", "twice")
    assert again.returncode != 0 and "has no baseline to demote" in again.stderr

    out, manifest = _sweep(tmp, "after-demotion", "scorer=prompt,online")
    assert "the suite's promoted baseline" not in out
    parent = _parent(client, manifest["sweep_id"])
    assert parent.data.tags["silas.control"] == "scorer=heuristic"  # §19.5 again
    assert "silas.baseline_run_id" not in parent.data.tags
    reg = _run(tmp, "silas_exp.cli.main", "regress", manifest["sweep_id"], "scorer=prompt",
               "--suite-dir", str(suite_dir))
    assert reg.returncode not in (0, 1), reg.stdout
    assert "no baseline: promote one first" in reg.stderr
    assert "was demoted" in reg.stderr and "the judge changed" in reg.stderr
