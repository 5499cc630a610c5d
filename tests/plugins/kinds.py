"""Kinds used by the plug-in tests (named by ``_target_`` or by fake entry points)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from silas_exp.scorers import ScorerSettings, scorer_kind
from silas_exp.scorers.heuristic import LinearScorer


class LongestSettings(ScorerSettings):
    name: Literal["longest"] = "longest"


class LongestScorer:
    """Keeps the biggest items: relevance grows with tokens."""

    name, model_id = "longest", "longest"

    def score(self, items, turn):
        top = max((it.tokens for it in items), default=1) or 1
        return {it.ctx_id: it.tokens / top for it in items}

    def observe(self, items, excluded, turn):
        return None


LONGEST = scorer_kind("longest", LongestSettings, lambda s, ctx: LongestScorer())


class PeekSettings(ScorerSettings):
    name: Literal["peek"] = "peek"


def _peek(settings, ctx):
    """A scorer that tries to read ground truth without declaring it."""
    need = ctx.oracle
    return LinearScorer("peek", need)


PEEK = scorer_kind("peek", PeekSettings, _peek)


class AskSettings(ScorerSettings):
    name: Literal["ask"] = "ask"


def _ask(settings, ctx):
    return LongestScorer()


def oracle_kind():
    """A plug-in kind that declares ground truth (refused when admitted)."""
    return scorer_kind("ask", AskSettings, _ask, needs={"oracle"})


ASK = oracle_kind()
NOT_A_KIND = "a string, not a kind"


class KeywordSettings(ScorerSettings):
    """No ``name`` Literal, no YAML: the option ``scorer=keyword`` is generated."""

    keyword_weight: float = Field(default=0.5, ge=0, le=1)
    broken: Literal["no", "raise", "nan_score", "over_one"] = "no"  # how the scorer breaks its contract


class KeywordScorer:
    """Relevance from the item's kind, weighted by ``keyword_weight``; ``broken``
    makes it raise on tool results, or give one NaN or one 1.5 score."""

    name, model_id = "keyword", "keyword"

    def __init__(self, settings: KeywordSettings) -> None:
        self.s = settings

    def score(self, items, turn):
        out = {}
        for it in items:
            if self.s.broken == "raise" and it.kind == "tool_result":
                raise ValueError(f"cannot score item {it.ctx_id}")
            out[it.ctx_id] = self.s.keyword_weight * (it.kind in ("plan", "user_message")) \
                + (1 - self.s.keyword_weight) * (it.tokens % 7) / 7
        if items and self.s.broken in ("nan_score", "over_one"):
            out[items[-1].ctx_id] = math.nan if self.s.broken == "nan_score" else 1.5
        return out

    def observe(self, items, excluded, turn):
        return None


KEYWORD = scorer_kind("keyword", KeywordSettings, lambda s, granted: KeywordScorer(s))


class UnfitSettings(ScorerSettings):
    name: Literal["unfit"] = "unfit"


def _broken_fit(settings):
    raise RuntimeError("the fit broke")


# a calibrated scorer whose calibration fails when a job runs it: a job that fails from code
UNFIT = scorer_kind("unfit", UnfitSettings, lambda s, ctx: LongestScorer(),
                    needs={"calibration"}, calibration=_broken_fit)
