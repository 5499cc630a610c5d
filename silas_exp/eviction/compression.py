"""Compression strategies (config group ``eviction``), compared with Silas's
two-tier eviction on the same probes.

They act at compression events only (``compress``; ``step`` does nothing):
the system zone and the last ``keep_recent_turns`` turns stay verbatim, and
the older history is shaped by the strategy:

* ``keep_all``     — nothing removed (the upper reference);
* ``truncate``     — older history dropped, no summary (aggressive eviction);
* ``masking``      — older tool results replaced by a placeholder, messages kept;
* ``anchored``     — a persistent structured summary (sections per fact kind),
                     updated incrementally: each event merges the newly dropped
                     history into the summary kept from the last event;
* ``regenerative`` — a structured summary rebuilt from scratch each event from
                     what is visible then (the last summary + the newer items);
* ``opaque``       — a compact summary without structure, rebuilt each event.

Summaries are model calls (task ``summary``) through the LLM layer. With the
simulated backend they are extractive, and their retention is documented in
docs/probes.md and implemented by ``simulated_summary`` below: the facts of the
dropped items, and for an item that carries none, the facts its text shows
(:mod:`silas_exp.facts.extract`). A summary that comes out empty leaves the
window as truncate would; the probe pipeline counts those events
(``probe.empty_summaries``) and the job prints a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from silas_exp.context.budget import count_tokens
from silas_exp.context.window import LiveItem, Window
from silas_exp.eviction.base import StrategyDeps, StrategySettings, register_strategy
from silas_exp.facts.extract import text_facts
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.llm.simulated import register_responder
from silas_exp.schema.eviction import ContextZone

SECTION_TITLES = {
    "error": "Errors seen", "command": "Commands run", "version": "Versions",
    "created": "Files created", "modified": "Files modified", "examined": "Files examined",
    "decision": "Decisions", "alternative": "Alternatives considered", "todo": "Open tasks",
}
SUMMARY_PROMPTS = {
    "anchored": ("Update the structured session summary below with the messages that follow. Keep "
                 "every section (one '- kind: value | detail' line per fact); add new facts, keep "
                 "old ones unless they are superseded."),
    "regenerative": ("Write a structured summary of the session below from scratch, one section "
                     "per kind, one '- kind: value | detail' line per fact."),
    "opaque": "Summarise the session below in one short paragraph.",
}


class CompressionSettings(StrategySettings):
    keep_recent_turns: int = Field(default=6, ge=0)
    summary_max_tokens: int = Field(default=1024, ge=16)


class SummarySettings(CompressionSettings):
    style: Literal["anchored", "regenerative", "opaque"] = "anchored"


def _older(window: Window, turn: int, keep: int) -> list[LiveItem]:
    return [it for it in window
            if it.evictable and it.born <= turn - keep and not it.kind == "summary"]


def _summary_item(text: str, turn: int, n: int) -> LiveItem:
    tokens = count_tokens(text)
    return LiveItem(ctx_id=f"summary-{n}", zone=ContextZone.CHRONICLE, kind="summary",
                    full_tokens=tokens, tokens=tokens, born=turn, last_ref=turn, pinned=True,
                    snippet=text[:160], text=text)


class KeepAll:
    def __init__(self, settings: CompressionSettings, deps: StrategyDeps) -> None:
        self.settings = settings

    def step(self, window: Window, turn: int) -> None:
        return None

    def compress(self, window: Window, turn: int) -> None:
        return None


class Truncate(KeepAll):
    def compress(self, window: Window, turn: int) -> None:
        for it in _older(window, turn, self.settings.keep_recent_turns):
            window.evict(it.ctx_id)


class Masking(KeepAll):
    def compress(self, window: Window, turn: int) -> None:
        for it in _older(window, turn, self.settings.keep_recent_turns):
            if it.kind == "tool_result" and not it.masked:
                it.mask()


class Summarise(KeepAll):
    """anchored / regenerative / opaque: older items are replaced by one summary item."""

    def __init__(self, settings: SummarySettings, deps: StrategyDeps) -> None:
        self.settings, self.deps = settings, deps
        self.events = 0

    def compress(self, window: Window, turn: int) -> None:
        older = _older(window, turn, self.settings.keep_recent_turns)
        previous = next((it for it in window if it.kind == "summary"), None)
        if not older:
            return
        style = self.settings.style
        history = "\n\n".join(it.text for it in older)
        prior = previous.text if previous is not None else ""
        user = (f"Current summary:\n{prior or '(none)'}\n\nMessages:\n{history}" if style == "anchored"
                else f"{prior}\n\n{history}".strip())
        # an item nobody annotated still shows facts a summary would keep
        facts = [f for it in older for f in (it.facts or text_facts(it.kind, it.text))]
        sim = {"style": style, "previous": prior, "facts": facts,
               "max_tokens": self.settings.summary_max_tokens}
        request = LLMRequest(task="summary", model=self.deps.model_id, system=SUMMARY_PROMPTS[style],
                             cache_system=True, messages=(Message("user", user),),
                             max_tokens=self.settings.summary_max_tokens, temperature=0.0,
                             sim=sim)
        response = self.deps.llm.complete(request, namespace=f"{self.deps.namespace}/summary{self.events}")
        self.events += 1
        text = str(response.data["text"]) if response.data and "text" in response.data else response.text
        for it in older:
            window.evict(it.ctx_id)
        if previous is not None:
            window.evict(previous.ctx_id)
        window.add(_summary_item(text, turn, self.events))


@register_strategy("keep_all", CompressionSettings, description="no compression (upper reference)")
def _keep_all(settings: CompressionSettings, deps: StrategyDeps) -> KeepAll:
    return KeepAll(settings, deps)


@register_strategy("truncate", CompressionSettings,
                   description="drop history older than keep_recent_turns (aggressive eviction)")
def _truncate(settings: CompressionSettings, deps: StrategyDeps) -> Truncate:
    return Truncate(settings, deps)


@register_strategy("masking", CompressionSettings, description="observation masking only")
def _masking(settings: CompressionSettings, deps: StrategyDeps) -> Masking:
    return Masking(settings, deps)


class AnchoredSettings(SummarySettings):
    style: Literal["anchored"] = "anchored"


class RegenerativeSettings(SummarySettings):
    style: Literal["regenerative"] = "regenerative"


class OpaqueSettings(SummarySettings):
    style: Literal["opaque"] = "opaque"


for _cls, _desc in ((AnchoredSettings, "anchored iterative structured summary"),
                    (RegenerativeSettings, "structured summary regenerated each compression"),
                    (OpaqueSettings, "compact unstructured summary")):
    register_strategy(_cls.model_fields["style"].default, _cls, needs={"llm"}, description=_desc)(Summarise)


# ---- simulated summariser ---------------------------------------------------

REGENERATED_SECTION_CAP = 3     # regenerative: newest facts kept per section
OPAQUE_TOKEN_CAP = 90           # opaque: paragraph length


def _facts_of_summary(text: str) -> list[str]:
    """Facts written as '- kind: value | detail' lines in an earlier summary."""
    from silas_exp.facts.fact import parse_answer

    facts, _, _ = parse_answer(text)
    return [f"{f.kind}:{f.value}" + (f"|{f.detail}" if f.detail else "") for f in facts]


def _sections(facts: Sequence[str], cap: int | None) -> str:
    from silas_exp.facts.fact import Fact

    by_kind: dict[str, list[Fact]] = {}
    for raw in facts:
        f = Fact.parse(raw)
        bucket = by_kind.setdefault(f.kind, [])
        if f.key() not in {g.key() for g in bucket}:
            bucket.append(f)
    out = []
    for kind, title in SECTION_TITLES.items():
        items = by_kind.get(kind, [])
        if cap is not None:
            items = items[-cap:]
        if items:
            out.append(f"## {title}\n" + "\n".join(f.line() for f in items))
    return "\n".join(out)


@register_responder("summary")
def simulated_summary(request: LLMRequest, rng) -> dict:
    """Extractive summaries from the planted facts of the dropped items:

    * anchored: every fact of the previous summary and of the new items, in
      sections, with details;
    * regenerative: rebuilt from the visible text: facts carried over from the
      previous summary lose their detail (the regenerated summary paraphrases
      them), and each section keeps only its 3 newest facts;
    * opaque: fact values (no kinds, no details) newest first, in one
      paragraph of at most 90 tokens.
    """
    sim = request.sim or {}
    style, new = sim.get("style", "anchored"), list(sim.get("facts", []))
    previous = _facts_of_summary(sim.get("previous", ""))
    if style == "anchored":
        text = _sections(previous + new, cap=None)
    elif style == "regenerative":
        carried = [raw.split("|", 1)[0] for raw in previous]
        text = _sections(carried + new, cap=REGENERATED_SECTION_CAP)
    else:
        values, used = [], 0
        prior_values = [v.strip() for v in sim.get("previous", "").split(";") if v.strip()]
        for raw in reversed(prior_values + [f.split(":", 1)[1].split("|", 1)[0] for f in new]):
            if raw in values:
                continue
            cost = count_tokens(raw) + 1
            if used + cost > OPAQUE_TOKEN_CAP:
                break
            values.append(raw)
            used += cost
        text = "; ".join(values)
    return {"text": text}
