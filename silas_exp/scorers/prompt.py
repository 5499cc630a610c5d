"""Variant B: a small model scores items from a prompt built from
``conf/prompt/`` templates, with guidance derived from feedback calibration.

With the simulated backend the "small model" is the responder below. Its
behaviour is documented in docs/simulated_llm.md and tested: it starts from
the control heuristic, reads every guidance line of the form
``- zone=<z>: kept back in R% of proposals (overall O%)`` (likewise
``age=<bucket>``) and shifts the logit of matching items by
``clip(6·(R − O), −2.5, 2.5)``, then adds N(0, 0.25) logit noise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from silas_exp.context.window import LiveItem, one_line
from silas_exp.errors import LLMError
from silas_exp.feedback.calibration import age_bucket
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.llm.simulated import register_responder
from silas_exp.schema.eviction import ZONE_TEXT
from silas_exp.scorers.base import (
    CalibrationSpec,
    ScorerContext,
    ScorerSettings,
    ScorerUnavailable,
    register_scorer,
)
from silas_exp.scorers.heuristic import HeuristicWeights

# calibration of variant B: shrinkage of the fit toward the control weights (as variant A's default)
DEFAULT_L2 = 20.0

SCORES_SCHEMA = {
    "type": "object",
    "properties": {
        "scores": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "ctx_id": {"type": "string"},
                    "relevance": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["ctx_id", "relevance"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["scores"],
    "additionalProperties": False,
}
ITEM_LINE = "{ctx_id} | {zone} | {kind} | age={age} | tokens={tokens} | {status} | {flags} | {snippet}"
_LINE_RE = re.compile(
    r"^(?P<ctx_id>\S+) \| (?P<zone>\w+) \| (?P<kind>\w+) \| age=(?P<age>\d+) \| "
    r"tokens=(?P<tokens>\d+) \| (?P<status>\w+) \| (?P<flags>[^|]*) \|"
)
_GUIDE_RE = re.compile(r"^- (?P<dim>zone|age)=(?P<key>[\w+-]+): kept back in (?P<r>\d+)% .*overall (?P<o>\d+)%")


class PromptSettings(BaseModel):
    """A scorer prompt template (config group ``prompt``)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    version: str
    system: str
    user: str
    include_guidance: bool = True
    guidance_header: str = "Calibration from the main model's keep-backs:"


class PromptScorerSettings(ScorerSettings):
    name: Literal["prompt"] = "prompt"
    timeout_ms: float = Field(default=2000.0, gt=0)  # scorer timeout (Silas: 2 s)
    max_tokens: int = Field(default=4096, ge=64)
    explore_rate: float = Field(default=0.15, ge=0.0, le=1.0, allow_inf_nan=False)


def item_line(it: LiveItem, turn: int) -> str:
    """One item's line of the prompt, ``ITEM_LINE`` filled in (written out as
    one f-string: a prompt has a line per evictable item, every call)."""
    completed = it.completed_turn is not None and it.completed_turn <= turn  # LiveItem.completed
    flags = ",".join([f for f, on in (("masked", it.masked), ("completed", completed),
                                      ("inactive", not it.active)) if on]
                     + ([f"rel={it.relevance:.2f}"] if it.relevance is not None else []))
    snippet = one_line(it.snippet).replace("|", "/")
    return (f"{it.ctx_id} | {ZONE_TEXT[it.zone]} | {it.kind} | age={max(0, turn - it.last_ref)} | "
            f"tokens={it.tokens} | {it.status or 'ok'} | {flags or '-'} | {snippet or '-'}")


def render_prompt(template: PromptSettings, items: Sequence[LiveItem], turn: int,
                  guidance: Sequence[str]) -> str:
    block = ""
    if template.include_guidance and guidance:
        block = template.guidance_header + "\n" + "\n".join(guidance)
    return template.user.format(
        turn=turn, guidance=block, items="\n".join(item_line(it, turn) for it in items)
    )


class PromptScorer:
    name = "prompt"

    def __init__(self, settings: PromptScorerSettings, ctx: ScorerContext) -> None:
        self.settings, self.ctx = settings, ctx
        self.model_id = ctx.scorer_model
        self.guidance = list(ctx.calibration.guidance) if ctx.calibration is not None else []

    def score(self, items: Sequence[LiveItem], turn: int) -> dict[str, float]:
        template: PromptSettings = self.ctx.prompt
        request = LLMRequest(
            task="scorer", model=self.model_id, system=template.system, cache_system=True,
            messages=(Message("user", render_prompt(template, items, turn, self.guidance)),),
            max_tokens=self.settings.max_tokens, temperature=0.0, output_schema=SCORES_SCHEMA,
            deadline_s=self.settings.timeout_ms / 1000.0,
        )
        try:
            response = self.ctx.llm.complete(request, namespace=self.ctx.namespace)
        except LLMError as exc:
            raise ScorerUnavailable(f"scorer model failed: {exc}") from exc
        if response.latency_ms > self.settings.timeout_ms:
            raise ScorerUnavailable(f"scorer answered after {response.latency_ms:.0f} ms (timeout)")
        scores = {s["ctx_id"]: float(s["relevance"]) for s in response.data["scores"]}
        missing = [it.ctx_id for it in items if it.ctx_id not in scores]
        if missing:
            raise ScorerUnavailable(f"scorer answer lacks {len(missing)} item(s), e.g. {missing[0]}")
        return {it.ctx_id: scores[it.ctx_id] for it in items}

    def observe(self, items: Sequence[LiveItem], excluded: Sequence[bool], turn: int) -> None:
        return None


@register_scorer(
    "prompt", PromptScorerSettings, needs={"llm", "prompt", "calibration"},
    calibration=lambda s: CalibrationSpec(HeuristicWeights(), s.explore_rate, DEFAULT_L2),
    description="variant B: small-model scorer prompt with feedback-derived guidance",
)
def _build_prompt(settings: PromptScorerSettings, ctx: ScorerContext) -> PromptScorer:
    return PromptScorer(settings, ctx)


# ---- simulated small model -------------------------------------------------

_PRIOR = HeuristicWeights()
_ZONE_PRIOR = _PRIOR.zone.model_dump()
_KIND_PRIOR = _PRIOR.kind.model_dump()
_LOG_1000 = math.log(1000.0)
_REL_RE = re.compile(r"rel=([\d.]+)")


def _prior_logit(m: re.Match[str]) -> float:
    zone, kind, flags = m["zone"], m["kind"], m["flags"]
    z = 4 * (_ZONE_PRIOR.get(zone, 0.5) - 0.5) + 4 * (_KIND_PRIOR.get(kind, 0.5) - 0.5)
    z -= _PRIOR.age_decay * math.log1p(int(m["age"]))
    z -= _PRIOR.size_penalty * math.log1p(int(m["tokens"])) / _LOG_1000
    z += _PRIOR.error_boost * (m["status"] == "error")
    z -= _PRIOR.masked_penalty * ("masked" in flags) + _PRIOR.completed_penalty * ("completed" in flags)
    rel = _REL_RE.search(flags) if "rel=" in flags else None
    return z + _PRIOR.retrieval_weight * ((float(rel.group(1)) if rel else 0.5) - 0.5)


def parse_guidance(text: str) -> dict[tuple[str, str], float]:
    """Logit shift per (dimension, key) read from guidance lines in a prompt."""
    shifts: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        g = _GUIDE_RE.match(line.strip())
        if g:
            delta = 6.0 * (int(g["r"]) - int(g["o"])) / 100.0
            shifts[(g["dim"], g["key"])] = float(np.clip(delta, -2.5, 2.5))
    return shifts


@register_responder("scorer")
def simulated_scorer(request: LLMRequest, rng: np.random.Generator) -> dict:
    text = "\n".join(m.content for m in request.messages)
    shifts = parse_guidance(text)
    scored: list[tuple[str, float]] = []
    for line in text.splitlines():
        m = _LINE_RE.match(line.strip())
        if not m:
            continue
        z = _prior_logit(m)
        z += shifts.get(("zone", m["zone"]), 0.0) + shifts.get(("age", age_bucket(int(m["age"]))), 0.0)
        scored.append((m["ctx_id"], z))
    # one N(0, 0.25) draw per item, in item order: one call draws the same
    # numbers as a call per item, for a fraction of the cost
    noise = rng.normal(0.0, 0.25, size=len(scored)).tolist()
    return {"scores": [{"ctx_id": ctx_id, "relevance": round(1 / (1 + math.exp(-(z + e))), 4)}
                       for (ctx_id, z), e in zip(scored, noise, strict=True)]}
