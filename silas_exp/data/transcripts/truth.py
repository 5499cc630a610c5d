"""Ground truth derived from the transcript: what later turns actually used.

An item is *needed* at a later turn when that turn uses it. For every use,
the reference goes to the most recent earlier item (an earlier turn) that
shows the thing used — the copy the agent would have to read. Grades:

====  ==============  =========================================================
3     ``edited``      a later edit or write of a file the item showed (the
                      agent changes what it read: ``Read src/app.py`` at turn
                      2, ``Edit src/app.py`` at turn 5 -> the read, grade 3)
3     ``acted_on``    a distinctive string the item showed appears in a later
                      call's arguments (an error string grepped for, an
                      identifier passed to an edit, a commit hash checked out)
2     ``reread``      the same file read again, or run by a later command
                      (``pytest tests/test_app.py`` after it was written)
2     ``quoted``      a later user or assistant message repeats a distinctive
                      string the item showed (``KeyError: 'retry_after'``)
1     ``rerun``       the same command run again: its earlier output is the
                      baseline the new one is compared with
1     ``referred``    a later message refers back ("as I said", "the plan",
                      "earlier", "like before") and shares a distinctive word
                      with an earlier user or assistant message
====  ==============  =========================================================

Distinctive strings are file paths, exception names, snake_case and
camelCase identifiers (6+ characters), and hex hashes (7+ digits, letters and
numbers) that occur in at most ``max(4, 10 %)`` of the session's items; a
string that is everywhere says nothing about which item is needed. Several
rules for the same (turn, item) keep the highest grade. The system prompt is
never referenced (it is pinned). Rule counts go to the import report.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from silas_exp.data.transcripts.build import Draft
from silas_exp.facts.tools import PATH, classify, path_key, paths_in
from silas_exp.schema.session import Reference

GRADES = {"edited": 3, "acted_on": 3, "reread": 2, "quoted": 2, "rerun": 1, "referred": 1}
_TOKEN = re.compile(
    r"\b(?:[A-Z]\w*(?:Error|Exception|Warning)"          # exception names
    r"|[A-Za-z_][a-z0-9]*(?:_[A-Za-z0-9]+)+"             # snake_case
    r"|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"  # camelCase, PascalCase
    r"|(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40})\b")
_BACKREF = re.compile(
    r"\b(?:as (?:i|we|you) (?:said|discussed|decided|planned|mentioned|agreed)|earlier|as before|"
    r"like before|previously|the plan|go back to|you said|we said|as noted|mentioned above)\b",
    re.IGNORECASE)
_WORD = re.compile(r"\b[a-z][a-z\-]{5,}\b")
_STOP = frozenset("""should would could before earlier there their these those which while about
after again always because between different during having itself little people please really
something through whether without another already anything change changes changed thanks
previously mentioned discussed decided planned agreed""".split())
MIN_TOKEN = 6


@dataclass
class DerivedTruth:
    references: list[Reference]
    rules: Counter[str]  # references made per rule (before keeping the highest grade)


def _tokens(text: str) -> set[str]:
    """Distinctive strings outside file paths (paths are matched as files)."""
    text = PATH.sub(" ", text)
    return {t for t in _TOKEN.findall(text) if len(t) >= MIN_TOKEN and "<" not in t}


class _Index:
    """Where each key occurs: item positions in order, with their turns."""

    def __init__(self) -> None:
        self.pos: dict[str, list[int]] = defaultdict(list)
        self.turns: dict[str, list[int]] = defaultdict(list)

    def add(self, key: str, i: int, turn: int) -> None:
        if not self.pos[key] or self.pos[key][-1] != i:
            self.pos[key].append(i)
            self.turns[key].append(turn)

    def latest_before(self, key: str, turn: int) -> int | None:
        """The last item showing ``key`` in a turn before ``turn``."""
        turns = self.turns.get(key)
        if not turns:
            return None
        k = bisect.bisect_left(turns, turn)
        return self.pos[key][k - 1] if k else None


def derive_truth(drafts: list[Draft]) -> DerivedTruth:
    """References (turn, ctx_id, grade 1–3) from the uses later turns make."""
    files, tokens, commands = _Index(), _Index(), _Index()
    words = _Index()
    for i, d in enumerate(drafts):  # what each item showed the agent: its whole text
        if d.kind == "system_prompt":
            continue
        for p in paths_in(d.text):
            files.add(path_key(p), i, d.turn)
        for t in _tokens(d.text):
            tokens.add(t, i, d.turn)
        if d.kind in ("user_message", "agent_response"):
            for w in set(_WORD.findall(d.text.lower())) - _STOP:
                words.add(w, i, d.turn)
    limit = max(4, len(drafts) // 10)
    common = {t for t, pos in tokens.pos.items() if len(pos) > limit}

    best: dict[tuple[int, str], int] = {}
    rules: Counter[str] = Counter()

    def ref(turn: int, i: int | None, rule: str) -> None:
        if i is None or drafts[i].kind == "system_prompt":
            return
        rules[rule] += 1
        key = (turn, drafts[i].ctx_id)
        best[key] = max(best.get(key, 0), GRADES[rule])

    last_opened: str | None = None
    for j, d in enumerate(drafts):
        if d.kind == "system_prompt":
            continue
        t = d.turn
        if d.kind == "tool_result" and d.tool is not None and d.args:
            info = classify(d.tool, d.args)
            paths = list(info.paths)
            if info.action == "edit" and not paths and last_opened:
                paths = [last_opened]  # SWE-agent "edit 12:15" edits the open file
            for p in paths:
                key = path_key(p)
                if info.action in ("edit", "write"):
                    ref(t, files.latest_before(key, t), "edited")
                elif info.action in ("read", "run"):
                    ref(t, files.latest_before(key, t), "reread")
                if info.action == "read":
                    last_opened = p
            if info.command:
                ref(t, commands.latest_before(info.command, t), "rerun")
                commands.add(info.command, j, t)
            for tok in _tokens(d.action) - common:  # what the call did with earlier content
                ref(t, tokens.latest_before(tok, t), "acted_on")
        elif d.kind in ("user_message", "agent_response"):
            for tok in _tokens(d.text) - common:
                ref(t, tokens.latest_before(tok, t), "quoted")
            if _BACKREF.search(d.text):
                shared = set(_WORD.findall(d.text.lower())) - _STOP
                cands = [words.latest_before(w, t) for w in shared]
                cands = [c for c in cands if c is not None]
                if cands:
                    ref(t, max(cands), "referred")
    refs = [Reference(turn=turn, ctx_id=cid, grade=g) for (turn, cid), g in sorted(best.items())]
    return DerivedTruth(refs, rules)
