"""Facts an imported item carries (``SessionItem.facts``), read from what the
transcript shows; the summariser keeps them and probes ask about them.

Rules (each fact's value is copied verbatim from the item's own text, so a
probe about it can be checked against the session):

* ``examined:<path>`` — a read call names the path;
* ``modified:<path>`` — an edit call, or a write of a file seen before;
* ``created:<path>``  — a write of a file not seen before in the session;
* ``command:<cmd>``   — a run call's command (first line, ≤ 120 chars);
* ``error:<line>``    — an error result's first ``SomethingError: …`` /
  ``error: …`` / ``FAILED …`` line (≤ 160 chars), else its first line that
  says what failed, else its first line;
* ``todo:<task>``     — a pending or in-progress task of a todo call;
* ``decision:<sentence>`` — an assistant sentence that commits to a course
  ("I'll use …", "Let's go with …", "we decided …", "instead of …").

A value never holds ``|`` (the fact separator) or a line break.
"""

from __future__ import annotations

from silas_exp.data.transcripts.build import Draft
from silas_exp.facts.extract import MAX_COMMAND, MAX_DECISION, clean, decisions, error_line
from silas_exp.facts.fact import norm
from silas_exp.facts.tools import classify, path_key


def extract_facts(drafts: list[Draft]) -> int:
    """Fill ``facts`` of every draft in place (from its composed ``text``);
    return how many were found."""
    seen_files: set[str] = set()
    found = 0
    for d in drafts:
        facts: list[str] = []
        if d.kind == "tool_result" and d.args:
            info = classify(d.tool, d.args)
            for p in info.paths:
                key = path_key(p)
                if info.action == "read":
                    facts.append(f"examined:{clean(p, 200)}")
                elif info.action == "edit":
                    facts.append(f"modified:{clean(p, 200)}")
                elif info.action == "write":
                    facts.append(f"{'modified' if key in seen_files else 'created'}:{clean(p, 200)}")
                seen_files.add(key)
            if info.action == "run" and info.command:
                facts.append(f"command:{clean(info.command, MAX_COMMAND)}")
            if info.action == "todo":
                for todo in d.args.get("todos", []) if isinstance(d.args.get("todos"), list) else []:
                    if isinstance(todo, dict) and todo.get("status") in ("pending", "in_progress") \
                            and isinstance(todo.get("content"), str):
                        facts.append(f"todo:{clean(todo['content'], MAX_DECISION)}")
            if d.status == "error" and d.result:
                line = error_line(d.result)
                if line:
                    facts.append(f"error:{line}")
        elif d.kind == "agent_response":
            facts += [f"decision:{s}" for s in decisions(d.text)]
        shown = norm(d.text)  # a fact whose value the item does not show is not kept
        facts = [f for f in dict.fromkeys(facts)
                 if f.split(":", 1)[1].strip() and norm(f.split(":", 1)[1]) in shown]
        d.facts = list(dict.fromkeys(d.facts + facts))
        found += len(facts)
    return found
