"""Decision layer: a verdict per metric and the ship rule (§19.5: no
calibration change ships without non-negative impact)."""

from __future__ import annotations

from collections.abc import Mapping
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


def may_ship(gated: Mapping[str, Verdict]) -> tuple[bool, str]:
    worse = [k for k, v in gated.items() if v is Verdict.WORSE]
    if worse:
        return False, "worse on gated metric(s): " + ", ".join(worse)
    better = [k for k, v in gated.items() if v is Verdict.BETTER]
    return True, ("better on " + ", ".join(better)) if better else "no gated metric got worse"
