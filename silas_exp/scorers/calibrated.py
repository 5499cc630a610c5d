"""Variant A (feedback-calibrated weights) and variant C (online auto-adjustment)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from silas_exp.context.features import feature_matrix
from silas_exp.context.window import LiveItem
from silas_exp.feedback.calibration import fit_logistic
from silas_exp.scorers.base import CalibrationSpec, ScorerContext, ScorerSettings, register_scorer
from silas_exp.scorers.heuristic import HeuristicWeights, LinearScorer

NonNeg = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class WeightsSettings(ScorerSettings):
    name: Literal["weights"] = "weights"
    l2: NonNeg = 20.0  # shrinkage toward the control weights (in pseudo-records)
    explore_rate: float = Field(default=0.15, ge=0.0, le=1.0, allow_inf_nan=False)
    base: HeuristicWeights = Field(default_factory=HeuristicWeights)


@register_scorer(
    "weights", WeightsSettings, needs={"calibration"}, linear=True,
    calibration=lambda s: CalibrationSpec(s.base, s.explore_rate, s.l2),
    description="variant A: logistic-regression weights fitted offline on feedback",
)
def _build_weights(settings: WeightsSettings, ctx: ScorerContext) -> LinearScorer:
    return LinearScorer("weights", np.asarray(ctx.calibration.weights, dtype=float))


class OnlineSettings(ScorerSettings):
    name: Literal["online"] = "online"
    base: HeuristicWeights = Field(default_factory=HeuristicWeights)
    update_every: int = Field(default=3, ge=1)  # proposals between adjustments
    window: int = Field(default=400, ge=10)  # rolling candidate records used
    l2: NonNeg = 4.0
    min_records: int = Field(default=30, ge=1)


class OnlineScorer(LinearScorer):
    """Starts from the control weights; every ``update_every`` proposals refits on
    the rolling window of keep-back outcomes, shrunk toward the current weights."""

    def __init__(self, settings: OnlineSettings) -> None:
        super().__init__("online", settings.base.vector())
        self.settings = settings
        self._X: deque[np.ndarray] = deque(maxlen=settings.window)
        self._y: deque[float] = deque(maxlen=settings.window)
        self._seen = 0
        self.updates = 0

    def observe(self, items: Sequence[LiveItem], excluded: Sequence[bool], turn: int) -> None:
        for row, label in zip(feature_matrix(items, turn), excluded, strict=True):
            self._X.append(row)
            self._y.append(float(label))
        self._seen += 1
        if self._seen % self.settings.update_every == 0 and len(self._y) >= self.settings.min_records:
            self.refit(np.vstack(self._X), np.array(self._y))

    def refit(self, X: np.ndarray, y: np.ndarray) -> None:
        """One adjustment: the weights refitted on the rolling window's rows
        ``X`` and labels ``y`` (oldest first), shrunk toward the current weights."""
        self.weights = fit_logistic(X, y, self.weights, l2=self.settings.l2, max_iter=50)
        self.updates += 1

    def restore(self, X: np.ndarray, y: np.ndarray, seen: int) -> None:
        """The rolling window and the count of observations as ``observe`` would
        have left them (a compiled replay observes on its own arrays)."""
        self._X.clear()
        self._y.clear()
        self._X.extend(X.copy())
        self._y.extend(y.tolist())
        self._seen = seen


# online: a strategy's compiled replay may observe and score on its own arrays, refitting
# through ``refit`` (traits: silas_exp.scorers.base.register_scorer)
@register_scorer("online", OnlineSettings, online=True,
                 description="variant C: online auto-adjustment")
def _build_online(settings: OnlineSettings, ctx: ScorerContext) -> OnlineScorer:
    return OnlineScorer(settings)
