"""``scorer=recency``: relevance halves every ``half_life`` turns since an item
was last referenced; pinned items and errors are kept longer. It needs no
capability: it sees only the items the harness shows it."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import Field

from silas_exp.context.window import LiveItem
from silas_exp.scorers import ScorerSettings, scorer_kind


class RecencySettings(ScorerSettings):  # its defaults are the option's defaults
    half_life: float = Field(default=8.0, gt=0, allow_inf_nan=False)  # turns
    error_bonus: float = Field(default=0.2, ge=0, le=1)


class RecencyScorer:
    name, model_id = "recency", "recency"

    def __init__(self, settings: RecencySettings) -> None:
        self.settings = settings

    def score(self, items: Sequence[LiveItem], turn: int) -> dict[str, float]:
        s = self.settings
        out = {}
        for it in items:
            since = max(turn - max(it.last_ref, it.born), 0)
            value = math.exp(-math.log(2) * since / s.half_life)
            if it.status == "error":
                value = min(1.0, value + s.error_bonus)
            out[it.ctx_id] = value
        return out

    def observe(self, items: Sequence[LiveItem], excluded: Sequence[bool], turn: int) -> None:
        return None


KIND = scorer_kind("recency", RecencySettings, lambda settings, ctx: RecencyScorer(settings),
                   description="example plug-in: relevance halves every half_life turns")
