"""Every transcript format end to end: one coding session written in each
format's real on-disk shape (:mod:`tests.transcripts.writers`) goes through
``silas-exp import --opt-in`` into one suite, then one sweep per axis runs
over all of them:

* ``scorer=heuristic,weights,prompt,online`` (replay and probe cases): no
  headline metric is NaN, and Tier 2 proposes on every format's replay case;
* ``eviction=keep_all,truncate,anchored,regenerative,opaque`` (probe cases):
  ``probe.overall`` is a number for every strategy and anchored beats
  truncate on every format;
* every probe's expected facts are shown by an item before its compression.

A second, shorter Claude Code session is imported last so that it is the one
whose replay case calibrates the calibrated scorers: every format's own replay
case is evaluated. The per-format table (items, turns, tool calls, references,
probes, PII, ``probe.overall`` per strategy) is printed by the compression
test (``pytest -s`` shows it).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from silas_exp.analysis.summary import HEADLINE
from silas_exp.data.suites.loader import CALIBRATION_TAG, load_suite
from silas_exp.facts.fact import Fact, norm
from silas_exp.records import read_job_result
from tests.transcripts.script import coding_script
from tests.transcripts.writers import FORMATS, write

SCORERS = ("heuristic", "weights", "prompt", "online")
STRATEGIES = ("keep_all", "truncate", "anchored", "regenerative", "opaque")
REPLAY_HEADLINE = [k for k in HEADLINE if k.split(".")[0] in ("context", "ir", "feedback")]


@dataclass
class Imported:
    out: Path
    sessions: dict[str, dict[str, Any]]  # format -> its session's import report
    cases: dict[str, dict[str, Any]]  # case id -> case JSON
    calibration: str  # the session whose replay case calibrates (the extra one)


@pytest.fixture(scope="module")
def organic(tmp_path_factory) -> Imported:
    tmp = tmp_path_factory.mktemp("formats")
    script = coding_script("httpkit", rounds=10)
    paths = [write(fmt, script, tmp / "transcripts") for fmt in FORMATS]
    paths.append(write("claude-code", coding_script("warmup", rounds=6), tmp / "calibration"))
    out = tmp / "suite"
    r = subprocess.run([sys.executable, "-m", "silas_exp.cli", "import", *map(str, paths),
                        "--out", str(out), "--opt-in"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads((out / "import_report.json").read_text())
    assert [s["format"] for s in report["sessions"]] == [*FORMATS, "claude-code"]
    cases = {p.stem: json.loads(p.read_text()) for p in (out / "cases").glob("*.json")}
    return Imported(out, {s["format"]: s for s in report["sessions"][:len(FORMATS)]}, cases,
                    report["sessions"][-1]["session_id"])


def _case(organic: Imported, fmt: str, kind: str) -> dict[str, Any]:
    return organic.cases[f"{organic.sessions[fmt]['session_id']}-{kind}"]


def _results(sweep: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """variant -> case id -> per-case result, of a sweep run once per variant."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for f in sweep.glob("*/result.json"):
        job = read_job_result(f)
        assert job.finished, job.error
        assert job.variant not in out, "one repeat per variant"
        out[job.variant] = {c.case_id: c.model_dump(mode="json") for c in job.cases(f.parent)}
    return out


def _finite(case: dict[str, Any], keys: list[str]) -> None:
    bad = {k: case["metrics"].get(k) for k in keys
           if not math.isfinite(case["metrics"].get(k, math.nan))}
    assert not bad, f"{case['case_id']}: {bad}"


def test_every_format_imports_with_truth_probes_and_pressure(organic):
    loaded = load_suite(organic.out)  # the loader checks every probe fact too
    calibrating = [c.case_id for c in loaded.cases if CALIBRATION_TAG in c.tags]
    assert calibrating == [f"{organic.calibration}-replay"]  # every format's own is evaluated
    for fmt, s in organic.sessions.items():
        assert s["over_budget"], f"{fmt}: Tier 2 never runs"
        assert s["references"] > 0 and s["probes"] > 0, fmt
        assert s["cases"] == [f"{s['session_id']}-replay", f"{s['session_id']}-probes"], fmt
        assert s["references_by_grade"].get("2", 0) + s["references_by_grade"].get("3", 0), fmt
    quirks = {fmt: s["quirks"] for fmt, s in organic.sessions.items()}
    assert quirks["claude-code"]["merged_records"] > 0  # one API message over several records
    assert quirks["aider"]["multiline_output_lines"] > 0  # the failed edit's report
    assert quirks["swe-agent"]["demonstration_messages_dropped"] == 1
    aider_errors = {f for it in _case(organic, "aider", "replay")["input"]["context"]
                    for f in it.get("facts", []) if f.startswith("error:")}
    assert aider_errors == {"error:The LLM did not conform to the edit format."}  # not its tokens


@pytest.mark.parametrize("fmt", FORMATS)
def test_probe_facts_are_shown_before_their_compression(organic, fmt):
    case = _case(organic, fmt, "probes")
    plan = case["expected"]["value"]["probe_plan"]
    items = case["input"]["context"]
    for probe in plan["probes"]:
        cut = plan["compressions"][probe["cut"]]
        shown = [norm(it.get("text", "")) for it in items if it["turn"] < cut]
        for raw in probe["expected"]:
            value = norm(Fact.parse(raw).value)
            assert any(value in text for text in shown), f"{probe['probe_id']}: {raw!r}"


def test_scorer_sweep_on_every_format(organic, cli, tmp_path):
    r = cli("-m", f"suite.path={organic.out}", "suite.name=organic",
            f"scorer={','.join(SCORERS)}", "repeats=1", "tracking=none")
    assert r.returncode == 0, r.stderr[-2000:]
    results = _results(tmp_path / "multirun")
    assert set(results) == {f"scorer={s}" for s in SCORERS}
    for variant, cases in results.items():
        for fmt in FORMATS:
            replay = cases[_case(organic, fmt, "replay")["case_id"]]
            assert replay["status"] in ("pass", "fail"), (variant, fmt, replay.get("error"))
            _finite(replay, REPLAY_HEADLINE)
            assert replay["metrics"]["tier2.proposals"] > 0, (variant, fmt)
            _finite(cases[_case(organic, fmt, "probes")["case_id"]], ["probe.overall"])


def test_compression_sweep_on_every_format(organic, cli, tmp_path):
    r = cli("-m", f"suite.path={organic.out}", "suite.name=organic",
            f"eviction={','.join(STRATEGIES)}", "repeats=1", "tracking=none")
    assert r.returncode == 0, r.stderr[-2000:]
    results = _results(tmp_path / "multirun")
    overall: dict[str, dict[str, float]] = {fmt: {} for fmt in FORMATS}
    for strategy in STRATEGIES:
        cases = results[f"eviction={strategy}"]
        for fmt in FORMATS:
            assert cases[_case(organic, fmt, "replay")["case_id"]]["status"] == "skipped"
            probes = cases[_case(organic, fmt, "probes")["case_id"]]
            assert probes["status"] in ("pass", "fail"), (strategy, fmt, probes.get("error"))
            _finite(probes, ["probe.overall"])
            overall[fmt][strategy] = probes["metrics"]["probe.overall"]
    print(_table(organic, overall))
    for fmt, by in overall.items():  # the summary keeps the facts truncate drops
        assert by["anchored"] > by["truncate"], (fmt, by)


def _table(organic: Imported, overall: dict[str, dict[str, float]]) -> str:
    def kv(d: dict[str, Any]) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(d.items())) or "-"

    head = ["format", "items", "turns", "tool calls", "references by grade",
            "probes kept (dropped)", "PII by rule", *(f"probe.overall {s}" for s in STRATEGIES)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for fmt, s in organic.sessions.items():
        calls = sum(it["kind"] == "tool_result" for it in _case(organic, fmt, "replay")["input"]
                    ["context"])
        by_type = s["probes_by_type"]
        probes = ", ".join(f"{t}={n}" + (f" ({by_type['dropped'][t]})" if by_type["dropped"].get(t)
                                         else "") for t, n in by_type["kept"].items())
        rows.append("| " + " | ".join([
            fmt, str(s["items"]), str(s["turns"]), str(calls), kv(s["references_by_grade"]),
            probes, kv(s["pii"]), *(f"{overall[fmt][st]:.2f}" for st in STRATEGIES)]) + " |")
    return "\n".join(rows)
