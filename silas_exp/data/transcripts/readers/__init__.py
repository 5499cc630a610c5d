"""Transcript readers, one module per format, each with ``read(path, options)
-> list[RawSession]`` and ``looks_like(path, head) -> bool``; ``detect`` asks
them in a fixed order. ``silas`` (the project's own session JSON) is used as
it is and has no reader."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from silas_exp.data.transcripts.events import RawSession, ReadOptions
from silas_exp.errors import SuiteError

FORMATS = ("claude-code", "aider", "swe-agent", "openai", "silas")
_MODULES = {"claude-code": "claude_code", "swe-agent": "swe_agent", "aider": "aider",
            "openai": "openai"}
HEAD_BYTES = 4096
DEFAULT_OPTIONS = ReadOptions()


def _module(fmt: str):
    """The reader module of ``fmt``, or None while it is not there (only that module missing)."""
    name = f"silas_exp.data.transcripts.readers.{_MODULES[fmt]}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


def head_of(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise SuiteError(f"{path}: file not found; pass the path of a transcript") from None
    except IsADirectoryError:
        raise SuiteError(f"{path}: is a folder; pass the path of a transcript file") from None


def detect(path: Path) -> str:
    head = head_of(path)
    stripped = head.lstrip("\ufeff \n\r\t")
    if not stripped:
        raise SuiteError(f"{path}:1: the file is empty; pass a transcript with at least one message")
    if stripped.startswith("{") and '"session_id"' in head and '"items"' in head:
        try:
            obj = json.loads(path.read_text(encoding="utf-8-sig"))
            session = obj.get("session", obj) if isinstance(obj, dict) else None
            if isinstance(session, dict) and "items" in session:
                return "silas"
        except (ValueError, UnicodeDecodeError):
            pass
    for fmt in ("claude-code", "swe-agent", "aider", "openai"):
        module = _module(fmt)
        if module is not None and module.looks_like(path, head):
            return fmt
    raise SuiteError(f"{path}: format not recognised; pass --format with one of "
                     f"{', '.join(FORMATS)}")


def read(path: Path, fmt: str = "auto", options: ReadOptions | None = None) -> list[RawSession]:
    options = options or ReadOptions()
    if fmt == "auto":
        fmt = detect(path)
    if fmt == "silas":
        raise SuiteError(f"{path}: a silas session file is used as it is, not read as a transcript")
    if fmt not in _MODULES:
        raise SuiteError(f"{path}: --format {fmt!r} is not known; pass one of {', '.join(FORMATS)}")
    module = _module(fmt)
    if module is None:
        raise SuiteError(f"{path}: the {fmt} reader is not installed in this version; pass another "
                         f"--format ({', '.join(FORMATS)})")
    return module.read(path, options)


def read_text(path: Path, what: str) -> str:
    """The file as text, with errors that say what to do."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SuiteError(f"{path}: file not found; pass the path of a {what}") from None
    except IsADirectoryError:
        raise SuiteError(f"{path}: is a folder; pass the path of a {what} file") from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 text (byte {exc.start}); re-export the {what} as "
                         "UTF-8") from None
    if not text.strip():
        raise SuiteError(f"{path}:1: the file is empty; pass a {what} with at least one message")
    return text


def jsonl_records(path: Path, text: str, what: str) -> list[tuple[int, dict]]:
    """(line number, object) of every non-blank line; a bad line names itself."""
    out = []
    # split on newlines only: str.splitlines() would also break inside strings at U+2028 etc.
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno}); "
                             f"a {what} has one JSON object per line") from None
        if not isinstance(obj, dict):
            raise SuiteError(f"{path}:{lineno}: the line is a JSON {type(obj).__name__}, not an "
                             f"object; a {what} has one JSON object per line")
        out.append((lineno, obj))
    return out
