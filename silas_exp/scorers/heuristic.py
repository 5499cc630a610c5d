"""Control scorer: the current hand-set Silas heuristic, no feedback loop.

User-facing weights are all finite and non-negative; the sign of each term is
fixed by the formula. Zone and kind priors in [0, 1] enter the logit as
4·(p − 0.5). The default chronicle prior (0.2) reproduces the known
miscalibration of §19.4: chronicle items are scored low and then kept back by
the main model far more often than other zones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from silas_exp.context.features import FEATURES, linear_scores
from silas_exp.context.window import LiveItem
from silas_exp.scorers.base import ScorerContext, ScorerSettings, register_scorer

Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
NonNeg = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ZonePriors(_Strict):
    chronicle: Unit = 0.2
    memory: Unit = 0.55
    workspace: Unit = 0.62


class KindPriors(_Strict):
    user_message: Unit = 0.58
    agent_response: Unit = 0.45
    tool_result: Unit = 0.42
    memory: Unit = 0.5
    plan: Unit = 0.7
    subscription: Unit = 0.55
    ack: Unit = 0.0
    system_prompt: Unit = 1.0


class HeuristicWeights(_Strict):
    zone: ZonePriors = Field(default_factory=ZonePriors)
    kind: KindPriors = Field(default_factory=KindPriors)
    age_decay: NonNeg = 0.45
    size_penalty: NonNeg = 0.3
    error_boost: NonNeg = 0.2
    masked_penalty: NonNeg = 1.0
    completed_penalty: NonNeg = 1.0
    retrieval_weight: NonNeg = 1.0

    def vector(self) -> np.ndarray:
        w = dict.fromkeys(FEATURES, 0.0)
        for zone, p in self.zone.model_dump().items():
            w[f"zone_{zone}"] = 4.0 * (p - 0.5)
        for kind, p in self.kind.model_dump().items():
            if f"kind_{kind}" in w:
                w[f"kind_{kind}"] = 4.0 * (p - 0.5)
        w["log_age"] = -self.age_decay
        w["log_tokens"] = -self.size_penalty
        w["is_error"] = self.error_boost
        w["masked"] = -self.masked_penalty
        w["completed"] = -self.completed_penalty
        w["retrieval_relevance"] = self.retrieval_weight
        return np.array([w[name] for name in FEATURES])


class HeuristicSettings(ScorerSettings):
    name: Literal["heuristic"] = "heuristic"
    weights: HeuristicWeights = Field(default_factory=HeuristicWeights)


class LinearScorer:
    """relevance = sigmoid(w · features); subclasses may update ``w``."""

    def __init__(self, name: str, weights: np.ndarray, model_id: str = "heuristic") -> None:
        self.name, self.model_id, self.weights = name, model_id, weights

    def score(self, items: Sequence[LiveItem], turn: int) -> dict[str, float]:
        return linear_scores(items, turn, self.weights)

    def observe(self, items: Sequence[LiveItem], excluded: Sequence[bool], turn: int) -> None:
        return None


@register_scorer("heuristic", HeuristicSettings, linear=True,
                 description="control: hand-set weights, no feedback")
def _build(settings: HeuristicSettings, ctx: ScorerContext) -> LinearScorer:
    return LinearScorer("heuristic", settings.weights.vector())
