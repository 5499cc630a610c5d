"""The promoted baseline: its record, its atomic promotion (killed with -9 half-way,
the previous baseline stays whole), and its configuration as a sweep's control arm."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from silas_exp.analysis.baseline import ControlArm, control_arm, with_control_arm
from silas_exp.baselines import read_baseline
from silas_exp.records import SweepManifest, read_manifest, write_manifest
from silas_exp.schema.baseline import BaselineJob, BaselineRecord, config_overrides
from silas_exp.schema.benchmark import BenchmarkResult

from ..conftest import REPO


def _record(variant: str, cases: int = 3, run_id: str = "a" * 32) -> BaselineRecord:
    results = [BenchmarkResult(case_id=f"case-{i:03d}", status="pass", latency_ms=10.0,
                               token_cost=5, metrics={"context.retrieval_relevance": 0.8})
               for i in range(cases)]
    return BaselineRecord(suite="s", suite_version="1.0.0", variant=variant,
                          overrides=variant.split(","), seed=0, cases_per_block=40,
                          source_run_id=run_id, sweep_id="abc", experiment_id="1",
                          jobs=[BaselineJob(repeat=0, block=0, seed=7, run_id="j" * 32,
                                            results=results)])


def test_configuration_is_the_overrides_without_the_study_design():
    job = ["scorer=weights", "repeat=2", "block=3", "seed=5", "suite.max_cases=60",
           "cases_per_block=20", "paths.root=/x", "tracking=none", "model=claude-haiku-4-5",
           "scorer.weights.zone.chronicle=0.5", "eviction=anchored"]
    assert config_overrides(job) == ["eviction=anchored", "scorer.weights.zone.chronicle=0.5",
                                     "scorer=weights"]


def test_record_round_trip_and_its_arm(tmp_path):
    record = _record("scorer=weights")
    (tmp_path / "baseline.json").write_text(record.model_dump_json())
    back = read_baseline(tmp_path)
    assert back == record and back.cases() == {"case-000", "case-001", "case-002"}
    arm = control_arm(back)
    assert arm.name == "scorer=weights" and arm.overrides == ("scorer=weights",)
    assert "promoted baseline" in arm.reason and "run aaaaaaaa" in arm.reason
    assert ControlArm.from_tags(arm.tags()) == arm
    noted = control_arm(back, "today's code differs from the baseline's revision (abc)")
    assert "as every variant; today's code differs from the baseline's revision (abc); " \
           "analysis.control=" in noted.reason
    linked = arm.linked(f"Control: x, {arm.reason}")
    assert f"[run aaaaaaaa](#/experiments/1/runs/{'a' * 32}?workflowType=machine_learning)" in linked
    assert read_baseline(tmp_path / "nowhere") is None


def _manifest(folder: Path, swept: list[str]) -> None:
    write_manifest(folder, SweepManifest(sweep_id="s1", experiment_name="e", swept_keys=swept))


def test_control_arm_joins_the_jobs_once_per_study_part(tmp_path):
    _manifest(tmp_path, ["repeat", "scorer"])
    arm = control_arm(_record("scorer=weights"))
    jobs = [["scorer=prompt", "repeat=0", "suite.max_cases=60"],
            ["scorer=online", "repeat=0", "suite.max_cases=60"],
            ["scorer=prompt", "repeat=1", "suite.max_cases=60"],
            ["scorer=online", "repeat=1", "suite.max_cases=60"]]
    out = with_control_arm(jobs, arm, tmp_path)
    added = out[len(jobs):]
    assert sorted(map(sorted, added)) == [["repeat=0", "scorer=weights", "suite.max_cases=60"],
                                          ["repeat=1", "scorer=weights", "suite.max_cases=60"]]
    # a listed variant equal to the baseline is the control arm: not a second arm
    listed = [["scorer=weights", "repeat=0"], ["scorer=heuristic", "repeat=0"]]
    assert with_control_arm(listed, arm, tmp_path) == listed  # heuristic stays a variant


def test_control_arm_with_settings_the_sweep_does_not_vary(tmp_path):
    """A baseline that sets a key the sweep fixes or leaves alone: that key
    becomes a swept key, so the arm's name and the variants' stay apart."""
    _manifest(tmp_path, ["repeat", "scorer"])
    arm = control_arm(_record("eviction=anchored,scorer=weights"))
    out = with_control_arm([["scorer=weights", "repeat=0"], ["scorer=prompt", "repeat=0"]], arm,
                           tmp_path)
    assert out[-1] == ["repeat=0", "eviction=anchored", "scorer=weights"]  # a third arm
    assert read_manifest(tmp_path).swept_keys == ["eviction", "repeat", "scorer"]


_FAKES = textwrap.dedent("""
    import sys, time
    from pathlib import Path

    from silas_exp.gate import promote
    from silas_exp.baselines import SuiteFolder, read_baseline
    from silas_exp.records import JobResult
    from silas_exp.schema.benchmark import BenchmarkResult, BenchmarkRun
    from silas_exp.schema.runs import LoggedRun

    suite_dir, where = Path(sys.argv[1]), sys.argv[2]
    calls = open(suite_dir / "backend_calls.txt", "a")

    class Log:
        \"\"\"A tracking backend's log of the gate that writes down what it is asked.\"\"\"
        def user(self): return "tester"
        def pointer(self, exp_id, suite): return "a" * 32
        def history(self, exp_id, suite): return []
        def promoted(self, record, run):
            calls.write("promoted\\n"); calls.flush()
            return {"action": "promote", "run_id": record.source_run_id, "variant": record.variant}
        def __getattr__(self, name):
            def call(*args, **kwargs):
                calls.write(name + "\\n"); calls.flush()
            return call
""")

_PROMOTE = _FAKES + textwrap.dedent("""
    results = [BenchmarkResult(case_id=f"case-{i:04d}", status="pass", latency_ms=1.0,
                               token_cost=1, actual_output="x" * 2000) for i in range(2000)]
    run = LoggedRun("n" * 32, "1", "weights r0", "FINISHED", 1,
                    {"silas.variant": "scorer=weights", "silas.suite": "s",
                     "silas.suite_version": "1.0.0", "silas.seed": "7"})

    class Reader:
        uri = "sqlite:///unused.db"
        def run(self, run_id): return run
        def job_result(self, run_id):
            return JobResult(variant="scorer=weights", repeat=0, status="finished",
                             run=BenchmarkRun(run_id="r", suite_id="s", started_at="2026-01-01T00:00:00",
                                              config_snapshot={}, results=results))
        def artifact_text(self, run_id, name): return None

    real = Path.write_bytes
    def write_bytes(self, data):  # the temporary file: half of it, or all of it, then stop
        if where == "mid-write":
            real(self, data[: len(data) // 2])
        else:
            real(self, data)
        if where != "none":
            print("stopped", flush=True)
            time.sleep(120)
        return len(data)
    Path.write_bytes = write_bytes
    study = promote.resolve(Reader(), "n" * 32, None)
    promote.promote(Reader(), Log(), study, SuiteFolder(suite_dir), "1.0.0")
    print("done", flush=True)
""")


@pytest.mark.parametrize("where", ["mid-write", "before-rename"])
def test_a_promotion_killed_half_way_leaves_the_previous_baseline_whole(tmp_path, where):
    (tmp_path / "suite.json").write_text(json.dumps({"version": "1.0.0"}))
    before = _record("scorer=heuristic").model_dump_json()
    (tmp_path / "baseline.json").write_text(before)
    _killed(subprocess.Popen([sys.executable, "-c", _PROMOTE, str(tmp_path), where], cwd=REPO,
                             stdout=subprocess.PIPE, text=True))
    assert (tmp_path / "baseline.json").read_text() == before  # untouched, whole, readable
    assert read_baseline(tmp_path).variant == "scorer=heuristic"
    calls = (tmp_path / "backend_calls.txt").read_text().split()
    assert calls == ["may_change_baseline", "attach_record"]  # the pointer names the old one
    assert not (tmp_path / "baseline_history.jsonl").exists()


def test_a_promotion_that_completes_replaces_it(tmp_path):
    (tmp_path / "suite.json").write_text(json.dumps({"version": "1.0.0"}))
    (tmp_path / "baseline.json").write_text(_record("scorer=heuristic").model_dump_json())
    proc = subprocess.run([sys.executable, "-c", _PROMOTE, str(tmp_path), "none"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr[-2000:]
    record = read_baseline(tmp_path)
    assert record.variant == "scorer=weights" and len(record.jobs[0].results) == 2000
    assert record.jobs[0].seed == 7 and record.overrides == ["scorer=weights"]
    calls = (tmp_path / "backend_calls.txt").read_text().split()
    assert calls == ["may_change_baseline", "attach_record", "promoted"]
    history = [json.loads(x) for x in (tmp_path / "baseline_history.jsonl").read_text().splitlines()]
    assert [h["action"] for h in history] == ["promote"] and history[0]["variant"] == "scorer=weights"
    assert not list(tmp_path.glob("*.tmp"))


_DEMOTE = _FAKES + textwrap.dedent("""
    class Reader:
        uri = "sqlite:///unused.db"
        def run(self, run_id):
            return LoggedRun(run_id, "1", "x", "FINISHED", 1,
                             {"silas.baseline_variant": "scorer=heuristic"})

    real = Path.unlink
    def unlink(self, missing_ok=False):  # stop just before, or just after, the removal
        if where == "before-unlink":
            print("stopped", flush=True); time.sleep(120)
        real(self, missing_ok=missing_ok)
        if where == "after-unlink":
            print("stopped", flush=True); time.sleep(120)
    Path.unlink = unlink
    promote.demote(Reader(), Log(), SuiteFolder(suite_dir), read_baseline(suite_dir),
                   "judge changed", suite="s", exp_id="1", pointed="a" * 32)
    print("done", flush=True)
""")


def _demote(tmp_path, where):
    return subprocess.Popen([sys.executable, "-c", _DEMOTE, str(tmp_path), where], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)


def _killed(proc) -> None:
    try:
        assert proc.stdout.readline().strip() == "stopped"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def _history(folder: Path) -> list[dict]:
    path = folder / "baseline_history.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_a_demotion_killed_before_its_commit_point_leaves_the_baseline_whole(tmp_path):
    before = _record("scorer=heuristic").model_dump_json()
    (tmp_path / "baseline.json").write_text(before)
    _killed(_demote(tmp_path, "before-unlink"))
    assert (tmp_path / "baseline.json").read_text() == before
    assert read_baseline(tmp_path).variant == "scorer=heuristic"
    calls = (tmp_path / "backend_calls.txt").read_text().split()
    assert calls == ["may_change_baseline"]  # nothing written yet
    assert _history(tmp_path) == []


def test_a_demotion_killed_after_it_is_demoted_and_demoting_again_finishes_it(tmp_path):
    (tmp_path / "baseline.json").write_text(_record("scorer=heuristic").model_dump_json())
    _killed(_demote(tmp_path, "after-unlink"))
    assert read_baseline(tmp_path) is None  # demoted: no half state
    assert "unpoint" not in (tmp_path / "backend_calls.txt").read_text()
    again = subprocess.run([sys.executable, "-c", _DEMOTE, str(tmp_path), "none"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout.strip() == "done", again.stderr[-2000:]
    calls = (tmp_path / "backend_calls.txt").read_text().split()
    assert calls[-2:] == ["demoted", "unpoint"]  # the pointer last
    [entry] = _history(tmp_path)
    assert entry["action"] == "demote" and entry["run_id"] == "a" * 32
    assert entry["reason"] == "judge changed" and entry["by"] and entry["demoted_at"]
    assert entry["variant"] == "scorer=heuristic"  # from the run's tags: the file was gone


def test_a_demotion_that_completes(tmp_path):
    (tmp_path / "baseline.json").write_text(_record("scorer=heuristic").model_dump_json())
    proc = subprocess.run([sys.executable, "-c", _DEMOTE, str(tmp_path), "none"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr[-2000:]
    assert not (tmp_path / "baseline.json").exists()
    [entry] = _history(tmp_path)
    assert entry["variant"] == "scorer=heuristic" and entry["overrides"] == ["scorer=heuristic"]
    assert entry["suite"] == "s" and entry["suite_version"] == "1.0.0"
    calls = (tmp_path / "backend_calls.txt").read_text().split()
    assert calls == ["may_change_baseline", "demoted", "unpoint"]


def test_a_study_named_without_its_variant_lists_the_verdicts_of_its_parent_run():
    from types import SimpleNamespace as NS

    from silas_exp.errors import AnalysisError
    from silas_exp.gate.promote import resolve
    from silas_exp.schema.runs import LoggedRun

    def run(tags):
        return LoggedRun("p" * 32, "1", "", "FINISHED", 1, tags)

    parent = run({"silas.kind": "sweep", "silas.sweep_id": "abc",
                  "silas.verdict.weights": "ship", "silas.verdict.prompt": "inconclusive"})
    children = [run({"silas.variant": v}) for v in
                ("scorer=heuristic", "scorer=weights", "scorer=prompt")]
    reader = NS(sweep_runs=lambda sweep_id: (parent, children))
    with pytest.raises(AnalysisError) as err:
        resolve(reader, "abc", None)
    text = str(err.value)
    assert "(verdicts: {'scorer=prompt': 'inconclusive', 'scorer=weights': 'ship'})" in text
    assert text.endswith("`silas-exp baseline promote abc scorer=weights`")
