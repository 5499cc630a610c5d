"""Compression-probe plans written from a transcript (``--probes rules``).

Compression points are where the context would be compressed: the turns at
which the window of the replay (Tier-1 hygiene only) first holds more than
1×, 2× and 3× the eviction threshold of the case's budget (at most three;
each at least ``MIN_GAP`` turns after the last). A session that never gets
that full is compressed once, at 60 % of its turns.

At each point the four probe types ask about facts of the history older
than the turns a strategy keeps verbatim (``RECENT`` turns; all earlier facts
when that leaves none): recall (errors, commands, versions), artifact (files
created, modified, examined), continuation (open tasks) and decision. A probe
expects at most ``MAX_FACTS`` facts, spread evenly over the session so far,
and every one of them is, by construction, shown by an item before its cut;
the suite loader checks that again for hand-written plans.
"""

from __future__ import annotations

from silas_exp.data.transcripts.build import Draft
from silas_exp.probes.schema import ProbePlan, ProbeSpec

MIN_GAP = 4
RECENT = 6
MAX_FACTS = 6
MAX_EVENTS = 3
TYPES = {
    "recall": (("error", "command", "version"),
               "Which errors came up in this session so far, and which commands were run?"),
    "artifact": (("created", "modified", "examined"),
                 "Which files have been created, modified or examined in this session so far?"),
    "continuation": (("todo",), "Which tasks are still open?"),
    "decision": (("decision", "alternative"),
                 "Which decisions about the approach were made so far, and why?"),
}


def compression_points(window_tokens: list[int], threshold: float, turns: int) -> list[int]:
    points: list[int] = []
    level = 1
    for turn, used in enumerate(window_tokens):
        if level > MAX_EVENTS:
            break
        if used > level * threshold and (not points or turn - points[-1] >= MIN_GAP) \
                and turn >= MIN_GAP:
            points.append(turn)
            level += 1
    if not points and turns > MIN_GAP:
        points = [max(MIN_GAP, int(turns * 0.6))]
    return [p for p in points if p < turns]


def _spread(items: list[str], n: int) -> list[str]:
    if len(items) <= n:
        return items
    step = (len(items) - 1) / (n - 1)
    return [items[round(i * step)] for i in range(n)]


def older_than(drafts: list[Draft], cut: int) -> list[Draft]:
    """The history a strategy compresses at ``cut``: items older than the last
    ``RECENT`` turns, or every earlier item when that leaves none."""
    return [d for d in drafts if d.turn < cut - RECENT] or [d for d in drafts if d.turn < cut]


def probe_plan(drafts: list[Draft], points: list[int], sid: str) -> ProbePlan | None:
    """Probes at each compression point; None when no point has a fact to ask about."""
    probes: list[ProbeSpec] = []
    used_points: list[int] = []
    for cut in points:
        older = older_than(drafts, cut)
        event = len(used_points)
        made = 0
        for ptype, (kinds, question) in TYPES.items():
            facts = list(dict.fromkeys(f for d in older for f in d.facts
                                       if f.split(":", 1)[0] in kinds))
            if not facts:
                continue
            probes.append(ProbeSpec(probe_id=f"{sid}-e{event}-{ptype}", type=ptype, cut=event,
                                    question=question, expected=_spread(facts, MAX_FACTS)))
            made += 1
        if made:
            used_points.append(cut)
    if not probes:
        return None
    return ProbePlan(compressions=used_points, probes=probes)
