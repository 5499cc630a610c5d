"""Multiple-comparison corrections of p-values across variants."""

from __future__ import annotations

import numpy as np
from scipy.stats import false_discovery_control


def holm(pvalues) -> np.ndarray:
    """Holm step-down adjusted p-values (monotone, capped at 1). Hand-written:
    scipy has Benjamini–Hochberg but not Holm."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    m = len(p)
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(pvalues) -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    return false_discovery_control(p, method="bh") if len(p) else p
