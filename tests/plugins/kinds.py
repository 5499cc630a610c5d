"""Kinds used by the plug-in tests (named by ``_target_`` or by fake entry points)."""

from __future__ import annotations

from typing import Literal

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
