"""The README sweep read back through MlflowClient, as the UI shows it: the
experiment's description links to its runs view, the parent run's description
opens with the decision, few parent metrics, few child params with short
names, and the baseline and regress outcomes on the runs themselves."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from .conftest import run_silas

RUNS_VIEW = "?workflowType=machine_learning"
README_SWEEP = ("-m", "scorer=weights,prompt,online")


def _cli(tmp: Path, *args: str):
    return run_silas(tmp, *args, "--tracking-uri", f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}",
                     module="silas_exp.cli.main")


@pytest.fixture(scope="module")
def readme(tmp_path_factory):
    """The README's sweep on the smoke suite, 2 repeats (the same runs, smaller)."""
    tmp = tmp_path_factory.mktemp("ui")
    proc = run_silas(tmp, *README_SWEEP, "suite=smoke", "repeats=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("silas-smoke")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    [parent] = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("silas.kind") != "sweep"]
    return tmp, client, exp, parent, children, proc.stdout


def test_experiment_description_and_printed_links_open_the_runs_view(readme):
    _, _, exp, parent, _, stdout = readme
    note = exp.tags["mlflow.note.content"]
    assert note.startswith("No baseline promoted yet")
    assert f"(#/experiments/{exp.experiment_id}/runs{RUNS_VIEW})" in note
    urls = re.findall(r"https?://\S+", stdout)
    assert urls and all(u.endswith(RUNS_VIEW) for u in urls)
    assert any(f"/runs/{parent.info.run_id}{RUNS_VIEW}" in u for u in urls)
    serve = next(line for line in stdout.splitlines() if "mlflow ui --backend-store-uri" in line)
    port = re.search(r"--port (\d+)", serve).group(1)
    assert all(f":{port}/" in u for u in urls)  # the link is where the printed command serves


def test_parent_description_opens_with_the_decision(readme):
    _, client, _, parent, _, _ = readme
    note = parent.data.tags["mlflow.note.content"]
    first = note.splitlines()[0]
    assert re.match(r"^\*\*(No variant may ship: .+|scorer=\w+( and scorer=\w+)* ships?\b.*)\.\*\* Control: .+$",
                    first), first
    verdicts = {k: v for k, v in parent.data.tags.items() if k.startswith("silas.verdict.")}
    assert len(verdicts) == 3
    if "ship" not in verdicts.values():
        assert first.startswith("**No variant may ship")
    assert "| variant | verdict | gated Δ vs control [CI] (margin) | why | to decide |" in note
    counts = {o: list(verdicts.values()).count(o) for o in ("ship", "do_not_ship", "inconclusive")}
    assert parent.info.run_name.startswith(  # first, so the runs table does not cut them
        f"{counts['ship']}✓ {counts['do_not_ship']}✗ {counts['inconclusive']}? · sweep-")


def test_parent_keeps_few_metrics_and_one_statistics_table(readme):
    tmp, client, _, parent, _, _ = readme
    metrics = parent.data.metrics
    assert 0 < len(metrics) <= 30
    assert not any(k.startswith("variant.") for k in metrics)
    assert {"margins vs heuristic/online.summary.pass",
            "margins vs heuristic/weights.ir.ndcg_at_10"} <= set(metrics)
    path = client.download_artifacts(parent.info.run_id, "ablation_table.json", str(tmp / "dl"))
    table = json.loads(Path(path).read_text())
    assert {"variant", "metric", "delta", "ci_low", "ci_high", "margin"} <= set(table["columns"])
    assert len(table["data"]) > len(metrics)


def test_children_have_short_names_and_few_params(readme):
    _, _, _, _, children, _ = readme
    assert len(children) == 8
    names = [c.info.run_name for c in children]
    assert len(set(names)) == len(names) and all(len(n) <= 16 for n in names), names
    assert "weights r1" in names
    for c in children:
        params = c.data.params
        assert len(params) <= 15, sorted(params)
        assert not any(k.startswith("scorer.base.") for k in params), sorted(params)
        assert params["scorer.name"] == c.data.tags["silas.scorer"]
        assert params["suite.name"] == "smoke" and params["repeats"] == "2"
        note = c.data.tags["mlflow.note.content"]
        assert "simulated LLM cost $" in note and "an estimate at `claude-" in note
        assert "nothing was spent" in note


def test_baseline_and_regress_show_on_the_runs(readme):
    tmp, client, exp, parent, children, _ = readme
    suites = tmp / "suites"
    shutil.copytree(Path(__file__).parents[2] / "suites" / "smoke", suites / "smoke")
    job = next(c for c in children if c.data.tags["silas.variant"] == "scorer=weights")
    proc = _cli(tmp, "baseline", "promote", job.info.run_id, "--suite-dir", str(suites / "smoke"))
    assert proc.returncode == 0, proc.stderr  # a job run names its study and variant
    now = client.get_run(parent.info.run_id)
    assert now.info.run_name.endswith(" · baseline")
    assert now.data.tags["mlflow.note.content"].startswith(
        "**Baseline:** `scorer=weights` of this study is the current baseline of suite `smoke`")
    assert now.data.tags["silas.baseline_variant"] == "scorer=weights"
    note = client.get_experiment(exp.experiment_id).tags["mlflow.note.content"]
    sweep = f"sweep-{parent.data.tags['silas.sweep_id']}"  # the name opens with its verdicts
    assert note.startswith(f"Baseline of suite smoke: scorer=weights of {sweep} "
                           f"(run {parent.info.run_id[:8]}, ")  # the list shows this line
    assert f"#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}{RUNS_VIEW}" in note
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert "baseline.json" in artifacts  # the record, where MLflow users look

    sweep_id = parent.data.tags["silas.sweep_id"]
    _cli(tmp, "regress", sweep_id, "scorer=online", "--suite-dir", str(suites / "smoke"))
    checked = client.get_run(parent.info.run_id).data.tags
    verdict = checked["silas.regress"]
    head = checked["mlflow.note.content"].splitlines()[0]
    assert verdict in ("no_regression", "regression", "regression_not_ruled_out")
    words = verdict.replace("_", " ")  # the tag says what the description says
    assert head.startswith("**Regression check: " + (words if verdict == "no_regression"
                                                     else words.upper()) + "**")
    assert "`scorer=online` of study" in head and "against the baseline `scorer=weights`" in head
    _cli(tmp, "regress", sweep_id, "scorer=online", "--suite-dir", str(suites / "smoke"))  # again: replaces the first line
    again = client.get_run(parent.info.run_id).data.tags["mlflow.note.content"]
    assert again.count("**Regression check:") == 1 and again.count("**Baseline:**") == 1


def test_links_follow_the_tracking_server_and_the_note_keeps_user_text():
    from silas_exp.tracking.payload import experiment_note, ui_command, ui_link

    assert ui_link("http://mlflow.team:8080/", "3", "abc") == \
        f"http://mlflow.team:8080/#/experiments/3/runs/abc{RUNS_VIEW}"
    assert ui_command("http://mlflow.team:8080") is None
    note = experiment_note("3", {"silas.baseline.smoke": "abcdef123456"}, "my own notes",
                           {"abcdef123456": "weights r1"})
    assert note.startswith("Baseline of suite smoke: weights r1 (run abcdef12, ")
    assert note.endswith(")\n\nmy own notes")
    # the lists show it unrendered, cut after a few words: plain words before any link and no
    # HTML; the header shows its first line: one line for one suite, the runs view at its end
    own = note.partition("\n\n")[0]
    assert "\n" not in own and "<" not in own and own.index("](") > 45
    assert own.endswith(f"[Runs view](#/experiments/3/runs{RUNS_VIEW})")
    older = ("No baseline promoted yet (silas-exp baseline promote RUN).  \n[Open the runs view]"
             "(#/experiments/3/runs): the plain experiment page opens MLflow's GenAI view.\n"
             "<!-- silas_exp -->\n\nmy own notes")  # as descriptions were once written
    assert experiment_note("3", {}, older) == experiment_note("3", {}, "my own notes")
    again = experiment_note("3", {}, note)
    assert again.startswith("No baseline promoted yet") and again.endswith("\n\nmy own notes")
    history = [{"action": "promote", "run_id": "abcdef123456"},
               {"action": "demote", "run_id": "abcdef123456", "demoted_at": "2026-11-27T03:00:00",
                "by": "ada", "reason": "the judge changed"}]
    demoted = experiment_note("3", {"silas.baseline.smoke.history": json.dumps(history)}, note)
    assert demoted.startswith("No baseline of suite smoke: run abcdef12 was demoted 2026-11-27 by "
                              "ada (the judge changed)")
    assert demoted.endswith("\n\nmy own notes")


def test_an_older_description_is_rewritten_at_the_next_sweep(tmp_path):
    from silas_exp.tracking.store import NOTE, MlflowStore

    store = MlflowStore(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = store.ensure_experiment("silas-smoke")
    store.set_experiment_tag(exp, NOTE, "No baseline promoted yet (silas-exp baseline promote "
                             "RUN).  \n[Open the runs view](#/x): the plain experiment page opens "
                             "MLflow's GenAI view.\n<!-- silas_exp -->\n\nmy own notes")
    assert store.ensure_experiment("silas-smoke") == exp  # what a sweep does first
    note = store.experiment_tags(exp)[NOTE]
    assert "<!--" not in note and note.endswith("\n\nmy own notes")
    assert note.startswith("No baseline promoted yet (silas-exp baseline promote RUN). [Runs view](")
