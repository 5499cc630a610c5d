"""Descriptive per-metric reading of a difference (better / worse / no
detectable difference at the adjusted p). It is reported beside the
non-inferiority call; it never decides whether a variant ships
(silas_exp.stats.noninferiority does)."""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    BETTER = "better"
    WORSE = "worse"
    NO_DIFFERENCE = "no detectable difference"


def verdict(ci_low: float, ci_high: float, p_adjusted: float, higher_is_better: bool,
            alpha: float = 0.05) -> Verdict:
    if p_adjusted < alpha:
        if ci_low > 0:
            return Verdict.BETTER if higher_is_better else Verdict.WORSE
        if ci_high < 0:
            return Verdict.WORSE if higher_is_better else Verdict.BETTER
    return Verdict.NO_DIFFERENCE
