"""What the verdict rule lets through: a variant that ships (or a check with
no regression) may still be significantly worse than its control *within* a
margin, or flip more cases from pass to fail than noise gives. The rule allows
both, and the decision stands; a reviewer gets a warning line for each, and
``fail_on=[warning]`` (silas_exp.run.exit_policy) can gate on them.

* **Worse within the margin**: a gated metric's interval lies wholly on the
  worse side of zero (at the confidence the verdict was read at) but within
  the margin, so the metric is non-inferior.
* **Pass → fail beyond noise**: in a study, the cases (case runs) the control
  passed and the variant failed against those the other way, by the exact
  one-sided binomial test McNemar's is (under no effect the discordant pairs
  split evenly); in a regression check, the pass → fail flags against the
  count expected from noise, by a one-sided Poisson test. Both at the
  one-sided level of the verdict's own interval.
"""

from __future__ import annotations

import math

import numpy as np

from silas_exp.analysis.decision import margin_text
from silas_exp.analysis.result import ERROR_METRIC, PASS_METRIC, AblationResult
from silas_exp.metrics.names import display_name
from silas_exp.metrics.numbers import interval
from silas_exp.metrics.registry import spec
from silas_exp.stats import MetricCall, Oriented, Outcome

WARNING = "warning"  # the token fail_on names and the tables count


def worse_within_margin(r: AblationResult, variant: str) -> list[str]:
    """A line per gated metric significantly worse than the control, yet
    within its margin (non-inferior)."""
    out = []
    for c in r.comparisons:
        if c.variant != variant or c.metric not in r.gated or c.metric == ERROR_METRIC:
            continue
        o = Oriented.of(c.delta, c.ci_low, c.ci_high, spec(c.metric).direction)
        if c.call is MetricCall.NONINFERIOR and o.high < 0:
            out.append(f"{display_name(c.metric)} is worse than the control within its margin: "
                       f"Δ {interval(c.delta, c.ci_low, c.ci_high)} ({margin_text(c.margin)})")
    return out


def pass_flips(worse: int, better: int, level: float) -> str | None:
    """``worse`` pass → fail against ``better`` fail → pass: a line when the
    exact one-sided binomial (McNemar) test finds more pass → fail than noise
    gives at ``level``."""
    from scipy.stats import binom

    n = worse + better
    if n == 0 or worse <= better:
        return None
    p = float(binom.sf(worse - 1, n, 0.5))
    if p >= level:
        return None
    return (f"{worse} pass → fail against {better} fail → pass: more than noise gives "
            f"(one-sided p = {p:.2g})")


def flags_beyond(observed: int, expected: float, level: float) -> str | None:
    """``observed`` pass → fail flags against ``expected`` from noise: a line
    when a one-sided Poisson test finds more at ``level``."""
    from scipy.stats import poisson

    if math.isnan(expected) or observed <= expected:
        return None
    p = float(poisson.sf(observed - 1, max(expected, 1e-9)))
    if p >= level:
        return None
    return (f"{observed} pass → fail, ≈ {expected:.1f} expected from noise: more than noise "
            f"gives (one-sided p = {p:.2g})")


def study_warnings(data, r: AblationResult) -> dict[str, list[str]]:
    """variant -> its warning lines, for every variant that ships."""
    out = {}
    for variant, vv in r.verdicts.items():
        if vv.outcome is not Outcome.SHIP:
            continue
        lines = worse_within_margin(r, variant)
        c = next((c for c in r.comparisons if c.variant == variant and c.metric == PASS_METRIC),
                 None)
        if c is not None:
            _, m = data.matrix(variant, r.control, PASS_METRIC)
            flips = pass_flips(int(np.sum(m == -1)), int(np.sum(m == 1)),
                               (1 - c.confidence) / 2)
            lines += [flips] if flips else []
        if lines:
            out[variant] = lines
    return out


def check_warnings(r: AblationResult, checked: str, pass_to_fail: int, expected: float
                   ) -> list[str]:
    """A regression check's warning lines when it finds no regression: the
    checked configuration's gated metrics worse within their margins, and its
    pass → fail flags beyond the count expected from noise."""
    if r.verdicts[checked].outcome is not Outcome.SHIP:
        return []
    lines = worse_within_margin(r, checked)
    flips = flags_beyond(pass_to_fail, expected, (1 - r.confidence) / 2)
    return lines + ([flips] if flips else [])
