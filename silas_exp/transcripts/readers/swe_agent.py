"""SWE-agent trajectories (``<instance>.traj``, one JSON object).

The system prompt and the first non-demonstration user message (the issue)
open the session; then every step — the model's thought, its action, the
environment's observation — is a turn of its own (a whole trajectory is one
"user turn" in the file, but each step is a model call with its own window).
Steps come from ``trajectory`` when present (complete per step), else from
``history``. The action's first word is the tool (``open``, ``edit``,
``str_replace_editor``, ``submit`` …), the action its ``command`` argument
(function-calling trajectories: the call's parsed arguments). Tool-call ids
are taken from ``history`` where the model gave them — SWE-agent reuses them
across steps, which the builder renames and counts — else ``swe-<step>``.
An observation that reports a failed edit, starts with ``Error`` or ends with
a non-zero exit status is an error result. Quirks: ``demonstration_messages_
dropped``, ``empty_steps_skipped``. Kept metadata: ``exit_status``, the
SWE-agent version and the model name when the file has them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from silas_exp.errors import SuiteError
from silas_exp.transcripts.events import Event, RawSession, ReadOptions
from silas_exp.transcripts.readers import DEFAULT_OPTIONS, read_text

WHAT = "SWE-agent trajectory (.traj)"
_ERROR = re.compile(r"^\s*(?:error\b|Your proposed edit has introduced new syntax error)|"
                    r"exit (?:status|code):? *[1-9]\d*\s*$|command not found", re.IGNORECASE)


def looks_like(path: Path, head: str) -> bool:
    return path.suffix == ".traj" or ('"trajectory"' in head and '"history"' in head) \
        or ('"history"' in head and '"info"' in head and '"exit_status"' in head)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _is_demo(msg: dict[str, Any]) -> bool:
    return bool(msg.get("is_demo")) or msg.get("message_type") == "demonstration"


def _tool_and_args(action: str, call: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The tool is the action's first word (``open``, ``edit``, ``python`` …);
    a function call's name only when there is no action text."""
    args: Any = {"command": action.strip()}
    name = action.strip().split(maxsplit=1)[0] if action.strip() else None
    if call and isinstance(call.get("function"), dict):
        fn = call["function"]
        parsed = fn.get("arguments", {})
        if isinstance(parsed, str):
            try:
                parsed = json.loads(parsed)
            except json.JSONDecodeError:
                parsed = {"command": parsed}
        args = parsed if isinstance(parsed, dict) else {"input": parsed}
        if name is None or fn.get("name") not in ("bash", "execute_bash", "shell"):
            name = str(fn.get("name") or name or "tool")
    return name or "action", args


def read(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> list[RawSession]:
    text = read_text(path, WHAT)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); pass a SWE-agent "
                         ".traj file as written by the agent") from None
    if not isinstance(obj, dict) or not ({"trajectory", "history"} & set(obj)):
        raise SuiteError(f"{path}:1: field 'trajectory' is missing (and no 'history'); pass a "
                         "SWE-agent .traj file")
    raw = RawSession(path.stem, path.name, "swe-agent")
    info = obj.get("info") if isinstance(obj.get("info"), dict) else {}
    for key in ("exit_status", "swe_agent_version"):
        if isinstance(info.get(key), str):
            raw.meta[key] = info[key]
    model = obj.get("replay_config") or {}
    if isinstance(model, str):  # SWE-agent 1.x writes the replay config as a JSON string
        try:
            model = json.loads(model)
        except json.JSONDecodeError:
            model = {}
    model = model if isinstance(model, dict) else {}
    name = ((model.get("agent") or {}).get("model") or {}).get("name") \
        if isinstance(model.get("agent"), dict) else None
    if isinstance(name, str):
        raw.meta["model"] = name

    history = [m for m in obj.get("history") or [] if isinstance(m, dict)]
    kept = []
    for m in history:
        if _is_demo(m):
            raw.quirks["demonstration_messages_dropped"] += 1
        else:
            kept.append(m)
    where = f"{path}"
    system = next((m for m in kept if m.get("role") == "system"), None)
    if system:
        raw.events.append(Event("system", _text(system.get("content")), where=where))
    issue = next((m for m in kept if m.get("role") == "user"), None)
    raw.events.append(Event("user", _text(issue.get("content")) if issue else "(no issue text)",
                            where=where))
    calls = [tc for m in kept if m.get("role") == "assistant"
             for tc in (m.get("tool_calls") or [])[:1] if isinstance(tc, dict)]
    steps = [s for s in obj.get("trajectory") or [] if isinstance(s, dict)]
    if steps:
        rows = [(s.get("thought") or s.get("response") or "", s.get("action") or "",
                 s.get("observation") or "") for s in steps]
    else:  # history only: an assistant message, then the observation that follows it
        rows, it = [], iter(kept[kept.index(issue) + 1:] if issue else kept)
        for m in it:
            if m.get("role") != "assistant":
                continue
            obs = next((x for x in it if x.get("role") in ("user", "tool")), None)
            rows.append((m.get("thought") or _text(m.get("content")), m.get("action") or "",
                         _text(obs.get("content")) if obs else ""))
    for n, (thought, action, observation) in enumerate(rows):
        if not (str(thought).strip() or str(action).strip()):
            raw.quirks["empty_steps_skipped"] += 1
            continue
        where = f"{path}:step {n}"
        call = calls[n] if len(calls) == len(rows) else None
        raw.events.append(Event("turn", where=where))
        if str(thought).strip():
            raw.events.append(Event("assistant", str(thought).strip(), where=where))
        if str(action).strip() or call:
            tool, args = _tool_and_args(str(action), call)
            cid = str(call.get("id")) if call and call.get("id") else f"swe-{n}"
            raw.events.append(Event("call", call_id=cid, tool=tool, args=args, where=where))
            obs = _text(observation)
            raw.events.append(Event("result", obs, call_id=cid, where=where,
                                    is_error=bool(_ERROR.search(obs))))
    return [raw]
