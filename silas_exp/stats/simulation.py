"""Simulated ablations to measure the verdict rule's error rates.

Each simulated ablation draws a cases × repeats matrix of paired differences
(variant − control) with a true mean ``delta``, a per-case effect (cases
differ, and the repeats of one case share it: correlated repeats) and
repeat noise, then applies exactly the rule the ablation uses to one gated
metric: the paired interval of a bounded score (silas_exp.stats.intervals),
oriented, against the margin. ``interval="bootstrap"`` applies the cluster
bootstrap instead (``expanded``: Hesterberg's small-sample widening), to
compare.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from silas_exp.stats.bootstrap import cluster_bootstrap_ci
from silas_exp.stats.intervals import paired_interval
from silas_exp.stats.noninferiority import MetricCall, Oriented, metric_call


@dataclass(frozen=True)
class Scenario:
    delta: float  # true mean difference, higher is better
    margin: float
    n_cases: int = 18
    n_repeats: int = 5
    case_sd: float = 0.05  # between-case sd of the difference (shared by a case's repeats)
    repeat_sd: float = 0.03  # within-case, per-repeat noise


def _interval(m: np.ndarray, confidence: float, interval: str, seed: int, n_resamples: int,
              expanded: bool) -> tuple[float, float, float]:
    if interval == "bootstrap":
        ci = cluster_bootstrap_ci(m, n_resamples=n_resamples, confidence=confidence, seed=seed,
                                  expanded=expanded)
    else:
        ci = paired_interval(m, confidence, "bounded", scale=1.0)
    return ci.estimate, ci.low, ci.high


def simulate_calls(s: Scenario, n_sims: int = 500, seed: int = 0, n_resamples: int = 1000,
                   confidence: float = 0.95, expanded: bool = True,
                   interval: str = "verdict") -> dict[MetricCall, float]:
    """Share of simulated ablations ending in each metric call."""
    rng = np.random.default_rng(seed)
    counts: Counter[MetricCall] = Counter()
    for i in range(n_sims):
        case = rng.normal(0.0, s.case_sd, size=(s.n_cases, 1))
        m = s.delta + case + rng.normal(0.0, s.repeat_sd, size=(s.n_cases, s.n_repeats))
        est, low, high = _interval(m, confidence, interval, i, n_resamples, expanded)
        counts[metric_call(Oriented.of(est, low, high, "higher"), s.margin)] += 1
    return {call: counts[call] / n_sims for call in MetricCall}


def simulate_adaptive(s: Scenario, repeats_min: int = 2, repeats_max: int = 10,
                      n_sims: int = 300, seed: int = 0, n_resamples: int = 1000,
                      confidence: float = 0.95) -> dict[str, float]:
    """The adaptive-repeats rule on simulated ablations: look after every round
    from ``repeats_min`` on at the Bonferroni per-look confidence, stop when the
    call is settled or more repeats cannot decide. Returns the final-call rates
    and the mean repeats used (``s.n_repeats`` is ignored)."""
    from silas_exp.stats.sequential import chances_at_max, futile, look_confidence, look_rounds

    rounds = look_rounds(repeats_min, repeats_max)
    per_look = look_confidence(confidence, len(rounds))
    rng = np.random.default_rng(seed)
    counts: Counter[MetricCall] = Counter()
    used = 0
    for i in range(n_sims):
        case = rng.normal(0.0, s.case_sd, size=(s.n_cases, 1))
        full = s.delta + case + rng.normal(0.0, s.repeat_sd, size=(s.n_cases, repeats_max))
        for r in rounds:
            m = full[:, :r]
            est, low, high = _interval(m, per_look, "verdict", i * 100 + r, n_resamples, True)
            call = metric_call(Oriented.of(est, low, high, "higher"), s.margin)
            if call is not MetricCall.UNDECIDED or r == repeats_max:
                break
            if futile([chances_at_max(m, est, low, high, s.margin, repeats_max,
                                      per_look, s.n_cases)]):
                break  # futile: more repeats of these cases cannot decide
        counts[call] += 1
        used += r
    out = {call.value: counts[call] / n_sims for call in MetricCall}
    out["mean_repeats"] = used / n_sims
    return out

