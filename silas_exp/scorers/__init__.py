"""Scorers behind one protocol; importing this package registers every kind."""

from silas_exp.scorers import calibrated, heuristic, prompt, reference  # noqa: F401
from silas_exp.scorers.base import (
    CalibrationSpec,
    Scorer,
    ScorerContext,
    ScorerSettings,
    ScorerUnavailable,
    build_scorer,
    scorer_kind,
    validate_scorer_settings,
)

__all__ = [
    "CalibrationSpec",
    "Scorer",
    "ScorerSettings",
    "scorer_kind",
    "ScorerContext",
    "ScorerUnavailable",
    "build_scorer",
    "validate_scorer_settings",
]
