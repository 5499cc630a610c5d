"""Cohen's kappa for ordinal scores (judge vs human), optionally weighted.
Hand-written: scipy has none and scikit-learn is not a dependency."""

from __future__ import annotations

import numpy as np


def cohens_kappa(a, b, weights: str | None = None, labels=None) -> float:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError("cohens_kappa needs two equally long, non-empty 1-D label vectors")
    labels = np.asarray(sorted(set(a.tolist()) | set(b.tolist())) if labels is None else labels)
    index = {v: i for i, v in enumerate(labels.tolist())}
    k = len(labels)
    observed = np.zeros((k, k))
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        observed[index[x], index[y]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j) / max(k - 1, 1)
    elif weights == "quadratic":
        w = ((i - j) / max(k - 1, 1)) ** 2
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    denom = (w * expected).sum()
    return 1.0 if denom == 0 else float(1 - (w * observed).sum() / denom)
