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
import sys
from collections.abc import Sequence
from functools import lru_cache
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
    one f-string: a prompt has a line per evictable item, every call; most
    items have no flag, and their snippets repeat from call to call)."""
    done, masked, active, rel = it.completed_turn, it.masked, it.active, it.relevance
    completed = done is not None and done <= turn  # LiveItem.completed
    if masked or completed or not active or rel is not None:
        flags = ",".join([f for f, on in (("masked", masked), ("completed", completed),
                                          ("inactive", not active)) if on]
                         + ([f"rel={rel:.2f}"] if rel is not None else []))
    else:
        flags = "-"
    last_ref = it.last_ref
    return (f"{it.ctx_id} | {ZONE_TEXT[it.zone]} | {it.kind} | "
            f"age={turn - last_ref if last_ref < turn else 0} | tokens={it._tokens} | "
            f"{it.status or 'ok'} | {flags} | {_line_snippet(it.snippet)}")


@lru_cache(maxsize=8192)
def _line_snippet(snippet: str) -> str:
    """A snippet as an item line shows it: one line, no ``|`` (the field separator)."""
    return one_line(snippet).replace("|", "/") or "-"


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
        answered = self._in_process(items, turn)
        if answered is not None:
            return answered
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

    def _in_process(self, items: Sequence[LiveItem], turn: int) -> dict[str, float] | None:
        """``score``'s answer computed in this process, where the simulated
        model answers inline (``prompt_inprocess.py``); None: ask the client."""
        from silas_exp.scorers.prompt_inprocess import InProcess

        sim = InProcess.for_scorer(self, sys.modules[__name__])
        if sim.why_not() is not None:
            return None
        ids = [it.ctx_id for it in items]
        if len(set(ids)) != len(ids):
            return None
        found = sim.live_rows(items)
        if found is None:
            return None
        k = len(items)
        r = sim.scores(*found, np.fromiter([it._tokens for it in items], np.int64, k),
                       np.fromiter([it.masked for it in items], np.bool_, k),
                       np.fromiter([it.active for it in items], np.bool_, k),
                       np.fromiter([it.last_ref for it in items], np.int64, k), turn)
        return dict(zip(ids, r.tolist(), strict=True))

    def array_scorer(self, ctx_ids, zones, kinds, statuses, relevances, completed, snippets):
        """``score`` of items given as rows of these columns (zones as text,
        snippets as ``LiveItem.snippet``), with their state: a function of
        (rows, tokens, masked, active, last reference, turn) returning the
        relevances in row order, or None when the calls cannot be answered in
        this process (then ``score`` asks the client)."""
        from silas_exp.scorers.prompt_inprocess import InProcess

        sim = InProcess.for_scorer(self, sys.modules[__name__])
        if sim.why_not() is not None:
            return None
        table = sim.table(ctx_ids, zones, kinds, statuses, relevances, completed, snippets)
        if table is None:
            return None
        sim.keep(table)  # the reference's candidates are scored from it too
        return lambda rows, tok, masked, active, last_ref, turn: sim.scores(
            table, rows, tok, masked, active, last_ref, turn)


# array_scores: a strategy's compiled replay may ask array_scorer for Tier 2's scores
@register_scorer(
    "prompt", PromptScorerSettings, needs={"llm", "prompt", "calibration"}, stateless=True,
    array_scores=True,
    calibration=lambda s: CalibrationSpec(HeuristicWeights(), s.explore_rate, DEFAULT_L2),
    description="variant B: small-model scorer prompt with feedback-derived guidance",
)
def _build_prompt(settings: PromptScorerSettings, ctx: ScorerContext) -> PromptScorer:
    return PromptScorer(settings, ctx)


# ---- simulated small model -------------------------------------------------

_PRIOR = HeuristicWeights()
# the prior's terms as _logit adds them: 4·(p − 0.5) per zone and kind (0 for one
# it does not know), the weights as plain floats (each the same float as before)
_ZONE_TERM = {zone: 4 * (p - 0.5) for zone, p in _PRIOR.zone.model_dump().items()}
_KIND_TERM = {kind: 4 * (p - 0.5) for kind, p in _PRIOR.kind.model_dump().items()}
_AGE_DECAY, _SIZE_PENALTY, _ERROR_BOOST = _PRIOR.age_decay, _PRIOR.size_penalty, _PRIOR.error_boost
_MASKED_PENALTY, _COMPLETED_PENALTY = _PRIOR.masked_penalty, _PRIOR.completed_penalty
_RETRIEVAL_WEIGHT = _PRIOR.retrieval_weight
_LOG_1000 = math.log(1000.0)
_REL_RE = re.compile(r"rel=([\d.]+)")
# age_bucket of the ages most items have, looked up
_AGE_BUCKET = [age_bucket(age) for age in range(64)]


def _logit(zone: str, kind: str, age: int, tokens: int, status: str, flags: str) -> float:
    """The prior's logit of an item line's fields (``_LINE_RE``'s groups)."""
    z = _ZONE_TERM.get(zone, 0.0) + _KIND_TERM.get(kind, 0.0)
    z -= _AGE_DECAY * math.log1p(age)
    z -= _SIZE_PENALTY * math.log1p(tokens) / _LOG_1000
    z += _ERROR_BOOST * (status == "error")
    z -= _MASKED_PENALTY * ("masked" in flags) + _COMPLETED_PENALTY * ("completed" in flags)
    rel = _REL_RE.search(flags) if "rel=" in flags else None
    return z + _RETRIEVAL_WEIGHT * ((float(rel.group(1)) if rel else 0.5) - 0.5)


def _prior_logit(m: re.Match[str]) -> float:
    return _logit(m["zone"], m["kind"], int(m["age"]), int(m["tokens"]), m["status"], m["flags"])


def _shift(g: re.Match[str]) -> float:
    """A guidance line's logit shift, clip(6·(R − O), −2.5, 2.5)."""
    return min(max(6.0 * (int(g["r"]) - int(g["o"])) / 100.0, -2.5), 2.5)


def parse_guidance(text: str) -> dict[tuple[str, str], float]:
    """Logit shift per (dimension, key) read from guidance lines in a prompt."""
    return read_prompt(text)[0]


def read_prompt(text: str) -> tuple[dict[tuple[str, str], float], list[tuple[str, str, int, float]]]:
    """What the simulated model reads in a prompt, in one pass over its lines:
    the guidance lines' shifts (the last line of a key winning) and each item
    line's (ctx_id, zone, age, prior logit). No line is both."""
    shifts: dict[tuple[str, str], float] = {}
    items: list[tuple[str, str, int, float]] = []
    line_re, guide_re = _LINE_RE, _GUIDE_RE
    for line in text.splitlines():
        line = line.strip()
        m = line_re.match(line)
        if m is None:
            g = guide_re.match(line)
            if g:
                shifts[(g["dim"], g["key"])] = _shift(g)
            continue
        ctx_id, zone, kind, age, tokens, status, flags = m.groups()
        age = int(age)
        items.append((ctx_id, zone, age, _logit(zone, kind, age, int(tokens), status, flags)))
    return shifts, items


@register_responder("scorer")
def simulated_scorer(request: LLMRequest, rng: np.random.Generator) -> dict:
    shifts, items = read_prompt("\n".join(m.content for m in request.messages))
    scored = [(ctx_id, z + (shifts.get(("zone", zone), 0.0)
                            + shifts.get(("age", _AGE_BUCKET[age] if age < 64 else age_bucket(age)), 0.0)))
              for ctx_id, zone, age, z in items]
    # one N(0, 0.25) draw per item, in item order: one call draws the same
    # numbers as a call per item, for a fraction of the cost
    noise = rng.normal(0.0, 0.25, size=len(scored)).tolist()
    return {"scores": [{"ctx_id": ctx_id, "relevance": round(1 / (1 + math.exp(-(z + e))), 4)}
                       for (ctx_id, z), e in zip(scored, noise, strict=True)]}
