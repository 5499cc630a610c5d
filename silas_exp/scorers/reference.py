"""Reference scorers that bracket every variant: an oracle that reads ground
truth (the ceiling) and a seeded random scorer (the floor). They exist to
sanity-check the metrics, never to ship."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from silas_exp.context.window import LiveItem
from silas_exp.scorers.base import ScorerContext, ScorerSettings, register_scorer


class OracleSettings(ScorerSettings):
    name: Literal["oracle"] = "oracle"
    horizon: int = Field(default=30, ge=1)


class OracleScorer:
    name, model_id = "oracle", "oracle"

    def __init__(self, settings: OracleSettings, ctx: ScorerContext) -> None:
        if ctx.oracle is None:
            raise ValueError("the oracle scorer needs ground truth; the runner supplies it")
        self._need, self._horizon = ctx.oracle, settings.horizon

    def score(self, items: Sequence[LiveItem], turn: int) -> dict[str, float]:
        # need(ctx_id, turn) -> discounted future need in [0, 1]
        return {it.ctx_id: self._need(it.ctx_id, turn) for it in items}

    def observe(self, items: Sequence[LiveItem], excluded: Sequence[bool], turn: int) -> None:
        return None


@register_scorer("oracle", OracleSettings, needs={"oracle"}, reference=True,
                 description="reference ceiling: reads ground truth")
def _build_oracle(settings: OracleSettings, ctx: ScorerContext) -> OracleScorer:
    return OracleScorer(settings, ctx)


class RandomSettings(ScorerSettings):
    name: Literal["random"] = "random"


class RandomScorer:
    name, model_id = "random", "random"

    def __init__(self, seed: int, namespace: str) -> None:
        digest = hashlib.sha256(f"{seed}/{namespace}".encode()).digest()
        self._rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def score(self, items: Sequence[LiveItem], turn: int) -> dict[str, float]:
        return {it.ctx_id: float(self._rng.random()) for it in items}

    def observe(self, items: Sequence[LiveItem], excluded: Sequence[bool], turn: int) -> None:
        return None


@register_scorer("random", RandomSettings, reference=True,
                 description="reference floor: seeded random scores")
def _build_random(settings: RandomSettings, ctx: ScorerContext) -> RandomScorer:
    return RandomScorer(ctx.seed, ctx.namespace)
