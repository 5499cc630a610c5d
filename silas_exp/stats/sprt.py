"""Wald's sequential probability ratio test on paired differences (Normal
model, H0: mean 0 vs H1: mean delta). Hand-written: scipy has no SPRT."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SPRTResult:
    decision: str  # accept_h1 | accept_h0 | continue
    n_used: int
    llr: float


def sprt_run(diffs, delta: float, sigma: float, alpha: float = 0.05, beta: float = 0.20) -> SPRTResult:
    if sigma <= 0 or delta == 0:
        raise ValueError("SPRT needs sigma > 0 and a non-zero delta")
    upper, lower = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    llr = 0.0
    n = 0
    for n, d in enumerate(diffs, start=1):
        llr += (delta * d - delta**2 / 2) / sigma**2
        if llr >= upper:
            return SPRTResult("accept_h1", n, llr)
        if llr <= lower:
            return SPRTResult("accept_h0", n, llr)
    return SPRTResult("continue", n, llr)
