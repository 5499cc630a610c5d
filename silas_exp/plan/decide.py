"""What would decide a variant the pool is unlikely to decide: the cases it
would need (and whether the pool has them), repeats, or the margin it could
decide at.

* **Cases**: the verdict's own count (``n_needed``: the interval shrinking as
  1/√cases from where it stands) at the last look of each simulated study that
  ended inconclusive; the plan gives their median.
* **Margin**: on the simulated replay of the whole pool, read at the last
  look's confidence, the margin at which each undecided gated metric's
  worse-side bound would clear it.
* **Repeats**: they narrow only the within-case part of the interval
  (docs/analysis.md, "Cases or repeats"); from one repeat per case that part
  cannot be told, so the plan says what would measure it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from silas_exp.stats import MetricCall, Oriented, Outcome

UNLIKELY = 0.2  # a variant left inconclusive in at least this share of simulated studies


def what_would_decide(design, sim, variant: str, chances: Mapping[str, float]) -> list[str]:
    from silas_exp.analysis.ablation import ablation
    from silas_exp.analysis.decision import about, needed_text
    from silas_exp.metrics.names import display_name
    from silas_exp.metrics.numbers import declared
    from silas_exp.metrics.registry import spec

    if chances.get(Outcome.INCONCLUSIVE.value, 0.0) < UNLIKELY:
        return []
    pool = design.pool_cases
    out = []
    needs = [n[variant] for n, s in zip(sim.needs, sim.states, strict=True)
             if s.closed[variant]["outcome"] == Outcome.INCONCLUSIVE.value and n.get(variant)]
    if needs:
        n = int(np.median(needs))
        out.append(f"cases: {needed_text(n, pool, design.repeats)} (median of the simulated "
                   f"studies left inconclusive)"
                   + ("" if n > pool else f"; a study drawing the whole pool decides "
                                          f"{1 - chances.get('inconclusive', 0):.0%} of the time"))
    twin = sim.twin
    blocks = twin.blocks_of(variant)
    settings = design.cfg.analysis.model_copy(update={
        "control": design.control, "use_baseline": False,
        "confidence": design.state.confidence_at(blocks)})
    result = ablation(twin.sweep_data(blocks, [design.control, variant]), settings,
                      metrics=sim.gated, pool_cases=pool, descriptive=False)
    for c in result.comparisons:
        if c.variant != variant or c.metric not in result.gated or c.call is not MetricCall.UNDECIDED:
            continue
        d = Oriented.of(c.delta, c.ci_low, c.ci_high, spec(c.metric).direction)
        if d.low < 0:
            out.append(f"margin: {display_name(c.metric)} would decide at a margin of "
                       f"{declared(-d.low)} (declared {declared(c.margin)}), on the simulated "
                       f"replay of {design.cases_at(blocks)} cases")
    if design.repeats == 1:
        out.append("repeats: from one repeat per case the within-case share of the interval "
                   "cannot be told (repeats=2 measures it); common random numbers leave the "
                   "simulated model little, so cases buy more than repeats here")
    if not out:
        out.append(f"cases: {about(pool)} cases, the whole pool, decide it on the simulated "
                   "replay; the real model's departure is what leaves it open")
    return out
