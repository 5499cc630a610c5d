"""Facts a summary can keep, read from an item's own text by rule.

Imported and generated sessions carry facts on their items
(``SessionItem.facts``); a session written by hand may not. The simulated
summariser then reads the facts from the text of the items it drops, with the
same rules the importer uses, so a summary strategy never silently compresses
to truncate's output because nobody annotated the items:

* ``error:<line>``    — the first ``SomethingError: …`` / ``error: …`` /
  ``FAILED …`` / ``fatal: …`` / ``Traceback …`` line (≤ 160 chars);
* ``command:<cmd>``   — a shell prompt line ``$ cmd`` (≤ 120 chars);
* ``version:<name v>`` — ``name==1.2``, ``name@1.2``, ``name v1.2``,
  ``name version 1.2``, ``name 1.2.3``;
* ``examined:<path>`` — a file path a tool result names;
* ``decision:<sentence>`` — an assistant sentence that commits to a course
  ("I'll use …", "Let's go with …", "instead of …").

Every value is copied verbatim from the text (whitespace folded, ``|`` made
``/``), so a probe about it can be checked against the session.
"""

from __future__ import annotations

import re

from silas_exp.facts.tools import paths_in

MAX_COMMAND = 120
MAX_ERROR = 160
MAX_DECISION = 200
MAX_PATHS = 8  # paths kept per item (a directory listing names hundreds)
ERROR_LINE = re.compile(
    r"^\s*(?:E\s+)?((?:[A-Za-z_][\w.]*(?:Error|Exception)\b:?.*)|(?:error(?:\[\w+\])?:.*)|"
    r"(?:FAILED .*)|(?:fatal: .*)|(?:Traceback .*))$", re.IGNORECASE | re.MULTILINE)
DECISION = re.compile(
    r"\b(?:I'll use|I will use|let's use|let's go with|we'll go with|I'll go with|decided to|"
    r"decide to|instead of|rather than|the fix is to|the best approach is|I'll switch to|"
    r"we should use)\b", re.IGNORECASE)
# what an error result says went wrong, when no line has an error's usual shape
FAILURE = re.compile(r"\b(?:fail(?:s|ed|ure)?|invalid|denied|refused|not found|no such|cannot|"
                     r"can't|unable to|did not|does not exist)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_PROMPT = re.compile(r"^\s*\$ (\S.*)$", re.MULTILINE)
_VERSION = re.compile(r"(?<![\w.\-])([A-Za-z][\w.\-]*(?:(?:==|@| v| version )\d+\.\d+(?:\.\d+)*"
                      r"| \d+\.\d+\.\d+))(?![\w.])")


def clean(value: str, limit: int) -> str:
    value = " ".join(value.replace("|", "/").split())
    return value[:limit].rstrip()


def error_line(text: str, *, first_line: bool = True) -> str | None:
    """The error a text reports. When no line looks like one and the text is
    known to be an error result (``first_line``): its first line that says what
    failed ("failed", "did not", "not found" …), else its first line — aider
    writes its token report before the failure it reports."""
    m = ERROR_LINE.search(text)
    if m:
        return clean(m.group(1), MAX_ERROR) or None
    if not first_line:
        return None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    line = next((ln for ln in lines if FAILURE.search(ln)), lines[0] if lines else "")
    return clean(line, MAX_ERROR) or None


def decisions(text: str) -> list[str]:
    return [clean(s, MAX_DECISION) for s in _SENTENCE_END.split(text)
            if DECISION.search(s) and len(s.strip()) >= 12]


def text_facts(kind: str, text: str) -> list[str]:
    """Facts (``kind:value``) an item of ``kind`` shows in ``text``."""
    facts: list[str] = []
    if kind == "agent_response":
        facts += [f"decision:{d}" for d in decisions(text)]
    elif kind in ("tool_result", "subscription"):
        line = error_line(text, first_line=False)
        if line:
            facts.append(f"error:{line}")
        facts += [f"command:{clean(c, MAX_COMMAND)}" for c in _PROMPT.findall(text)]
        facts += [f"version:{clean(v, 80)}" for v in _VERSION.findall(text)]
        facts += [f"examined:{clean(p, 200)}" for p in paths_in(text)[:MAX_PATHS]]
    return [f for f in dict.fromkeys(facts) if f.split(":", 1)[1]]
