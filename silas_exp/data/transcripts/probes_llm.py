"""Compression probes written by a model (``--probes llm``).

At each compression point (the same points as ``--probes rules``) the model
reads the history a strategy would compress — items older than the last
``RECENT`` turns, in order, as ``[kind] text`` — and answers with structured
output (:data:`PROBE_SCHEMA`): probes of the four types, each with a question
and the facts (``kind:value``) a good answer states, values copied verbatim.

Nothing the model writes is trusted: every expected fact must parse, have a
kind of its probe's type and occur (case and spaces folded) in the session
before the compression point, else it is dropped; a probe left without facts
is dropped. Both counts go to the import report per type, and a point whose
call fails is skipped with a note — never filled in by rules.

With the simulated backend the "model" proposes the facts the rules find,
phrased as questions, and misquotes a share of them (``SIM_MISQUOTE``), so
verification has something to catch; documented in docs/organic.md.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from silas_exp.data.transcripts.build import Draft
from silas_exp.data.transcripts.probes import MAX_FACTS, TYPES, older_than
from silas_exp.errors import LLMError
from silas_exp.facts.fact import Fact, norm
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.llm.simulated import register_responder
from silas_exp.probes.schema import ProbePlan, ProbeSpec

MAX_HISTORY_CHARS = 60_000  # history sent per point: the newest part when longer
SIM_MISQUOTE = 0.15         # simulated writer: P(a fact's value is misquoted)
PROBE_SCHEMA = {
    "type": "object",
    "properties": {"probes": {"type": "array", "items": {
        "type": "object",
        "properties": {"type": {"type": "string", "enum": list(TYPES)},
                       "question": {"type": "string"},
                       "expected": {"type": "array", "items": {"type": "string"}}},
        "required": ["type", "question", "expected"], "additionalProperties": False}}},
    "required": ["probes"], "additionalProperties": False,
}
SYSTEM = (
    "You write compression probes for an agent session. The history below is about to be "
    "compressed; write questions that test whether the compressed context still lets the agent "
    "continue. Types: recall (exact error messages, commands, versions), artifact (files created, "
    "modified, examined), continuation (open tasks, failing tests), decision (choices made and "
    "why). For each probe list the facts a correct answer states, one string each, as "
    "'kind:value' with kind one of: " + ", ".join(sorted({k for ks, _ in TYPES.values() for k in ks}))
    + f". Copy every value verbatim from the history. At most {MAX_FACTS} facts per probe; "
    "skip a type the history gives nothing for.")


@dataclass
class ProbeCounts:
    """What verification kept and dropped, per probe type."""

    kept: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    facts_dropped: Counter[str] = field(default_factory=Counter)  # by reason
    failed_points: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"kept": dict(self.kept), "dropped": dict(self.dropped),
                "facts_dropped": dict(self.facts_dropped)}


def history_text(drafts: list[Draft], cut: int) -> tuple[list[Draft], str]:
    older = older_than(drafts, cut)
    text = "\n\n".join(f"[{d.kind}] {d.text}" for d in older)
    return older, text[-MAX_HISTORY_CHARS:]


def verify(ptype: str, expected: list[Any], shown: str, counts: ProbeCounts) -> list[str]:
    """The expected facts that hold: they parse, fit the type, occur in ``shown``."""
    kinds = TYPES[ptype][0]
    kept: list[str] = []
    for raw in expected:
        try:
            fact = Fact.parse(str(raw))
        except ValueError:
            counts.facts_dropped["unparsable"] += 1
            continue
        if fact.kind not in kinds:
            counts.facts_dropped["kind_not_of_type"] += 1
        elif norm(fact.value) not in shown:
            counts.facts_dropped["not_in_session"] += 1
        else:
            kept.append(f"{fact.kind}:{fact.value}")
    return list(dict.fromkeys(kept))[:MAX_FACTS]


def llm_probe_plan(drafts: list[Draft], points: list[int], sid: str, llm: Any, model_id: str,
                   counts: ProbeCounts) -> ProbePlan | None:
    probes: list[ProbeSpec] = []
    used: list[int] = []
    for cut in points:
        older, history = history_text(drafts, cut)
        shown = norm(" ".join(d.text for d in drafts if d.turn < cut))
        request = LLMRequest(
            task="probe_gen", model=model_id, system=SYSTEM, cache_system=True,
            messages=(Message("user", f"Session history:\n\n{history}"),), max_tokens=2048,
            temperature=0.0, output_schema=PROBE_SCHEMA,
            sim={"facts": [f for d in older for f in d.facts]})
        try:
            response = llm.complete(request, namespace=f"import/{sid}/probes@{cut}")
            proposed = (response.data or json.loads(response.text)).get("probes", [])
        except (LLMError, ValueError, AttributeError) as exc:
            counts.failed_points.append(f"turn {cut}: {type(exc).__name__}: {exc}")
            continue
        event, made = len(used), 0
        for n, p in enumerate(proposed if isinstance(proposed, list) else []):
            ptype = p.get("type") if isinstance(p, dict) else None
            if ptype not in TYPES or not str(p.get("question", "")).strip():
                counts.dropped["malformed"] += 1
                continue
            facts = verify(ptype, list(p.get("expected") or []), shown, counts)
            if not facts:
                counts.dropped[ptype] += 1
                continue
            counts.kept[ptype] += 1
            probes.append(ProbeSpec(probe_id=f"{sid}-e{event}-{ptype}-{n}", type=ptype, cut=event,
                                    question=str(p["question"]).strip(), expected=facts))
            made += 1
        if made:
            used.append(cut)
    return ProbePlan(compressions=used, probes=probes) if probes else None


@register_responder("probe_gen")
def simulated_probe_writer(request: LLMRequest, rng: np.random.Generator) -> dict:
    """The rules' facts per type, as probes; a share of values misquoted."""
    facts = list(dict.fromkeys((request.sim or {}).get("facts", [])))
    out = []
    for ptype, (kinds, question) in TYPES.items():
        chosen = [f for f in facts if f.split(":", 1)[0] in kinds][-MAX_FACTS:]
        if not chosen:
            continue
        expected = [f"{f.split('|', 1)[0]}-v2" if rng.random() < SIM_MISQUOTE else f.split("|", 1)[0]
                    for f in chosen]
        out.append({"type": ptype, "question": question, "expected": expected})
    return {"probes": out}
