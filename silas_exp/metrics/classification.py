"""Binary-outcome metrics over per-item arrays."""

from __future__ import annotations

import numpy as np


def roc_auc(scores, labels) -> float:
    """P(random positive scores above random negative), ties count 1/2; NaN when a class is absent."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if s.shape != y.shape:
        raise ValueError(f"scores and labels differ in length: {s.shape} vs {y.shape}")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    from scipy.stats import rankdata  # lazy: scipy.stats costs ~0.5 s to import

    ranks = rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
