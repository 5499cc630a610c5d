"""Wald's sequential probability ratio test on paired differences (Normal
model, H0: mean 0 vs H1: mean delta). Hand-written: scipy has no SPRT.

Wald's error guarantees hold only when delta and sigma are fixed before the
data are seen. ``sprt_with_pilot`` therefore takes delta as a pre-set effect
size (the minimum difference worth detecting) and estimates sigma on a pilot
— the first ``pilot`` differences — which then take no part in the test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SPRTResult:
    decision: str  # accept_h1 | accept_h0 | continue
    n_used: int
    llr: float
    sigma: float = math.nan
    pilot: int = 0


def sprt_run(diffs, delta: float, sigma: float, alpha: float = 0.05, beta: float = 0.20) -> SPRTResult:
    if not sigma > 0 or delta == 0 or math.isnan(delta):
        raise ValueError("SPRT needs sigma > 0 and a non-zero delta")
    upper, lower = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    llr = 0.0
    n = 0
    for n, d in enumerate(diffs, start=1):
        llr += (delta * d - delta**2 / 2) / sigma**2
        if llr >= upper:
            return SPRTResult("accept_h1", n, llr, sigma)
        if llr <= lower:
            return SPRTResult("accept_h0", n, llr, sigma)
    return SPRTResult("continue", n, llr, sigma)


def sprt_with_pilot(diffs, delta: float, pilot: int = 5, alpha: float = 0.05,
                    beta: float = 0.20) -> SPRTResult:
    """SPRT with a pre-set ``delta`` and sigma from the first ``pilot`` values."""
    d = np.asarray(diffs, dtype=float)
    d = d[~np.isnan(d)]
    if pilot < 2 or len(d) <= pilot:
        raise ValueError(f"SPRT needs more than its pilot of {pilot} differences (got {len(d)})")
    sigma = float(np.std(d[:pilot], ddof=1))
    if not sigma > 0:
        sigma = float(np.std(d, ddof=1)) or 1e-12  # a flat pilot: fall back to all values
    res = sprt_run(d[pilot:], delta, sigma, alpha, beta)
    return SPRTResult(res.decision, res.n_used + pilot, res.llr, sigma, pilot)
