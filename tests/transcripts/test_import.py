"""``silas-exp import`` end to end: real-format fixtures in, a suite folder
out that loads and sweeps; ground truth defined, Tier 2 exercised, the
opt-in required, provenance recorded, and bad probes refused at load."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from silas_exp.data.suites.loader import load_suite
from silas_exp.data.transcripts.suite import ImportSettings, write_suite
from silas_exp.errors import SuiteError
from silas_exp.records import read_job_result
from tests.transcripts.sessions import coding_session

FIX = Path(__file__).parent / "fixtures"


def silas_exp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "silas_exp.cli", *args], capture_output=True,
                          text=True, timeout=120)


def test_import_every_format_into_one_loadable_suite(tmp_path):
    out = tmp_path / "organic"
    r = silas_exp("import", *map(str, sorted(FIX.iterdir())), "--out", str(out), "--opt-in")
    assert r.returncode == 0, r.stderr
    loaded = load_suite(out)
    modes = {c.case_id: c.expected.mode for c in loaded.cases}
    assert modes["claude_code_session-replay"] == "metric_threshold"
    assert modes["claude_code_session-probes"] == "llm_judge"
    assert {c.source for c in loaded.cases} == {"organic"}
    assert loaded.suite.metadata["opt_in"].startswith("confirmed with --opt-in by ")
    report = json.loads((out / "import_report.json").read_text())
    cc = FIX / "claude_code_session.jsonl"
    assert {"file": "claude_code_session.jsonl", "format": "claude-code",
            "sha256": hashlib.sha256(cc.read_bytes()).hexdigest()} in report["sources"]
    by_id = {s["session_id"]: s for s in report["sessions"]}
    assert by_id["claude_code_session"]["pii"]["home_path"] >= 3  # /home/jane/... scrubbed
    assert by_id["httpkit__httpkit-42"]["quirks"]["reused_call_ids"] == 4
    assert by_id["httpkit-2"]["quirks"]["architect_repeats"] == 2
    text = "".join(p.read_text() for p in (out / "cases").iterdir())
    assert "/home/jane" not in text and "/home/<USER>/src/httpkit" in text
    assert "never over budget" in r.stdout  # tiny fixtures say so instead of pretending


def test_import_needs_opt_in_and_a_known_file(tmp_path):
    r = silas_exp("import", str(FIX / "openai_chat.jsonl"), "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "--opt-in" in r.stderr
    assert not (tmp_path / "x").exists()
    r = silas_exp("import", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "x"),
                  "--opt-in")
    assert r.returncode == 2 and "missing.jsonl: not a file" in r.stderr


def test_probe_fact_absent_from_the_session_is_refused(tmp_path):
    write_suite([("test", "s.jsonl", coding_session("s1"))], tmp_path / "s",
                ImportSettings(opt_in="yes"))
    case_file = tmp_path / "s" / "cases" / "s1-probes.json"
    case = json.loads(case_file.read_text())
    case["expected"]["value"]["probe_plan"]["probes"][0]["expected"][0] = "error:NeverSeenError: x"
    case_file.write_text(json.dumps(case))
    with pytest.raises(SuiteError, match=r"probes\[0\]\.expected\[0\]' is 'error:NeverSeenError"):
        load_suite(tmp_path / "s")


@pytest.fixture(scope="module")
def organic(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("organic") / "suite"
    sessions = [("test", f"s{i}.jsonl", coding_session(f"s{i}", 10 + 2 * (i % 8))) for i in range(24)]
    write_suite(sessions, out, ImportSettings(opt_in="yes"))
    return out


def _jobs(sweep: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in sweep.glob("*/result.json"):
        d = read_job_result(f).with_cases(f.parent).model_dump(mode="json")
        out.setdefault(d["variant"], []).append(d)
    return out


def test_scorer_sweep_on_imported_sessions_decides(organic, cli, tmp_path):
    r = cli("-m", f"suite.path={organic}", "suite.name=organic", "scorer=oracle,random",
            "repeats=2", "tracking=none")
    assert r.returncode == 0, r.stderr[-2000:]
    jobs = _jobs(tmp_path / "multirun")
    for variant in ("scorer=heuristic", "scorer=oracle", "scorer=random"):
        for job in jobs[variant]:
            replay = [c for c in job["run"]["results"] if c["case_id"].endswith("-replay")]
            assert replay and all(c["status"] != "error" for c in replay)
            assert all(math.isfinite(c["metrics"]["ir.ndcg_at_10"]) for c in replay)
            assert job["metrics"]["tier2.proposals"] > 0  # the budget puts Tier 2 to work
    ndcg = {v: sum(j["metrics"]["ir.ndcg_at_10"] for j in js) / len(js) for v, js in jobs.items()}
    assert ndcg["scorer=oracle"] > ndcg["scorer=random"] + 0.3
    assert "scorer=random: do not ship" in r.stdout


def test_compression_sweep_runs_probes_and_skips_replay(organic, cli, tmp_path):
    r = cli("-m", f"suite.path={organic}", "suite.name=organic", "eviction=anchored,truncate",
            "repeats=1", "tracking=none")
    assert r.returncode == 0, r.stderr[-2000:]
    jobs = _jobs(tmp_path / "multirun")
    overall = {}
    for variant in ("eviction=anchored", "eviction=truncate"):
        (job,) = jobs[variant]
        statuses = {c["case_id"]: c["status"] for c in job["run"]["results"]}
        assert all(s == "skipped" for k, s in statuses.items() if k.endswith("-replay"))
        assert all(s in ("pass", "fail") for k, s in statuses.items() if k.endswith("-probes"))
        overall[variant] = job["metrics"]["probe.overall"]
    # the summary carries the extracted facts: anchored recalls what truncate dropped
    assert overall["eviction=anchored"] > overall["eviction=truncate"] + 0.5
