"""Case errors counted per cause, with the kind to blame.

A case that errors keeps its error in ``results.jsonl``; this module also
says *why*, once per cause, where people look: the job's console line, the
job folder's ``failures.json`` and the sweep's ``ablation.md``. A cause is a
``PluginFailure`` (a scorer that raised or broke its contract, named by
:class:`silas_exp.scorers.base.CheckedScorer`), an exception raised in a
plug-in's own code (its frames name it), or any other exception by type and
line. Each cause keeps its count, its first case and where, the first
traceback (``--verbose`` prints it) and whether code broke (``code``: false
when a model call failed for good, which does not fail the exit status).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from silas_exp.errors import LLMError, PluginFailure
from silas_exp.plugins import BUILT_IN, Kind, raised

FAILURES_FILE = "failures.json"


def _blame(exc: BaseException, kinds: Iterable[tuple[str, Kind]]) -> PluginFailure | None:
    if isinstance(exc, PluginFailure):
        return exc
    frames = traceback.extract_tb(exc.__traceback__)
    for what, kind in kinds:
        home = kind.home()
        if kind.source != BUILT_IN and home and any(f.filename.startswith(home) for f in frames):
            return raised(kind, what, exc, "")  # type: ignore[arg-type]
    return None


def _model_failed(exc: BaseException | None) -> bool:
    """The case errored because a model call failed for good (after its retries),
    not because code broke: counted, but not a crash (``run/exit_policy.py``)."""
    while exc is not None:
        if isinstance(exc, LLMError):
            return True
        exc = exc.__cause__
    return False


class FailureLog:
    """The causes of one job's case errors, in the order they first happened."""

    def __init__(self, kinds: Iterable[tuple[str, Kind]]) -> None:
        self.kinds = list(kinds)
        self.causes: dict[str, dict[str, Any]] = {}

    def add(self, case_id: str, exc: BaseException) -> tuple[str, BaseException]:
        """The case's error text and the exception to raise with fail_fast."""
        failure = _blame(exc, self.kinds)
        if failure is not None:
            failure.at(f"case {case_id}")
            cause, first, shown = failure.cause, failure.where, failure
        else:
            frame = (traceback.extract_tb(exc.__traceback__) or [None])[-1]
            line = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
            cause, first, shown = f"{type(exc).__name__}{line}", f"case {case_id}", exc
        entry = self.causes.setdefault(cause, {
            "cause": cause, "count": 0, "first": first,
            "detail": failure.detail if failure else str(exc).splitlines()[0] if str(exc) else "",
            "traceback": "".join(traceback.format_exception(exc)), "code": not _model_failed(exc)})
        entry["count"] += 1
        return f"{type(shown).__name__}: {shown}", shown

    def records(self) -> list[dict[str, Any]]:
        return list(self.causes.values())


def write(out_dir: Path, records: list[dict[str, Any]]) -> None:
    if records:
        (out_dir / FAILURES_FILE).write_text(json.dumps(records, indent=1))


def console_lines(label: str, records: list[dict[str, Any]], verbose: bool) -> list[str]:
    lines = [f"{label}: {r['count']} case(s) errored: {r['cause']} — first: {r['first']}"
             + (f": {r['detail']}" if r["detail"] else "") for r in records]
    if records:
        lines.append(records[0]["traceback"].rstrip() if verbose
                     else f"{label}: (run with --verbose for the first traceback)")
    return lines


def sweep_markdown(sweep_dir: Path) -> str:
    """ablation.md's section on case errors: every cause per variant, counted."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(sweep_dir.glob(f"*/{FAILURES_FILE}"), key=lambda p: p.parent.name):
        try:
            variant = json.loads((path.parent / "result.json").read_text()).get("variant", "?")
        except (OSError, ValueError):
            variant = path.parent.name
        for r in json.loads(path.read_text()):
            row = rows.setdefault((variant, r["cause"]), {**r, "count": 0,
                                                          "first": f"job {path.parent.name}, "
                                                                   f"{r['first']}"})
            row["count"] += r["count"]
    if not rows:
        return ""
    lines = ["", "## Case errors by cause", "",
             "Every case run that errored, by its cause (the kind to blame, the exception or "
             "broken contract, the file and line); the first occurrence says where.", "",
             "| variant | case runs | cause | first | message |", "|---|---|---|---|---|"]
    for (variant, cause), r in sorted(rows.items()):
        cells = [variant, str(r["count"]), cause, r["first"], r["detail"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells)
                     + " |")
    return "\n".join(lines) + "\n"
