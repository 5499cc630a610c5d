"""The main model answers a probe from what the compressed context still shows.

With the simulated backend (documented in docs/probes.md): every expected
fact whose value appears in the context is stated with probability
``RECALL`` (0.95), with its detail when the detail appears too; a fact whose
value is absent is, with probability ``GUESS`` (0.15), replaced by an
invented value (which the judge must catch). The probe's expected facts reach
the simulated model through ``LLMRequest.sim`` only; a real model sees the
context and the question."""

from __future__ import annotations

import numpy as np

from silas_exp.facts.fact import KINDS, Fact, norm
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.llm.simulated import register_responder
from silas_exp.probes.schema import ProbeSpec

RECALL, GUESS = 0.95, 0.15
ANSWER_SYSTEM = (
    "You are the coding agent of the session shown as context; some of its history was "
    "compressed. Answer the question from the context only. Write one line per fact, exactly "
    "'- kind: value | detail' (detail optional), where kind is one of " + ", ".join(KINDS) + ". "
    "Copy names, paths, commands and messages verbatim. If the context does not tell you, "
    "leave it out rather than guess."
)


def answer_request(probe: ProbeSpec, context: str, model_id: str) -> LLMRequest:
    return LLMRequest(
        task="probe_answer", model=model_id, system=ANSWER_SYSTEM, cache_system=True,
        messages=(Message("user", f"Context:\n{context}\n\nQuestion: {probe.question}"),),
        max_tokens=1024, temperature=0.0, sim={"expected": list(probe.expected)},
    )


@register_responder("probe_answer")
def simulated_answer(request: LLMRequest, rng: np.random.Generator) -> dict:
    text = norm(request.messages[-1].content.split("\n\nQuestion:", 1)[0])
    lines = []
    for raw in (request.sim or {}).get("expected", []):
        fact = Fact.parse(raw)
        if norm(fact.value) in text:
            if rng.random() < RECALL:
                lines.append(fact.line(with_detail=bool(fact.detail) and norm(fact.detail) in text))
        elif rng.random() < GUESS:
            lines.append(Fact(fact.kind, f"{fact.value.split()[0]} {int(rng.integers(100, 999))}").line())
    return {"text": "\n".join(lines)}
