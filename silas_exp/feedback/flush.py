"""Flush-time keep-backs (Silas §19.3).

At flush the main model sees each candidate's ctx_id, relevance score and a
snippet and may answer ``exclude_ctx_ids``. No answer within
``eviction_feedback_timeout_ms`` resolves the proposal as ``auto`` (evict all).
Every resolution is recorded in the feedback store.

The simulated main model (responder ``keepback``) decides from ground truth
passed in ``LLMRequest.sim`` (never shown to scorers): a candidate needed
within the look-ahead horizon is kept back with probability ``recall``
(halved for grade-1 needs), any other with probability ``false_keep``. Its
answer latency is log-normal (``latency_median_ms``, ``latency_sigma``), so a
share of flushes time out exactly as a slow real model's would.

Both draws are counter-based (``silas_exp.llm.simulated.KeyedDraws``), keyed by
the repeat's namespace and the flush: (turn, flush of the turn), and for a
keep-back the candidate's ctx_id. The variants of a repeat share the
namespace, so a candidate proposed at the same flush by the control and by a
variant is kept back or not alike, and a flush times out alike: common random
numbers, item by item, whatever else the two proposals hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from silas_exp.context.stats import tuple_maker
from silas_exp.context.window import LiveItem, one_line
from silas_exp.errors import LLMError
from silas_exp.feedback.store import CandidateState, DiscardingStore, FeedbackStore
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.llm.simulated import KeyedDraws, register_responder
from silas_exp.schema.eviction import (
    EvictionExclusion,
    ExclusionRecord,
    FeedbackRecord,
    ProposalRecord,
)

KEEPBACK_SCHEMA = {
    "type": "object",
    "properties": {
        "exclude_ctx_ids": {"type": "array", "items": {"type": "string"}},
        "reasons": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"ctx_id": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["ctx_id", "reason"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["exclude_ctx_ids"],
    "additionalProperties": False,
}
SYSTEM = (
    "You are the main model of an agent harness. The harness is about to evict the context "
    "items listed below to free space. Keep back (exclude) only items you will still need for "
    "the task; answer with exclude_ctx_ids and a short reason for each."
)


class KeepbackConfig(BaseModel):
    """How the main model keeps candidates back (config ``model.keepback``):
    the simulated main model's recall and false keeps within the look-ahead
    ``horizon``, its answer latency, and the timeout after which a proposal
    resolves as ``auto``."""

    model_config = ConfigDict(extra="forbid")
    recall: float = Field(default=0.85, ge=0.0, le=1.0, allow_inf_nan=False)
    false_keep: float = Field(default=0.05, ge=0.0, le=1.0, allow_inf_nan=False)
    horizon: int = Field(default=20, ge=1)
    latency_median_ms: float = Field(default=700.0, gt=0, allow_inf_nan=False)
    latency_sigma: float = Field(default=0.6, ge=0, allow_inf_nan=False)
    eviction_feedback_timeout_ms: float = Field(default=2000.0, gt=0, allow_inf_nan=False)


@dataclass(frozen=True)
class MainModel:
    """The main model that answers flushes: its id, its LLM backend kind, and
    how it keeps back (the config's ``model.main_id``, ``model.backend`` and
    ``model.keepback``)."""

    model_id: str
    backend: str
    keepback: KeepbackConfig = field(default_factory=KeepbackConfig)


def keepback_line(ctx_id: str, score: float, snippet: str) -> str:
    """A candidate's line in the keep-back prompt."""
    return f"{ctx_id} | score={score:.2f} | {one_line(snippet)}"


def keepback_message(goal: str, lines: list[str]) -> str:
    """The keep-back prompt's user message: the goal, then one line per candidate."""
    return f"Current goal: {goal or '-'}\nCandidates:\n" + "\n".join(lines)


@dataclass
class FlushOutcome:
    feedback: FeedbackRecord
    excluded: frozenset[str]
    latency_ms: float


class KeepBackBroker:
    """Presents proposals to the main model, applies the timeout, records feedback."""

    def __init__(
        self, main: MainModel, llm, store: FeedbackStore | DiscardingStore, namespace: str, seed: int,
        need_within: Callable[[str, int, int], int],
    ) -> None:
        self.main, self.s = main, main.keepback
        self.llm, self.store, self.namespace = llm, store, namespace
        self.seed, self._need_within = seed, need_within
        self._latency_draws = KeyedDraws(seed, namespace, "keepback.latency")
        self._last_flush = (-1, 0)  # (turn, flushes at that turn so far)

    @property
    def fresh(self) -> bool:
        """Whether the broker has resolved no flush yet (its draws start at the first)."""
        return self._last_flush == (-1, 0)

    def _flush_counter(self, turn: int) -> tuple[int, int]:
        """(turn, k) of this flush: k counts the flushes at ``turn`` (an explicit
        flush can follow the turn's own), the key of its draws."""
        last_turn, k = self._last_flush
        self._last_flush = counter = (turn, k + 1 if turn == last_turn else 0)
        return counter

    def _sim_latency(self, counter: tuple[int, int]) -> float:
        z = self._latency_draws.normal(counter)
        return float(self.s.latency_median_ms * math.exp(self.s.latency_sigma * z))

    def resolve(self, proposal: ProposalRecord, items: Mapping[str, LiveItem], turn: int,
                goal: str = "") -> FlushOutcome:
        # one pass over the candidates: the prompt's lines, the items, the ground truth
        lines: list[str] = []
        chosen: list[LiveItem] = []
        needed: dict[str, int] = {}
        need_within, horizon = self._need_within, self.s.horizon
        for c in proposal.candidates:
            cid = c.ctx_id
            item = items[cid]
            lines.append(keepback_line(cid, c.relevance_score, item.snippet))
            chosen.append(item)
            needed[cid] = need_within(cid, turn, horizon)
        counter = self._flush_counter(turn)
        request = LLMRequest(
            task="keepback", model=self.main.model_id, system=SYSTEM, cache_system=True,
            messages=(Message("user", keepback_message(goal, lines)),),
            max_tokens=1024, temperature=0.0, output_schema=KEEPBACK_SCHEMA,
            sim={"needed": needed, "recall": self.s.recall, "false_keep": self.s.false_keep,
                 "draw": counter},
            deadline_s=self.s.eviction_feedback_timeout_ms / 1000.0,
        )
        excluded: dict[str, str | None] = {}
        resolved_by = "auto"
        latency = 0.0
        try:
            response = self.llm.complete(request, namespace=self.namespace)
            latency = (self._sim_latency(counter) if self.main.backend == "simulated"
                       else response.latency_ms)
            if latency <= self.s.eviction_feedback_timeout_ms:
                resolved_by = "llm"
                reasons = {r["ctx_id"]: r["reason"] for r in response.data.get("reasons", [])}
                excluded = {cid: reasons.get(cid) for cid in response.data["exclude_ctx_ids"]
                            if cid in needed}  # a candidate of this proposal
        except LLMError:
            resolved_by = "auto"  # no usable answer in time: evict all candidates
        feedback = feedback_record(proposal, resolved_by, excluded)
        self.store.record(proposal, feedback, candidate_states(chosen, turn))
        return FlushOutcome(feedback, frozenset(excluded), latency)


def candidate_state(item: LiveItem, turn: int) -> CandidateState:
    """What the feedback store keeps of a candidate besides its record."""
    return CandidateState._make((item.kind, item.status, item.masked,  # no Python-level __new__
                                 item.completed(turn), item.relevance))


def candidate_states(chosen: list[LiveItem], turn: int) -> list[CandidateState]:
    """``candidate_state`` of each item, with ``LiveItem.completed`` inlined."""
    make = tuple_maker(CandidateState)
    return [make((i.kind, i.status, i.masked,
                  i.completed_turn is not None and i.completed_turn <= turn, i.relevance))
            for i in chosen]


def feedback_record(proposal: ProposalRecord, resolved_by: str,
                    excluded: Mapping[str, str | None]) -> FeedbackRecord:
    """How a proposal was resolved. The reasons come from the main model, from
    outside the harness: one that is not text goes through the schema model,
    which coerces it or raises its validation error."""
    if not excluded:  # most proposals: nothing kept back
        return FeedbackRecord(
            proposal.proposal_id, proposal.scope_id, datetime.now(UTC), resolved_by,  # type: ignore[arg-type]
            tuple([c.ctx_id for c in proposal.candidates]), (),
        )
    scores = {c.ctx_id: c.relevance_score for c in proposal.candidates}
    if all(why is None or type(why) is str for why in excluded.values()):
        exclusions = tuple(ExclusionRecord(cid, scores[cid], why) for cid, why in excluded.items())
    else:
        exclusions = tuple(ExclusionRecord(**EvictionExclusion(
            ctx_id=cid, relevance_score=scores[cid], exclude_reason=why).model_dump())
            for cid, why in excluded.items())
    return FeedbackRecord(
        proposal.proposal_id, proposal.scope_id, datetime.now(UTC), resolved_by,  # type: ignore[arg-type]
        tuple([c.ctx_id for c in proposal.candidates if c.ctx_id not in excluded]), exclusions,
    )


@register_responder("keepback", keyed=True)
def simulated_keepback(request: LLMRequest, draws: KeyedDraws) -> dict:
    sim = request.sim or {}
    needed: Mapping[str, int] = sim.get("needed", {})
    keep, reasons = [], []
    false_keep, recall = sim.get("false_keep", 0.05), sim.get("recall", 0.85)
    # one uniform per candidate, keyed by the flush and its ctx_id; a caller that
    # names no flush gets the request's own key (its fingerprint), so two
    # different requests never share their draws by accident
    counter = sim.get("draw") or (int(request.fingerprint()[:15], 16),)
    uniforms = draws.uniforms(counter, list(needed))
    for (ctx_id, grade), u in zip(needed.items(), uniforms, strict=True):
        p = false_keep if grade <= 0 else recall * (0.5 if grade == 1 else 1.0)
        if u < p:
            keep.append(ctx_id)
            reasons.append({"ctx_id": ctx_id, "reason": "still needed" if grade > 0 else "may need"})
    return {"exclude_ctx_ids": keep, "reasons": reasons}
