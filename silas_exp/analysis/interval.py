"""A metric's paired interval: the kind its spec declares picks the interval
(silas_exp.stats.intervals), and what that kind needs comes from the data."""

from __future__ import annotations

import numpy as np

from silas_exp.metrics.registry import spec
from silas_exp.stats.intervals import Interval, disagreement_scale, paired_interval


def metric_interval(metric: str, diffs: np.ndarray, variant: np.ndarray, control: np.ndarray,
                    confidence: float) -> Interval:
    """``diffs``: variant − control, cases × repeats; ``variant`` and ``control``:
    the two arms' values on the same pairs (an amount's scale is read from them)."""
    mspec = spec(metric)
    kind = mspec.interval_kind
    return paired_interval(diffs, confidence, kind,
                           scale=disagreement_scale(kind, mspec.bounds, variant, control))
