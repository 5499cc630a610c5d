"""Compression probes: generator, rubric, offline and model judge, strategies, tracking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from silas_exp.config import validate
from silas_exp.data.probe_sessions import build_probe_suite
from silas_exp.probes.judge import JudgeSettings, build_judge, judge_request, offline_grade
from silas_exp.probes.rubric import dimension_scores, overall_score
from silas_exp.probes.schema import ProbeSpec
from silas_exp.run.job import JobSpec, run_job
from tests.conftest import REPO

PROBE = ProbeSpec(probe_id="p", type="artifact", cut=0, question="Which files?",
                  expected=["created:src/a.py", "modified:src/b.py|adds retries", "examined:setup.cfg"])


def test_shipped_probe_set_is_what_the_generator_writes():
    suite = build_probe_suite()
    assert suite == build_probe_suite()  # deterministic
    for case in suite.cases:
        shipped = json.loads((REPO / "probes" / "default" / "cases" / f"{case.case_id}.json").read_text())
        assert shipped == case.model_dump(mode="json")


def test_rubric_aggregates_criteria_into_dimensions_then_overall():
    scores = {"accuracy_factual": 5, "accuracy_technical": 3, "artifact_files_created": 2,
              "instruction_format": 4}
    assert dimension_scores(scores) == {"accuracy": 4.0, "artifact_trail": 2.0, "instruction_following": 4.0}
    assert overall_score(scores) == pytest.approx((4 + 2 + 4) / 3)


def test_offline_judge_by_hand():
    perfect = offline_grade(PROBE, "- created: src/a.py\n- modified: src/b.py | adds retries\n"
                                   "- examined: setup.cfg")
    assert set(perfect.scores.values()) == {5.0}
    # modified file without its change: half credit on the modified-files criterion (5*0.5 -> 2)
    partial = offline_grade(PROBE, "- created: src/a.py\n- modified: src/b.py\n- examined: setup.cfg")
    assert partial.scores["artifact_files_modified"] == 2.0
    assert partial.scores["artifact_files_created"] == 5.0
    assert partial.scores["completeness_depth"] == 4.0  # (3 + 2) / 6 * 5 = 4.17 -> 4
    # an invented file lowers accuracy: 1 of 2 stated is right
    invented = offline_grade(PROBE, "- created: src/a.py\n- created: src/zzz.py\nfree text")
    assert invented.scores["accuracy_factual"] == 2.0  # round(2.5) -> 2
    assert invented.scores["instruction_format"] == 3.0  # 2 of 3 lines in format
    nothing = offline_grade(PROBE, "")
    assert nothing.scores["accuracy_factual"] == 0.0 and nothing.scores["artifact_files_created"] == 0.0


def _job(compose, tmp_path: Path, eviction: str, repeat: int, *extra: str):
    cfg = validate(dict(compose("suite=probes", f"eviction={eviction}", "tracking=none",
                                f"repeat={repeat}", "repeats=3", *extra)))
    from silas_exp.config import job_seed

    job = JobSpec(eviction, repeat, job_seed(cfg.seed, repeat))
    return run_job(cfg, job, tmp_path / f"{eviction}-{repeat}")


@pytest.mark.parametrize("repeat", [0, 1, 2])
def test_strategies_rank_as_documented_over_seeds(compose, tmp_path, repeat):
    m = {e: _job(compose, tmp_path, e, repeat).metrics for e in ("keep_all", "truncate", "anchored", "opaque")}
    assert m["keep_all"]["probe.overall"] > m["truncate"]["probe.overall"] + 1.0
    for key in ("probe.dim.artifact_trail", "probe.type.recall"):
        assert m["anchored"][key] >= m["opaque"][key], key
    assert m["anchored"]["probe.compression_ratio"] > 3 and m["keep_all"]["probe.compression_ratio"] == 1.0


def test_simulated_model_judge_repeats_show_variance_and_stay_blind(compose, tmp_path):
    out = _job(compose, tmp_path, "anchored", 0, "judge=llm", "judge.repeats=3", "suite.max_cases=2")
    assert out.metrics["probe.graded"] == 16 and out.metrics["probe.judge_errors"] == 0
    assert any(k.startswith("judge.variance.") and v > 0 for k, v in out.metrics.items())
    rows = json.loads((tmp_path / "anchored-0" / "probes.json").read_text())
    request = judge_request(ProbeSpec.model_validate({k: rows[0][k] for k in ("probe_id", "type", "question")}
                                                     | {"cut": 0, "expected": ["todo:x"]}), "a", "m")
    assert "anchored" not in request.messages[0].content + (request.system or "")


def test_human_labels_give_kappa_and_tag_low_agreement(compose, tmp_path):
    first = _job(compose, tmp_path, "masking", 0, "suite.max_cases=2")
    rows = json.loads((tmp_path / "masking-0" / "probes.json").read_text())
    same = [{"probe_id": r["probe_id"], "criterion_id": c, "score": s}
            for r in rows for c, s in r["scores"].items()]
    flipped = [{**x, "score": 5 - x["score"]} for x in same]
    for name, labels, low in (("same", same, 0.0), ("flipped", flipped, 1.0)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(labels))
        out = _job(compose, tmp_path / name, "masking", 0, "suite.max_cases=2",
                   f"judge.human_labels={path}")
        assert out.metrics["judge.low_agreement"] == low, name
        if low == 0.0:
            assert all(v == pytest.approx(1.0) for k, v in out.metrics.items() if k.startswith("judge.kappa."))
    assert first.metrics["probe.graded"] > 0


def test_claude_judge_malformed_grading_is_retried_once_then_an_error(compose, tmp_path, monkeypatch):
    from silas_exp.llm import LLMSettings, build_client
    from tests.fakes.messages_server import API_KEY, FakeMessagesServer

    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    with FakeMessagesServer() as srv:  # its default judge answer lists no criteria
        settings = LLMSettings(backend="anthropic", base_url=srv.base_url, max_retry_wait_s=0.01)
        with build_client(settings, seed=0, cache_dir=None) as llm:
            judge = build_judge(JudgeSettings(kind="llm"), llm, "claude-haiku-4-5", "ns")
            from silas_exp.errors import LLMError

            with pytest.raises(LLMError) as err:
                judge.grade(PROBE, "- created: src/a.py")
        assert err.value.reason == "judge_incomplete" and srv.message_requests == 2
        system = srv.bodies[0]["system"][0]  # the rubric goes once, as a cached system block
        assert "Criteria:" in system["text"] and system["cache_control"] == {"type": "ephemeral"}
        assert "Criteria:" not in json.dumps(srv.bodies[0]["messages"])


def test_probe_scores_and_table_read_back_from_mlflow(cli, tmp_path):
    proc = cli("-m", "suite=probes", "eviction=anchored,opaque", "repeats=1", "suite.max_cases=2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("silas-probes")
    runs = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("silas.kind") != "sweep"]
    # the sweep ran its control (the default strategy) itself: it was not listed
    assert {r.data.tags["silas.eviction"] for r in runs} == {"anchored", "opaque", "two_tier"}
    for run in runs:
        assert {f"probe.dim.{d}" for d in ("accuracy", "artifact_trail", "continuity")} <= set(run.data.metrics)
        table = json.loads(Path(client.download_artifacts(run.info.run_id, "probes.json", str(tmp_path))).read_text())
        assert set(table["columns"]) >= {"probe_id", "type", "answer", "overall", "reasoning"}
        assert len(table["data"]) == 16
