"""SWE-agent trajectories (``<instance>.traj``, one JSON object).

The system prompt and the first non-demonstration user message (the issue)
open the session; then every step — the model's thought, its action, the
environment's observation — is a turn of its own (a whole trajectory is one
"user turn" in the file, but each step is a model call with its own window).
Steps come from ``trajectory`` when present (complete per step), else from
``history``. The tool is the action's first word when that is one of
SWE-agent's commands (``open``, ``edit``, ``str_replace_editor``, ``submit``
…), else ``bash``; the arguments are ``{"command": action}`` (function-calling
trajectories: the call's parsed arguments). Tool-call ids
are taken from ``history`` where the model gave them — SWE-agent reuses them
across steps, which the builder renames and counts — else ``swe-<step>``.
An observation that reports a failed edit, starts with ``Error`` or ends with
a non-zero exit status is an error result (so are the editor's ``No
replacement was performed``, ``The path … does not exist`` and the like).
SWE-agent 0.x assistant messages may hold only ``content``: the action is
then the last fenced block of it and the thought the text before. Quirks:
``demonstration_messages_dropped``, ``empty_steps_skipped``,
``actions_from_content`` (0.x actions parsed out of the message text).
Kept metadata: ``exit_status``, ``swe_agent_version`` and ``model`` when the
file has them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from silas_exp.data.transcripts.events import Event, RawSession, ReadOptions
from silas_exp.data.transcripts.readers import DEFAULT_OPTIONS, read_text
from silas_exp.errors import SuiteError

WHAT = "SWE-agent trajectory (.traj)"
_ERROR = re.compile(r"^\s*(?:OBSERVATION:\s*)?(?:error\b|Your proposed edit has introduced new "
                    r"syntax error|No replacement was performed|The path \S+ does not exist|"
                    r"Invalid `|Parameter `\w+` is required|File already exists at)|"
                    r"exit (?:status|code):? *[1-9]\d*\s*$|command not found", re.IGNORECASE)
_FENCED = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


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


# SWE-agent's own commands (0.x defaults, 1.x tool bundles); any other action is a shell command
COMMANDS = frozenset(("open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert",
                      "search_dir", "search_file", "find_file", "submit", "str_replace_editor",
                      "filemap", "view_image", "exit_forfeit", "skip", "forfeit", "review_on_submit",
                      "review_on_submit_m", "windowed_edit"))
_SHELLS = ("bash", "execute_bash", "shell")


def _tool_and_args(action: str, call: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The tool is the action's first word when that is a SWE-agent command
    (``open``, ``edit``, ``str_replace_editor``, ``submit`` …), else ``bash``
    (a shell command: ``python x.py``, ``cd /testbed && pytest``); a function
    call's name when it is not the shell. The arguments are the function
    call's, parsed, or ``{"command": action}``."""
    action = action.strip()
    first = action.split(maxsplit=1)[0] if action else ""
    name = first if first in COMMANDS else ("bash" if action else "")
    args: Any = {"command": action}
    if call and isinstance(call.get("function"), dict):
        fn = call["function"]
        parsed = fn.get("arguments", {})
        if isinstance(parsed, str):
            try:
                parsed = json.loads(parsed) if parsed.strip() else {}
            except json.JSONDecodeError:
                parsed = {"command": parsed}
        args = parsed if isinstance(parsed, dict) else {"input": parsed}
        fname = str(fn.get("name") or "")
        if fname and (fname not in _SHELLS or not name):
            name = fname
    return name or "action", args


def _split_content(content: str) -> tuple[str, str]:
    """(thought, action) of a 0.x assistant message: the action is its last
    fenced block, the thought the text before it."""
    blocks = list(_FENCED.finditer(content))
    if not blocks:
        return content.strip(), ""
    last = blocks[-1]
    thought = content[:last.start()].strip()
    thought = thought.removeprefix("DISCUSSION").strip()
    return thought, last.group(1).strip()


def _model_name(obj: dict[str, Any], info: dict[str, Any]) -> str | None:
    config = obj.get("replay_config") or {}
    if isinstance(config, str):  # SWE-agent 1.x writes the replay config as a JSON string
        try:
            config = json.loads(config)
        except json.JSONDecodeError:
            config = {}
    config = config if isinstance(config, dict) else {}
    agent = config.get("agent") if isinstance(config.get("agent"), dict) else {}
    model = agent.get("model") if isinstance(agent.get("model"), dict) else {}
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    for name in (model.get("name"), model.get("model_name"), stats.get("model_name"),
                 stats.get("model")):
        if isinstance(name, str) and name:
            return name
    return None


def read(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> list[RawSession]:
    text = read_text(path, WHAT)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path.name}:{exc.lineno}: not valid JSON ({exc.msg} at column "
                         f"{exc.colno}); pass the .traj file as SWE-agent wrote it (one JSON "
                         "object)") from None
    if not isinstance(obj, dict) or not ({"trajectory", "history"} & set(obj)):
        found = f"a JSON {type(obj).__name__}" if not isinstance(obj, dict) else \
            f"keys {', '.join(sorted(obj)[:6]) or 'none'}"
        raise SuiteError(f"{path.name}:1: field 'trajectory' is missing (and no 'history'; found "
                         f"{found}); pass a SWE-agent .traj file")
    name = path.name
    raw = RawSession(path.stem, name, "swe-agent")
    info = obj.get("info") if isinstance(obj.get("info"), dict) else {}
    for key in ("exit_status", "swe_agent_version"):
        if info.get(key) is not None and str(info[key]):
            raw.meta[key] = str(info[key])
    model = _model_name(obj, info)
    if model:
        raw.meta["model"] = model

    history = [m for m in obj.get("history") or [] if isinstance(m, dict)]
    kept = []
    for m in history:
        if _is_demo(m):
            raw.quirks["demonstration_messages_dropped"] += 1
        else:
            kept.append(m)
    system = next((m for m in kept if m.get("role") == "system"), None)
    if system:
        raw.events.append(Event("system", _text(system.get("content")), where=f"{name}:history"))
    issue = next((m for m in kept if m.get("role") == "user"), None)
    raw.events.append(Event("user", _text(issue.get("content")) if issue else "(no issue text)",
                            where=f"{name}:history"))
    after_issue = kept[kept.index(issue) + 1:] if issue else kept
    answers = []  # (thought, action, tool call or None) of every assistant message
    for m in after_issue:
        if m.get("role") != "assistant":
            continue
        thought, action = m.get("thought"), m.get("action")
        if action is None and not m.get("tool_calls"):
            thought, action = _split_content(_text(m.get("content")))
            if action:
                raw.quirks["actions_from_content"] += 1
        tcs = [tc for tc in m.get("tool_calls") or [] if isinstance(tc, dict)]
        answers.append((thought if thought is not None else _text(m.get("content")),
                        action or "", tcs[0] if tcs else None))
    steps = [s for s in obj.get("trajectory") or [] if isinstance(s, dict)]
    if steps:
        rows = []
        at = 0
        for st in steps:
            action = str(st.get("action") or "")
            call = None
            # the step's assistant message: the next one with the same action
            for j in range(at, len(answers)):
                if answers[j][1].strip() == action.strip():
                    call, at = answers[j][2], j + 1
                    break
            rows.append((st.get("thought") or st.get("response") or "", action,
                         st.get("observation") or "", call))
    else:  # history only: an assistant message, then the observation that follows it
        rows, it = [], iter(after_issue)
        n = 0
        for m in it:
            if m.get("role") != "assistant":
                continue
            thought, action, call = answers[n]
            n += 1
            obs = next((x for x in it if x.get("role") in ("user", "tool")), None)
            rows.append((thought, action, _text(obs.get("content")) if obs else "", call))
    for n, (thought, action, observation, call) in enumerate(rows):
        thought, action = str(thought or ""), str(action or "")
        if not (thought.strip() or action.strip() or call):
            raw.quirks["empty_steps_skipped"] += 1
            continue
        where = f"{name}:step {n}"
        raw.events.append(Event("turn", where=where))
        if thought.strip():
            raw.events.append(Event("assistant", thought.strip(), where=where))
        if action.strip() or call:
            tool, args = _tool_and_args(action, call)
            cid = str(call.get("id")) if call and call.get("id") else f"swe-{n}"
            raw.events.append(Event("call", call_id=cid, tool=tool, args=args, where=where))
            obs = _text(observation)
            raw.events.append(Event("result", obs, call_id=cid, where=where,
                                    is_error=bool(_ERROR.search(obs))))
    return [raw]
