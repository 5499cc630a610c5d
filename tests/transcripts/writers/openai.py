"""OpenAI-style chat JSONL: one message a line, ``tool_calls`` answered by ``role: tool``."""

from __future__ import annotations

import json
from typing import Any

from tests.transcripts.script import Call, Script
from tests.transcripts.writers._common import Files, short_id

NAMES = {"Read": "read_file", "Edit": "edit_file", "Write": "write_file", "Bash": "run_command",
         "Grep": "grep_search", "TodoWrite": "update_todos"}  # a typical agent's functions


def _openai_call(c: Call, files: Files) -> tuple[dict[str, Any], str]:
    """(arguments, tool message content): paths relative, errors as text (the
    format has no error flag), a command's exit code after its output."""
    a, path = c.args, c.args.get("file_path", "")
    if c.tool == "Read":
        return {"path": path}, c.result
    if c.tool == "Edit":
        args = {"path": path, "old_string": a["old_string"], "new_string": a["new_string"]}
        if c.error:
            return args, f"Error: old_string not found in {path}; no changes made."
        files.edit(path, a["old_string"], a["new_string"])
        return args, f"Edited {path}: replaced 1 occurrence."
    if c.tool == "Write":
        files.write(path, a["content"])
        return ({"path": path, "content": a["content"]},
                f"Wrote {len(a['content'])} bytes to {path}.")
    if c.tool == "Grep":
        return {"pattern": a["pattern"], "path": "."}, c.result
    if c.tool == "TodoWrite":
        todos = [{"content": t["content"], "status": t["status"]} for t in a["todos"]]
        return {"todos": todos}, f"Todo list updated ({len(todos)} items)."
    return {"command": a["command"]}, f"{c.result}\n\n[exit code: {1 if c.error else 0}]"


def openai(s: Script) -> tuple[str, str]:
    """(file name, JSONL) of the conversation: each step one assistant message
    (its text, its ``tool_calls``), then one ``tool`` message per call."""
    files = Files(s.files)
    msgs: list[dict[str, Any]] = [{"role": "system", "content": s.system}]
    n = 0
    for ex in s.exchanges:
        msgs.append({"role": "user", "content": ex.user})
        for st in ex.steps:
            calls = []
            for c in st.calls:
                n += 1
                args, result = _openai_call(c, files)
                calls.append(({"id": f"call_{short_id(f'oa/{s.sid}/{n}', 24)}", "type": "function",
                               "function": {"name": NAMES[c.tool],
                                            "arguments": json.dumps(args, ensure_ascii=False)}},
                              result))
            msg: dict[str, Any] = {"role": "assistant", "content": st.text or None}
            if calls:
                msg["tool_calls"] = [tc for tc, _ in calls]
            msgs.append(msg)
            msgs += [{"role": "tool", "tool_call_id": tc["id"], "content": r} for tc, r in calls]
    return f"chat-{s.sid}.jsonl", "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in msgs)
