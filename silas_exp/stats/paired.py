"""Paired tests on per-case differences (treatment − control)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


@dataclass(frozen=True)
class TestResult:
    method: str
    statistic: float
    pvalue: float
    n: int


def _clean(diffs) -> np.ndarray:
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1:
        raise ValueError(f"expected a 1-D vector of paired differences, got shape {d.shape}")
    return d[~np.isnan(d)]


def paired_permutation(diffs, n_resamples: int = 10_000, seed: int = 0) -> TestResult:
    """Sign-flip permutation test of mean difference = 0 (two-sided)."""
    d = _clean(diffs)
    if len(d) < 2 or np.allclose(d, 0):
        return TestResult("permutation", float(d.mean()) if len(d) else 0.0, 1.0, len(d))
    res = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=n_resamples,
                               alternative="two-sided", random_state=seed)
    return TestResult("permutation", float(res.statistic), float(res.pvalue), len(d))


def paired_wilcoxon(diffs) -> TestResult:
    d = _clean(diffs)
    if len(d) < 2 or np.allclose(d, 0):
        return TestResult("wilcoxon", 0.0, 1.0, len(d))
    res = sps.wilcoxon(d)
    return TestResult("wilcoxon", float(res.statistic), float(res.pvalue), len(d))


def paired_t(diffs) -> TestResult:
    d = _clean(diffs)
    if len(d) < 2 or np.std(d, ddof=1) == 0:
        return TestResult("paired t", 0.0, 1.0 if np.allclose(d, 0) else 0.0, len(d))
    res = sps.ttest_1samp(d, 0.0)
    return TestResult("paired t", float(res.statistic), float(res.pvalue), len(d))


def cohens_dz(diffs) -> float:
    """Standardised mean of paired differences: mean(d) / sd(d)."""
    d = _clean(diffs)
    if len(d) < 2:
        return float("nan")
    sd = np.std(d, ddof=1)
    if sd > 0:
        return float(np.mean(d) / sd)
    return 0.0 if np.mean(d) == 0 else math.copysign(math.inf, float(np.mean(d)))
