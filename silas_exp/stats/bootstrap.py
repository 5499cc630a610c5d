"""Bootstrap confidence intervals. The cluster version is hand-written because
scipy.stats.bootstrap has no notion of clusters: repeats of one case are not
independent, so cases are resampled first, then repeats within each case.

With few cases the plain percentile interval is too narrow (it ignores the
n/(n-1) variance factor and uses normal rather than t tails), so a verdict
built on it ships too often. ``expanded=True`` widens the quantile levels as
Hesterberg (2015, "What teachers should know about the bootstrap", §5) does:
the tail level a becomes Phi(-sqrt(n/(n-1)) * t_{n-1, 1-a}) over n cases. The
null simulation in bench/bench_verdict.py measures what this buys."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BootstrapCI:
    estimate: float
    low: float
    high: float
    n_clusters: int
    n_resamples: int


def expanded_tail(alpha: float, n: int) -> float:
    """Tail level of Hesterberg's expanded percentile interval for n clusters."""
    from scipy.stats import norm, t  # lazy: scipy.stats costs ~0.5 s to import

    if n < 2:
        return alpha
    return float(norm.cdf(-np.sqrt(n / (n - 1)) * t.ppf(1 - alpha, n - 1)))


def cluster_bootstrap_ci(diffs_by_case, n_resamples: int = 1000, confidence: float = 0.95,
                         seed: int = 0, expanded: bool = False) -> BootstrapCI:
    """``diffs_by_case``: cases × repeats (NaN = missing). Statistic: mean over
    cases of each case's mean over its repeats. Two-stage percentile bootstrap."""
    m = np.asarray(diffs_by_case, dtype=float)
    if m.ndim == 1:
        m = m[:, None]
    keep = ~np.all(np.isnan(m), axis=1)
    m = m[keep]
    if len(m) == 0:
        raise ValueError("no case has any paired difference; nothing to bootstrap")
    estimate = float(np.mean(np.nanmean(m, axis=1)))
    rng = np.random.default_rng(seed)
    n_cases, n_rep = m.shape
    case_idx = rng.integers(0, n_cases, size=(n_resamples, n_cases))
    rep_idx = rng.integers(0, n_rep, size=(n_resamples, n_cases, n_rep))
    sample = m[case_idx[..., None], rep_idx]  # resamples × cases × repeats
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resampled case
        stats = np.nanmean(np.nanmean(sample, axis=2), axis=1)
    stats = stats[~np.isnan(stats)]
    alpha = (1 - confidence) / 2
    if expanded:
        alpha = expanded_tail(alpha, n_cases)
    return BootstrapCI(estimate, float(np.quantile(stats, alpha)), float(np.quantile(stats, 1 - alpha)),
                       n_cases, n_resamples)
