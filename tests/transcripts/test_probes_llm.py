"""``--probes llm``: probes written by a model, nothing it writes trusted.

The simulated writer misquotes a share of values; a real model is the real
``anthropic`` SDK against the local Messages API server, answering with one
probe that quotes the session and one that invents."""

from __future__ import annotations

import json
import re

import pytest

from silas_exp.cli.main import main
from silas_exp.data.suites.loader import load_suite
from silas_exp.data.transcripts.suite import ImportSettings, ProbeModel, write_suite
from silas_exp.facts.fact import norm
from silas_exp.llm import LLMSettings, build_client
from tests.fakes.messages_server import API_KEY, FakeMessagesServer, Fault, default_responder
from tests.transcripts.sessions import coding_session
from tests.transcripts.test_import import FIX


def _plans(out):
    loaded = load_suite(out)  # the loader checks every expected fact again
    text = {c.case_id.removesuffix("-probes"): norm(" ".join(it["text"] for it in c.input.context))
            for c in loaded.cases if c.case_id.endswith("-probes")}
    plans = {c.case_id.removesuffix("-probes"): c.expected.value["probe_plan"]
             for c in loaded.cases if c.case_id.endswith("-probes")}
    return plans, text


def test_simulated_writer_misquotes_are_dropped_and_counted(tmp_path):
    out = tmp_path / "suite"
    sessions = [("test", f"s{i}.jsonl", coding_session(f"s{i}", 12 + 2 * i)) for i in range(6)]
    with build_client(LLMSettings(), seed=0, cache_dir=None) as llm:
        report = write_suite(sessions, out, ImportSettings(opt_in="yes", probes="llm"),
                             writer=ProbeModel(llm, "claude-sonnet-4-5"))
    plans, text = _plans(out)
    assert len(plans) == 6
    for sid, plan in plans.items():
        for probe in plan["probes"]:
            for fact in probe["expected"]:
                assert norm(fact.split(":", 1)[1]) in text[sid], fact
    dropped = sum(s.probes_by_type["facts_dropped"].get("not_in_session", 0) for s in report.sessions)
    kept = sum(sum(s.probes_by_type["kept"].values()) for s in report.sessions)
    assert dropped > 0 and kept >= 12
    assert not any("-v2" in f for p in plans.values() for pr in p["probes"] for f in pr["expected"])
    saved = json.loads((out / "import_report.json").read_text())
    assert saved["sessions"][0]["probes_by_type"]["kept"]


def _probe_writer(body: dict) -> dict:
    tools = body.get("tools") or []
    if not tools or "probes" not in tools[0]["input_schema"].get("properties", {}):
        return default_responder(body)
    history = body["messages"][-1]["content"]
    history = history if isinstance(history, str) else history[0]["text"]
    m = re.search(r"(\w+Error: [^\n]+)", history)
    seen = [f"error:{m[1]}"] if m else []
    return {"probes": [
        {"type": "recall", "question": "Which error came up?", "expected": seen},
        {"type": "artifact", "question": "Which file was changed?",
         "expected": ["modified:src/never/touched.py"]},       # invented: dropped
        {"type": "decision", "question": "Why?", "expected": ["because"]},  # unparsable: dropped
    ]}


def test_real_model_probes_through_the_sdk_are_verified(tmp_path, monkeypatch, capsys):
    out = tmp_path / "suite"
    with FakeMessagesServer(responder=_probe_writer) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("SILAS_EXP_ROOT", str(tmp_path))  # the response cache of this test
        with pytest.raises(SystemExit) as done:
            main(["import", str(FIX / "httpkit__httpkit-42.traj"), "--out", str(out), "--opt-in",
                  "--probes", "llm", "--model", "claude-haiku-4-5"])
        assert done.value.code == 0, capsys.readouterr().err
        asked = [b for b in server.bodies if "probes" in json.dumps(b.get("tools") or [])]
    assert asked and all(b["model"] == "claude-haiku-4-5" for b in asked)
    report = json.loads((out / "import_report.json").read_text())
    counts = report["sessions"][0]["probes_by_type"]
    assert counts["kept"] == {"recall": len(asked)}
    assert counts["dropped"] == {"artifact": len(asked), "decision": len(asked)}
    assert counts["facts_dropped"] == {"not_in_session": len(asked), "unparsable": len(asked)}
    plans, text = _plans(out)
    (plan,) = plans.values()
    assert {p["type"] for p in plan["probes"]} == {"recall"}
    assert API_KEY not in (out / "import_report.json").read_text()


def test_a_writer_that_breaks_the_schema_is_a_note_not_a_guess(tmp_path, monkeypatch, capsys):
    with FakeMessagesServer(responder=_probe_writer) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("SILAS_EXP_ROOT", str(tmp_path))  # the response cache of this test
        server.fault_fn = lambda n, body: Fault("bad_schema")
        with pytest.raises(SystemExit) as done:
            main(["import", str(FIX / "httpkit__httpkit-42.traj"), "--out", str(tmp_path / "s"),
                  "--opt-in", "--probes", "llm", "--model", "claude-haiku-4-5"])
    out = capsys.readouterr().out
    assert done.value.code == 0  # the replay case still has its ground truth
    assert "probe writer failed at turn" in out and "breaks the schema" in out
    cases = sorted(p.name for p in (tmp_path / "s" / "cases").iterdir())
    assert cases == ["httpkit__httpkit-42-replay.json"]


def test_unknown_model_is_bad_input(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["import", str(FIX / "openai_chat.jsonl"), "--out", str(tmp_path / "x"), "--opt-in",
              "--probes", "llm", "--model", "gpt-nope"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "--model gpt-nope" in err and "claude-haiku-4-5" in err and "simulated" in err
    assert not (tmp_path / "x").exists()
