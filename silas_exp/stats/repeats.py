"""Repeats where the noise is: how many repeats each case gets, and the judge's
share of the variance.

The variance of a study's mean over n cases, each the mean of its R_i
repeats, is (1/n²) Σ (σ²_between + σ²_i / R_i). For a fixed number of
repeats in all, it is smallest with R_i proportional to the case's
within-case standard deviation σ_i (Neyman allocation; Cochran, *Sampling
Techniques*, 3rd ed., §5.5 and §10.6 for two-stage samples). Resampling a
case only shrinks its own within-case term (Miller, "Adding error bars to
evals", arXiv:2411.00640, 2024): repeats pay where σ_i is large.

**What keeps the interval valid.** A case's repeat count must not depend on
that case's own outcomes: extra repeats chosen because a case's first
repeats disagreed make its mean a conditional one (for a bounded score the
agreeing cases sit at the mode, the disagreeing ones are pulled to the mean),
and the mean over cases is biased. So σ_i is predicted from *other* cases
(``cross_fitted_sd``: the pooled within-case variance of the other cases of
the same group, leave-one-out), or from the free simulated replay. Given the
counts, each case's mean is then an unbiased, independent draw, and the
interval over case means (which estimates each mean's variance from the
spread of the case means) holds. tests/analysis/test_repeats.py shows the
gain and the coverage by simulation, and the bias of the rule that looks at
the case itself.

The judge's variance apart from the agent's: with a probe graded J times,
the judge's part is the mean within-probe variance over gradings and the
agent's (what the answers differ by) the variance of the probe means less
the judge's share of it (``judge_share``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np


def cross_fitted_sd(values: Mapping[Hashable, Sequence[float]],
                    groups: Mapping[Hashable, Hashable], prior_dof: float = 0.0
                    ) -> dict[Hashable, float]:
    """Each case's predicted within-case sd: the pooled within-case variance of
    the *other* cases of its group (each case's repeats so far, at least two
    for a case to count); a group with no other such case uses every other
    case. Never the case's own repeats. ``prior_dof`` > 0 shrinks a group's
    variance toward that of every other case on the log scale (a weighted
    geometric mean: the group's degrees of freedom against ``prior_dof``): a
    group of few cases predicts with a noisy variance, and counts that follow
    noise lose what equal counts would have had (Jensen); on the log scale a
    quiet group is not pulled up to the noisy groups' level."""
    ss, dof = {}, {}
    for case, vals in values.items():
        v = np.asarray(vals, dtype=float)
        v = v[~np.isnan(v)]
        ss[case] = float(np.sum((v - v.mean()) ** 2)) if len(v) > 1 else 0.0
        dof[case] = max(len(v) - 1, 0)
    by_group: dict[Hashable, list] = {}
    for case in values:
        by_group.setdefault(groups[case], []).append(case)
    total_ss, total_dof = sum(ss.values()), sum(dof.values())
    out = {}
    for case in values:
        peers = [c for c in by_group[groups[case]] if c != case]
        s, d = sum(ss[c] for c in peers), sum(dof[c] for c in peers)
        rest_ss, rest_dof = total_ss - ss[case], total_dof - dof[case]
        if d == 0:
            s, d = rest_ss, rest_dof
        elif prior_dof > 0 and rest_dof > 0 and s > 0 and rest_ss > 0:
            log_var = (d * math.log(s / d) + prior_dof * math.log(rest_ss / rest_dof)) / (d + prior_dof)
            s, d = math.exp(log_var), 1
        out[case] = math.sqrt(s / d) if d > 0 else 0.0
    return out


def allocate(predicted_sd: Mapping[Hashable, float], mean_repeats: float, r_min: int,
             r_max: int) -> dict[Hashable, int]:
    """Repeats per case proportional to its predicted within-case sd (Neyman),
    about ``mean_repeats`` on average, each within [r_min, r_max]. Equal sds (or
    all zero) give every case the mean."""
    sds = np.array(list(predicted_sd.values()), dtype=float)
    if len(sds) == 0:
        return {}
    if not np.any(sds > 0) or np.allclose(sds, sds[0]):
        r = int(min(max(round(mean_repeats), r_min), r_max))
        return dict.fromkeys(predicted_sd, r)
    scale = mean_repeats / sds.mean()
    for _ in range(20):  # rescale until the clipped counts average the budget
        counts = np.clip(np.round(sds * scale), r_min, r_max)
        if abs(counts.mean() - mean_repeats) < 0.5 / len(sds) or counts.mean() == 0:
            break
        scale *= mean_repeats / counts.mean()
    return {c: int(n) for c, n in zip(predicted_sd, counts, strict=True)}


def judge_share(grades) -> dict[str, float]:
    """Probes × gradings (NaN = missing): the judge's variance (mean over probes
    of the variance between gradings), the agent's (the variance of the probe
    means less the judge's part, J̄ gradings each) and the judge's share of one
    grading's total."""
    g = np.asarray(grades, dtype=float)
    counts = np.sum(~np.isnan(g), axis=1)
    g = g[counts > 1]
    if len(g) < 2:
        return {"judge": math.nan, "agent": math.nan, "share": math.nan}
    judge = float(np.nanmean(np.nanvar(g, axis=1, ddof=1)))
    j = float(np.mean(np.sum(~np.isnan(g), axis=1)))
    agent = max(float(np.var(np.nanmean(g, axis=1), ddof=1)) - judge / j, 0.0)
    total = judge + agent
    return {"judge": judge, "agent": agent, "share": judge / total if total > 0 else math.nan}
