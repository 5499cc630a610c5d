"""Scorers behind one protocol; importing this package registers every kind."""

from silas_exp.scorers import calibrated, heuristic, prompt, reference  # noqa: F401
from silas_exp.scorers.base import (
    Scorer,
    ScorerContext,
    ScorerUnavailable,
    build_scorer,
    scorer_kinds,
    validate_scorer_settings,
)

__all__ = [
    "Scorer",
    "ScorerContext",
    "ScorerUnavailable",
    "build_scorer",
    "scorer_kinds",
    "validate_scorer_settings",
]
