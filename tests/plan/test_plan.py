"""The plan of a study end to end: `silas-exp plan` makes no model call, a
study on a real model (the local Messages API server) prints its plan before
its first call, refuses to start over `llm.max_usd`, and records plan against
actual on its parent run; a plan whose real-model history says the model is
far from the simulator widens its range."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from silas_exp.analysis.planned import PLAN_TABLE, Plan
from tests.fakes.messages_server import API_KEY, FakeMessagesServer

from ..conftest import REPO, isolated_overrides

SMALL = ["suite.max_cases=12", "cases_per_block=6", "plan.worlds=6"]


def _env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HYDRA_"))}
    return {**env, "MLFLOW_DISABLE_TELEMETRY": "true", "SILAS_EXP_ROOT": str(tmp),
            "ANTHROPIC_API_KEY": API_KEY, "PYTHONPATH": str(REPO),
            "SILAS_FAILING_CALLS": str(tmp / "calls.txt")}


def test_the_failing_backend_counts_a_call(tmp_path, monkeypatch):
    monkeypatch.setenv("SILAS_FAILING_CALLS", str(tmp_path / "calls.txt"))
    sys.path.insert(0, str(REPO / "bench"))
    import _failing_backend as failing

    from silas_exp.llm import LLMRequest, Message

    monkeypatch.setattr(failing, "COUNTER", tmp_path / "calls.txt")
    with pytest.raises(AssertionError):
        failing.FailingBackend().answer(LLMRequest(task="keepback", model="m",
                                                   messages=(Message("user", "x"),)), "ns")
    assert (tmp_path / "calls.txt").read_text() == "keepback\n"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_plan_makes_no_model_call_and_says_where_each_figure_came_from(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "_failing_backend.py"), "plan",
         "--out", str(tmp_path / "plan.json"), "-m", "scorer=weights,online",
         "model=claude-haiku-4-5", "model.backend=fails", *SMALL,
         f"paths.suites={REPO / 'suites'}", f"paths.cache={tmp_path / 'cache'}"],
        cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "backend calls: 0" in out
    assert out.index("Plan of") < out.index("whole study:") < out.index("where the figures")
    assert "simulated studies, each through the study's own looks" in out
    assert "assumed: plan.departure=[0, 0.3]" in out
    plan = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    assert [v.variant for v in plan.variants] == ["scorer=weights", "scorer=online"]
    assert plan.usd.low <= plan.usd.median <= plan.usd.high and plan.usd.median > 0
    assert plan.case_runs.high <= 3 * 12  # three arms, the pool's 12 cases at most


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    with FakeMessagesServer(latency_s=0.002) as srv:
        yield srv


def _study(tmp, server, *extra):
    args = ["-m", "scorer=heuristic,weights", "model=claude-haiku-4-5",
            f"llm.base_url={server.base_url}", *SMALL, *extra, *isolated_overrides(tmp)]
    return subprocess.run([sys.executable, "-m", "silas_exp", *args], cwd=REPO, env=_env(tmp),
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_cap_below_the_plans_upper_bound_refuses_before_any_call(tmp_path, server):
    proc = _study(tmp_path, server, "llm.max_usd=0.01")
    assert proc.returncode == 2, proc.stderr[-3000:]
    [paragraph] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "llm.max_usd=0.01 is below this study's planned cost" in paragraph
    assert "nothing was paid" in paragraph and "silas-exp plan" in paragraph
    assert server.message_requests == 0
    assert not list((tmp_path / "multirun").glob("*/result.json"))


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a plan and a study against the server: minutes on a busy machine
def test_a_study_prints_its_plan_first_and_records_plan_against_actual(tmp_path, server):
    proc = _study(tmp_path, server, "plan.answer_s=0.002")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.index("Plan of") < out.index("whole study:") < out.index("[job ")
    assert "Plan against actual" in out.split("[job ")[-1]
    sweep = tmp_path / "multirun"
    assert Plan.read(sweep) is not None
    from silas_exp.tracking.reader import Reader

    reader = Reader(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    runs = reader.store.search_runs([e.experiment_id for e in reader.experiments()])
    [parent] = [r for r in runs if r.data.tags.get("silas.kind") == "sweep"]
    assert "**Plan against actual**" in parent.data.tags["mlflow.note.content"]
    table = json.loads(reader.artifact_text(parent.info.run_id, PLAN_TABLE))
    rows = table["data"] if "data" in table else table
    assert "dollars" in json.dumps(rows) and "wall minutes" in json.dumps(rows)
    assert reader.artifact_text(parent.info.run_id, "plan.json")


def _baseline(tmp: Path, share: float) -> Path:
    """A suite folder whose promoted baseline a real model made: the departing
    model (in process) at ``share``, on the plan's own cases and seeds."""
    from silas_exp.config import compose_config
    from silas_exp.run.job import make_job, run_job
    from silas_exp.schema.baseline import BaselineJob, BaselineRecord
    from tests.fakes.departing import register

    suites = tmp / f"suites-{share}"
    (suites / "default").mkdir(parents=True)
    for name in ("suite.json", "sensitivity.json"):
        shutil.copy(REPO / "suites" / "default" / name, suites / "default" / name)
    design = ["model=claude-haiku-4-5", "suite.max_cases=16", "cases_per_block=8", "seed=0"]
    jobs = []
    for block in range(2):
        cfg = compose_config(["scorer=heuristic", *design, f"model.backend={register(share)}",
                              f"block={block}", f"paths.suites={suites}",
                              f"paths.cache={tmp / 'cache'}", "tracking=none"])
        job = make_job(cfg, "scorer=heuristic")
        outcome = run_job(cfg, job, tmp / f"baseline-{share}-{block}")
        jobs.append(BaselineJob(repeat=0, block=block, seed=job.seed,
                                results=list(outcome.results())))
    record = BaselineRecord(suite="default", suite_version="3.0.0", variant="scorer=heuristic",
                            overrides=["scorer=heuristic"], design=design, seed=0,
                            cases_per_block=8, simulated=False, source_run_id="r" * 32,
                            jobs=jobs)
    (suites / "default" / "baseline.json").write_text(record.model_dump_json())
    return suites


@pytest.mark.slow
@pytest.mark.timeout(1800)  # two baselines replayed and two plans
def test_a_plan_far_from_its_real_models_history_widens_its_range(tmp_path):
    """The same study planned twice: once with a baseline the simulated model's
    own answers made (through a real-model backend), once with one from a
    model that departs from them in every decision. The second plan measures
    the distance and its ranges widen; the first stays as narrow as a plan
    that knows its model is the simulator's twin."""
    from silas_exp.plan.build import build_plan
    from tests.fakes.departing import register_http

    backend = register_http()
    plans = {}
    for share in (0.0, 1.0):
        suites = _baseline(tmp_path, share)
        plans[share] = build_plan(["-m", "scorer=weights,online", "model=claude-haiku-4-5",
                                   f"model.backend={backend}", "suite.max_cases=16",
                                   "cases_per_block=8", "seed=0", "plan.worlds=24",
                                   f"paths.suites={suites}", f"paths.cache={tmp_path / 'cache'}"],
                                  workers=2)
    near, far = plans[0.0], plans[1.0]
    assert "measured: the promoted baseline scorer=heuristic" in near.sources[0]
    assert near.departure[1] <= 0.15 and far.departure[0] >= 0.5, (near.departure, far.departure)

    def width(p: Plan) -> float:
        return (p.usd.high - p.usd.low) / p.usd.median

    assert width(far) > 2 * width(near), (width(near), width(far))
    assert far.case_runs.high - far.case_runs.low >= near.case_runs.high - near.case_runs.low


def test_a_sweep_of_one_configuration_carries_no_plan_and_is_not_refused(tmp_path):
    """A real-model multirun of one configuration has no control and nothing to
    decide: it runs without a plan (even under llm.max_usd) instead of failing."""
    from types import SimpleNamespace

    from silas_exp.plan.carry import carry_plan

    cfg = SimpleNamespace(plan=SimpleNamespace(carry=True),
                          llm=SimpleNamespace(backend="anthropic", max_usd=0.01))
    said: list[str] = []
    plan = carry_plan(cfg, ["scorer=prompt", "model=claude-haiku-4-5", "suite=smoke"], tmp_path,
                      say=said.append)
    assert plan is None and Plan.read(tmp_path) is None
    assert said == ["Plan: none, the sweep runs one configuration (no control, nothing to decide)"]
