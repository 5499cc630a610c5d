"""Format detection from a file's name and first 4 KB, and dispatch by format."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from silas_exp.data.transcripts import readers
from silas_exp.data.transcripts.events import ReadOptions
from silas_exp.errors import SuiteError

FIX = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(("name", "fmt"), [
    ("claude_code_session.jsonl", "claude-code"),
    ("claude_code_compact.jsonl", "claude-code"),
    ("openai_chat.jsonl", "openai"),
])
def test_fixtures(name, fmt):
    assert readers.detect(FIX / name) == fmt


@pytest.mark.parametrize(("module", "name", "fmt"), [
    ("aider", "httpkit.aider.chat.history.md", "aider"),
    ("swe_agent", "httpkit__httpkit-42.traj", "swe-agent"),
])
def test_other_tools_fixtures(module, name, fmt):
    pytest.importorskip(f"silas_exp.data.transcripts.readers.{module}")
    assert readers.detect(FIX / name) == fmt


def test_claude_code_file_opening_with_large_snapshots(tmp_path):
    snap = {"type": "file-history-snapshot", "messageId": "m1", "isSnapshotUpdate": False,
            "snapshot": {"messageId": "m1", "timestamp": "2026-10-02T09:00:00.000Z",
                         "trackedFileBackups": {f"src/f{i}.py": {"backupFileName": f"h{i}@v1",
                                                                 "version": 1} for i in range(80)}}}
    p = tmp_path / "2c0e.jsonl"
    p.write_text(json.dumps(snap, separators=(",", ":")) + "\n")
    assert len(p.read_text()) > readers.HEAD_BYTES
    assert readers.detect(p) == "claude-code"


@pytest.mark.parametrize("doc", [
    {"messages": [{"role": "user", "content": "hi"}]},
    [{"role": "user", "content": "hi"}],
])
def test_whole_file_chat_exports(tmp_path, doc):
    p = tmp_path / "export.json"
    p.write_text(json.dumps(doc, indent=2))
    assert readers.detect(p) == "openai"


def test_fine_tuning_jsonl(tmp_path):
    p = tmp_path / "train.jsonl"
    p.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert readers.detect(p) == "openai"


@pytest.mark.parametrize("wrapped", [False, True])
def test_silas_session_json(tmp_path, wrapped):
    session = {"session_id": "s1", "items": [{"id": "i1", "kind": "user", "text": "hi"}]}
    p = tmp_path / "s1.json"
    p.write_text(json.dumps({"session": session} if wrapped else session))
    assert readers.detect(p) == "silas"
    with pytest.raises(SuiteError, match=r"s1\.json: a silas session file is used as it is"):
        readers.read(p)


def test_read_dispatches_with_options():
    sessions = readers.read(FIX / "claude_code_session.jsonl", "auto",
                            ReadOptions(sidechains="separate"))
    assert [s.session_id for s in sessions][-1] == "claude_code_session-sidechain-1"
    assert {s.format for s in sessions} == {"claude-code"}
    (chat,) = readers.read(FIX / "openai_chat.jsonl", "openai")
    assert chat.format == "openai"


def test_unrecognised_file_lists_the_formats(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some notes\n")
    with pytest.raises(SuiteError) as err:
        readers.detect(p)
    assert "notes.txt: format not recognised; pass --format with one of" in str(err.value)
    for fmt in readers.FORMATS:
        assert fmt in str(err.value)


def test_unknown_format_name(tmp_path):
    with pytest.raises(SuiteError, match=r"--format 'cursor' is not known; pass one of claude-code"):
        readers.read(FIX / "openai_chat.jsonl", "cursor")


@pytest.mark.parametrize("text", ["", "\n \n"])
def test_empty_file(tmp_path, text):
    p = tmp_path / "e.jsonl"
    p.write_text(text)
    with pytest.raises(SuiteError, match=r"e\.jsonl:1: the file is empty"):
        readers.detect(p)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(SuiteError, match=r"nope\.jsonl: file not found"):
        readers.detect(tmp_path / "nope.jsonl")
    with pytest.raises(SuiteError, match="is a folder"):
        readers.detect(tmp_path)


def test_a_reader_module_not_there_yet_is_skipped(monkeypatch):
    real = importlib.import_module

    def without_aider(name, *args):
        if name == "silas_exp.data.transcripts.readers.aider":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_aider)
    assert readers.detect(FIX / "openai_chat.jsonl") == "openai"
    with pytest.raises(SuiteError, match="the aider reader is not installed"):
        readers.read(FIX / "openai_chat.jsonl", "aider")


def test_a_missing_dependency_inside_a_reader_is_not_hidden(monkeypatch):
    real = importlib.import_module

    def broken(name, *args):
        if name == "silas_exp.data.transcripts.readers.claude_code":
            raise ModuleNotFoundError("No module named 'yaml'", name="yaml")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="yaml"):
        readers.detect(FIX / "openai_chat.jsonl")
