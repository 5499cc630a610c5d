"""Benches keep working: each script with --quick runs in CI and writes finite
figures. The figures themselves are never asserted against a time."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from ..conftest import REPO


def _finite(value) -> bool:
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


@pytest.mark.parametrize("script,name,keys", [
    ("bench_replay.py", "replay", {"turns", "seconds", "turns_per_s"}),
    ("bench_verdict.py", "verdict", {"sims", "scenarios"}),
    ("bench_coverage.py", "coverage", {"cells", "end_to_end", "flagged_cells", "zero_width"}),
    ("bench_verdict_e2e.py", "verdict_e2e", {"trials", "scenarios", "replay_seconds"}),
    ("bench_regress.py", "regress", {"cases", "seeds", "scenarios", "replay_seconds"}),
    ("bench_decide.py", "decide", {"seeds", "decisive", "empty_multirun_s", "max_wall_over_empty"}),
    ("bench_adaptive.py", "adaptive", {"sims", "scenarios"}),
    ("bench_cv.py", "cv", {"simulation", "replays", "seconds"}),
    ("bench_scale.py", "scale", {"runs", "peak_rss_mib", "cpu_per_case_ratio"}),
    ("bench_llm.py", "llm", {"throughput", "throughput_jitter", "cache", "job"}),
    ("bench_sweep.py", "sweep", {"none", "mlflow", "tracking_overhead", "same_verdicts"}),
    ("bench_launchers.py", "launchers-quick", {"basic", "silas", "joblib", "speedup_silas"}),
    ("bench_resume.py", "resume", {"command", "modes", "identical"}),
    ("bench_import.py", "import", {"runs", "median_mb_per_s", "large_over_small_rate"}),
    ("bench_preflight.py", "preflight", {"command", "runs", "median_cpu_s", "median_wall_s"}),
    ("bench_plan.py", "plan", {"studies", "rows", "inside_range"}),
])
def test_bench_quick_run(tmp_path, script, name, keys):
    env = {**os.environ, "SILAS_BENCH_RESULTS": str(tmp_path), "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / script), "--quick"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / f"{name}.json").read_text())
    assert keys <= set(result) and _finite(result)


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs git and a clone of the repository")
def test_first_run_bench_runs_a_fresh_clone_twice(tmp_path):
    """--quick clones HEAD, runs a small sweep in the clone twice with an empty
    HOME, and reports first / second."""
    env = {**os.environ, "SILAS_BENCH_RESULTS": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_first_run.py"), "--quick"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "first_run.json").read_text())
    assert set(result["trees"]) == {"this"} and _finite(result)
    [pair] = result["pairs"]
    assert pair["this"]["first"]["jobs"] == pair["this"]["second"]["jobs"] == 2
    assert result["wall_ratio"] == pair["this"]["wall_ratio"] > 0


def test_replay_breakdown_accounts_for_every_part(tmp_path):
    """--breakdown splits each workload's timed pass into parts that add up to it,
    none negative (each part is net of the parts timed inside it); two-tier
    eviction alone never reaches the main model, the feedback loop does."""
    env = {**os.environ, "SILAS_BENCH_RESULTS": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_replay.py"), "--quick",
                           "--breakdown"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "replay.json").read_text())
    assert result["headline"] == "eviction"
    assert result["turns_per_s"] == result["workloads"]["eviction"]["turns_per_s"]
    for workload in ("eviction", "feedback-loop"):
        parts = result["workloads"][workload]["us_per_turn_by_part"]
        assert {"tier 1", "tier 2 (own work)", "tier 2: scorer", "tier 2: keep-backs",
                "store writes", "garbage collection"} <= set(parts)
        assert all(us > -1.0 for us in parts.values()), parts
        assert parts["tier 1"] > 0 and parts["tier 2: scorer"] > 0
    assert result["workloads"]["eviction"]["us_per_turn_by_part"]["tier 2: keep-backs"] == 0
    # the store's one flush at close, with nothing to write: under a timer call's cost
    assert result["workloads"]["eviction"]["us_per_turn_by_part"]["store writes"] < 1.0
    assert result["workloads"]["feedback-loop"]["us_per_turn_by_part"]["tier 2: keep-backs"] > 0


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.timeout(900)  # four runs under callgrind: 298 s at load 1, over 300 s under load
def test_replay_counts_instructions_per_turn(tmp_path):
    """--instructions runs the workload under callgrind and reports a warm pass's
    instructions per turn (a replay turn takes hundreds of thousands)."""
    env = {**os.environ, "SILAS_BENCH_RESULTS": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_replay.py"), "--quick",
                           "--instructions"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=880)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workloads = json.loads((tmp_path / "replay.json").read_text())["workloads"]
    counts = {name: figures["instructions_per_turn"] for name, figures in workloads.items()}
    assert all(1e4 < count < 1e8 for count in counts.values()), counts
    # the feedback loop does everything eviction alone does, and keep-backs on top
    assert counts["feedback-loop"] > counts["eviction"], counts


def test_replay_with_the_prompt_scorer_calls_the_simulated_small_model(tmp_path):
    """--scorer prompt replays what a prompt job does: the scorer's own model
    call at every Tier-2 call, which the control's replay never makes; the
    keep-backs call the main model in the feedback loop only."""
    env = {**os.environ, "SILAS_BENCH_RESULTS": str(tmp_path)}
    calls = {}
    for scorer in ("heuristic", "prompt"):
        proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_replay.py"), "--quick",
                               "--scorer", scorer], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads((tmp_path / "replay.json").read_text())
        assert result["scorer"] == scorer and _finite(result)
        calls[scorer] = {w: f["llm_calls_per_pass"] for w, f in result["workloads"].items()}
    assert calls["heuristic"]["eviction"] == {}
    assert set(calls["heuristic"]["feedback-loop"]) == {"keepback"}
    assert calls["prompt"]["eviction"]["scorer"] > 0 and "keepback" not in calls["prompt"]["eviction"]
    assert calls["prompt"]["feedback-loop"]["scorer"] > 0
    assert calls["prompt"]["feedback-loop"]["keepback"] > 0


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs git and a clone of the repository")
def test_replay_against_a_commit_runs_both_trees_paired(tmp_path):
    """--against REV replays the same workload on this tree and on REV's, each
    run in a process of its own with the tree's code, in alternating order."""
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    env = {**os.environ, "SILAS_BENCH_RESULTS": str(tmp_path)}
    cmd = [sys.executable, str(REPO / "bench" / "bench_replay.py"), "--quick", "--workload",
           "feedback-loop", "--pairs", "2"]
    proc = subprocess.run([*cmd, "--against", "HEAD"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "replay_against.json").read_text())
    assert result["commit"] == head and _finite(result)
    figures = result["workloads"]["feedback-loop"]
    assert [list(p) for p in figures["pairs"]] == [["reference", "this", "ratio"],
                                                    ["this", "reference", "ratio"]]
    assert all(p["reference"] > 0 and p["ratio"] == p["this"] / p["reference"]
               for p in figures["pairs"])
    # a revision the repository does not have: named, with what to give instead
    proc = subprocess.run([*cmd, "--against", "no-such-rev"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "--against no-such-rev: no such commit" in proc.stderr
