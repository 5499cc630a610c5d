"""Claude Code: ``~/.claude/projects/<project>/<session uuid>.jsonl``."""

from __future__ import annotations

import json
from typing import Any

from tests.transcripts.script import Call, Script
from tests.transcripts.writers._common import (
    CLAUDE_CODE_VERSION,
    MODEL,
    Clock,
    Files,
    abs_args,
    short_id,
    tool_text,
    uuid,
)


def claude_code(s: Script) -> tuple[str, str]:
    """(file name, JSONL text) of the session in ``~/.claude/projects/<project>/``."""
    session_id, files, clock = uuid(f"cc/{s.sid}"), Files(s.files), Clock(s.started)
    lines: list[dict[str, Any]] = []
    parent: list[str | None] = [None]

    def record(kind: str, message: dict[str, Any], **extra: Any) -> None:
        uid = uuid(f"cc/{s.sid}/{len(lines)}")
        rec = {"parentUuid": parent[0], "isSidechain": False, "userType": "external", "cwd": s.cwd,
               "sessionId": session_id, "version": CLAUDE_CODE_VERSION, "gitBranch": "main",
               "type": kind, "message": message}
        after = {k: extra.pop(k) for k in list(extra) if k == "toolUseResult"}
        rec |= extra | {"uuid": uid, "timestamp": clock.tick()} | after
        lines.append(rec)
        parent[0] = uid

    for ei, ex in enumerate(s.exchanges):
        prompt_uuid = uuid(f"cc/{s.sid}/{len(lines) + 1}")
        lines.append({"type": "file-history-snapshot", "messageId": prompt_uuid, "snapshot": {
            "messageId": prompt_uuid, "trackedFileBackups": {}, "timestamp": clock.tick(1)},
            "isSnapshotUpdate": False})
        record("user", {"role": "user", "content": ex.user})
        for si, step in enumerate(ex.steps):
            seed = f"{s.sid}/{ei}/{si}"
            mid, req = f"msg_01{short_id(seed, 22)}", f"req_011C{short_id('req/' + seed, 18)}"
            blocks: list[dict[str, Any]] = []
            if step.thinking:
                blocks.append({"type": "thinking", "thinking": step.thinking,
                               "signature": short_id("sig/" + seed, 40)})
            if step.text:
                blocks.append({"type": "text", "text": step.text})
            ids = [f"toolu_01{short_id(f'{seed}/{ci}', 22)}" for ci in range(len(step.calls))]
            blocks += [{"type": "tool_use", "id": cid, "name": c.tool, "input": abs_args(c, s.cwd)}
                       for cid, c in zip(ids, step.calls, strict=True)]
            usage = {"input_tokens": 6, "cache_creation_input_tokens": 410 + 37 * si,
                     "cache_read_input_tokens": 14_210 + 900 * ei, "output_tokens": 96,
                     "service_tier": "standard"}
            for bi, block in enumerate(blocks):
                last = bi == len(blocks) - 1
                record("assistant", {
                    "id": mid, "type": "message", "role": "assistant", "model": MODEL,
                    "content": [block],
                    "stop_reason": ("tool_use" if step.calls else "end_turn") if last else None,
                    "stop_sequence": None, "usage": usage}, requestId=req)
            for cid, c in zip(ids, step.calls, strict=True):
                text = tool_text(c, files, s.cwd)
                result: dict[str, Any] = {"type": "tool_result", "content": text}
                if c.error:
                    result["is_error"] = True
                result["tool_use_id"] = cid
                record("user", {"role": "user", "content": [result]},
                       toolUseResult=_tool_use_result(c, text, s.cwd))
    return f"{session_id}.jsonl", "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":"))
                                          + "\n" for r in lines)


def _tool_use_result(c: Call, text: str, cwd: str) -> Any:
    if c.error:
        return "Error: " + text.removeprefix("<tool_use_error>").removesuffix("</tool_use_error>")
    path = f"{cwd}/{c.args.get('file_path', '')}"
    if c.tool == "Read":
        n = c.result.count("\n") + 1
        return {"type": "text", "file": {"filePath": path, "content": c.result, "numLines": n,
                                         "startLine": 1, "totalLines": n}}
    if c.tool == "Edit":
        return {"filePath": path, "oldString": c.args["old_string"],
                "newString": c.args["new_string"], "userModified": False, "replaceAll": False}
    if c.tool == "Write":
        return {"type": "create", "filePath": path, "content": c.args["content"],
                "structuredPatch": []}
    if c.tool == "TodoWrite":
        return {"oldTodos": [], "newTodos": c.args["todos"]}
    if c.tool == "Grep":
        return {"mode": "content", "numFiles": 0, "filenames": [], "content": text,
                "numLines": text.count("\n") + 1}
    return {"stdout": c.result, "stderr": "", "interrupted": False, "isImage": False}
