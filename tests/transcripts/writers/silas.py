"""The harness's own session JSON, items with its ``ContextItem`` field names."""

from __future__ import annotations

import json
import math

from tests.transcripts.script import Script
from tests.transcripts.writers._common import Files, abs_args, tool_text


def silas(s: Script) -> tuple[str, str]:
    """(file name, JSON) of the session: a user message starts a turn, so does
    each model call after tool results; a tool item is the call, then its result."""
    files, items = Files(s.files), []
    turn, after_result = 0, False
    per_turn: dict[int, int] = {}

    def item(zone: str, source: str, content: str, pinned: bool = False) -> None:
        per_turn[turn] = per_turn.get(turn, 0) + 1
        items.append({"ctx_id": f"{s.sid}-t{turn}-{per_turn[turn] - 1}", "zone": zone,
                      "content": content, "token_count": math.ceil(len(content) / 3.5),
                      "turn_number": turn, "source": source, "pinned": pinned})

    item("system", "system", s.system, pinned=True)
    for ei, ex in enumerate(s.exchanges):
        turn, after_result = turn + (ei > 0), False
        item("chronicle", "user", ex.user)
        for st in ex.steps:
            if after_result:
                turn += 1
            if st.text:
                item("chronicle", "agent", st.text)
            for c in st.calls:
                args = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}"
                                 for k, v in abs_args(c, s.cwd).items())
                item("workspace", f"tool:{c.tool}", f"{c.tool}({args})\n"
                     + tool_text(c, files, s.cwd))
            after_result = bool(st.calls)  # the model is called again after its results
    session = {"session_id": s.sid, "scope_id": f"silas/{s.sid}", "profile": "coding",
               "turns": turn + 1, "items": items}
    return f"{s.sid}.json", json.dumps(session, indent=1, ensure_ascii=False)
