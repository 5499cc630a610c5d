"""Power of a two-sided paired t-test (noncentral t) and the n it needs."""

from __future__ import annotations

import math

from scipy import stats as sps


def paired_power(n: int, sd_diff: float, delta: float, alpha: float = 0.05) -> float:
    if n < 2 or sd_diff <= 0:
        return float("nan")
    df = n - 1
    nc = abs(delta) / sd_diff * math.sqrt(n)
    crit = sps.t.ppf(1 - alpha / 2, df)
    return float(sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc))


def required_n_paired(sd_diff: float, delta: float, alpha: float = 0.05, power: float = 0.8,
                      max_n: int = 100_000) -> int | None:
    """Smallest n reaching ``power`` (None when unreachable below ``max_n``)."""
    if sd_diff <= 0 or delta == 0 or math.isnan(sd_diff) or math.isnan(delta):
        return None
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)
    n = max(2, int((z * sd_diff / abs(delta)) ** 2))
    while n <= max_n:
        if paired_power(n, sd_diff, delta, alpha) >= power:
            return n
        n += 1
    return None
