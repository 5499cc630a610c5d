"""Tuning studies with a current Optuna (marker ``optuna``; ``.ci/run`` runs
them in an environment with the ``[optuna]`` extra): the direction comes from
the metric registry, ``repeat`` is never sampled, trials are child runs of one
study parent, and ``resume=true`` continues the study in the sweep folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from silas_exp.errors import ConfigError
from silas_exp.records import read_job_result

from ..conftest import REPO

if os.environ.get("SILAS_REQUIRE_OPTUNA"):  # .ci/run: fail, never skip, when it is missing
    import optuna
else:
    optuna = pytest.importorskip("optuna", minversion="4", reason="needs the [optuna] extra")
pytestmark = pytest.mark.optuna

SPACE_KEYS = {"scorer.base.zone.chronicle", "scorer.base.age_decay", "scorer.base.masked_penalty",
              "scorer.base.completed_penalty", "scorer.l2"}


def study(tmp_path: Path, *args: str, tracking: bool = False, suite: str = "smoke"
          ) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "silas_exp", "-m", "experiment=tune", f"suite={suite}",
           "repeats=2", *args, f"paths.root={tmp_path}", f"paths.suites={REPO / 'suites'}",
           f"hydra.sweep.dir={tmp_path / 'study'}"] + ([] if tracking else ["tracking=none"])
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def load(tmp_path: Path):
    from silas_exp.tune.study import STUDY_NAME, storage_url

    return optuna.load_study(study_name=STUDY_NAME, storage=storage_url(tmp_path / "study"))


def test_direction_comes_from_the_registry():
    from silas_exp.tune.study import directions

    assert directions(["context.retrieval_relevance"]) == ["maximize"]  # higher is better
    assert directions(["context.tokens_per_served_need", "context.retrieval_relevance"]) == [
        "minimize", "maximize"]
    with pytest.raises(ConfigError, match="no direction"):
        directions(["tier2.proposals"])
    with pytest.raises(ConfigError, match="not a declared metric"):
        directions(["context.made_up"])


def test_repeat_and_seed_are_never_dimensions():
    from silas_exp.tune.space import parse_space

    dims = parse_space({"scorer.l2": "tag(log,interval(1,100))", "prompt": "choice(default,x)"},
                       lambda key: key == "prompt", params={"repeat": "range(0,5)"})
    assert [d.key for d in dims] == ["scorer.l2", "prompt"]
    assert dims[0].distribution.log and dims[1].group
    assert dims[0].override(12.345678) == "++scorer.l2=12.35"
    for bad in ({"repeat": "range(0,5)"}, {"seed": "range(0,3)"}):
        with pytest.raises(ConfigError, match="never a search dimension"):
            parse_space(bad, lambda key: False)
    with pytest.raises(ConfigError, match="move them to"):
        parse_space({"scorer.l2": "interval(1,2)"}, lambda key: False,
                    params={"repeat": "range(0,5)", "scorer.l2": "1,2"})


def test_a_study_runs_every_repeat_in_every_trial_and_certifies(tmp_path):
    proc = study(tmp_path, "tune.n_trials=3", tracking=True)
    s = load(tmp_path)
    assert [d.name for d in s.directions] == ["MAXIMIZE"]  # context.retrieval_relevance
    done = [t for t in s.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 3 and done[0].user_attrs.get("reference")
    for t in done:
        assert set(t.params) == SPACE_KEYS  # repeat (in conf/config.yaml's params) never sampled
        results = [read_job_result(tmp_path / "study" / j) for j in t.user_attrs["jobs"]]
        assert sorted(r.repeat for r in results) == [0, 1]
        assert all("suite.split=train" in r.variant for r in results)
        mean = sum(r.metrics["context.retrieval_relevance"] for r in results) / 2
        assert t.value == pytest.approx(mean)
    record = json.loads((tmp_path / "study" / "tune.json").read_text())
    assert record["n_trials"] == 3 and record["certification"]["k"] == 1
    # one held-out case cannot decide: nothing ships, nothing is proposed
    assert record["certification"]["candidates"][0]["outcome"] == "inconclusive"
    assert not (tmp_path / "study" / "proposed").exists()
    split = json.loads((tmp_path / "study" / "split.json").read_text())
    assert len(split["train"]) == len(split["holdout"]) == 1
    assert "Tuning study:" in proc.stdout and "holdout verdict" in proc.stdout
    # trials are child runs of the study's one parent run, which holds Optuna's plots
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("silas-smoke").experiment_id])
    parents = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    assert len(parents) == 1
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert len(children) == 3 * 2 + 3 * 2  # trials × repeats, then control, untuned, best
    names = {a.path for a in client.list_artifacts(parents[0].info.run_id, "tune")}
    assert "tune/optimization_history.png" in names


def test_resume_continues_the_study(tmp_path):
    study(tmp_path, "tune.n_trials=2")
    s = load(tmp_path)
    first = [(t.number, t.params, t.value) for t in s.trials]
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "study").glob("[0-3]/result.json")}
    interrupted = s.ask(s.trials[1].distributions)  # a trial cut short: RUNNING in the storage
    study(tmp_path, "tune.n_trials=3", "resume=true")
    s = load(tmp_path)
    states = [t.state for t in s.trials]
    assert states[interrupted.number] == optuna.trial.TrialState.FAIL
    complete = [t for t in s.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == 3
    assert [(t.number, t.params, t.value) for t in complete[:2]] == first  # kept, not re-run
    assert complete[2].params == interrupted.params  # the interrupted trial ran again
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # their jobs were not re-run


def test_a_hopeless_trial_is_pruned_after_its_first_repeat(tmp_path, compose):
    """Real Optuna, a launch that records which jobs ran and gives each trial
    a relevance by its chronicle prior: the worst trials stop after repeat 0,
    the others run every repeat, and no two jobs share a folder."""
    from omegaconf import OmegaConf

    from silas_exp.config import validate
    from silas_exp.records import job_result, write_job_result
    from silas_exp.tune.driver import TuneLoop, settings_of
    from silas_exp.tune.study import open_study

    dcfg = compose("experiment=tune", "suite=smoke", "repeats=3")
    cfg = validate(OmegaConf.to_container(dcfg, resolve=True))
    raw = {**cfg.tune, "space": {"weights": {"scorer.base.zone.chronicle": "interval(0.0,1.0)"}},
           "n_startup_trials": 2, "batch": 3, "n_trials": 9}
    loop = TuneLoop(cfg, settings_of(raw, {"repeat": "range(0,3)"}), tmp_path, [], "weights",
                    lambda key: False, {})
    launched: list[tuple[int, list[str]]] = []

    def launch(batch, first):
        folders = []
        for i, job in enumerate(batch):
            launched.append((first + i, job))
            value = float(next(o for o in job if "chronicle" in o).rpartition("=")[2])
            folder = tmp_path / str(first + i)
            folder.mkdir()
            repeat = int(next(o for o in job if o.startswith("repeat=")).partition("=")[2])
            write_job_result(folder, job_result("v", repeat, None,
                                                {"context.retrieval_relevance": value}, "1", None))
            folders.append(folder)
        return folders

    s = open_study(tmp_path, loop.dirs, "random", 0, 2, resume=False)
    loop._search(s, launch)
    pruned = [t for t in s.trials if t.state == optuna.trial.TrialState.PRUNED]
    complete = [t for t in s.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert pruned and len(pruned) + len(complete) == 9
    assert all(len(t.user_attrs["jobs"]) == 1 for t in pruned)
    assert all(len(t.user_attrs["jobs"]) == 3 for t in complete)
    worst_kept = min(t.params["scorer.base.zone.chronicle"] for t in complete[2:])
    assert min(t.params["scorer.base.zone.chronicle"] for t in pruned) < worst_kept
    numbers = [n for n, _ in launched]
    assert len(numbers) == len(set(numbers)) == 3 * len(complete) + len(pruned)


def test_a_multi_objective_study_takes_each_direction_from_the_registry(tmp_path):
    study(tmp_path, "tune.n_trials=3",
          "tune.objectives=[context.retrieval_relevance,context.tokens_per_served_need]")
    s = load(tmp_path)
    assert [d.name for d in s.directions] == ["MAXIMIZE", "MINIMIZE"]
    assert (tmp_path / "study" / "tune" / "pareto_front.png").is_file()
    control = read_job_result(tmp_path / "study" / "1000000")
    assert control.variant == "scorer=heuristic,suite.split=holdout"  # a list is not swept
