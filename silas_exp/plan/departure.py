"""How far the real model is from the simulated one, for a plan's worlds
(``silas_exp.plan.worlds``): assumed (``plan.departure``) unless real-model
history measures it.

The history is the suite's promoted baseline when a real model produced it
(``simulated: false``) with the study's model: its per-case results beside
the twin's replay of the same configuration on the same cases and seeds. Per
gated metric, the real values' mean shift and residual spread around the
twin's, each in the twin's per-case sd, give a distance D (their root mean
square over the metrics); ``DISTANCE`` maps D back to a share of departed
decisions, as measured with the departing model of the benches on the
control's configuration (60 cases of the default pool, bench/bench_plan.py
--departure): D is 0.24 at 0.2, 0.45 at 0.5, 0.56 at 1.0. The measured share
is widened by ``WIDEN`` either way (a baseline is one configuration, on its
cases only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from silas_exp.plan.worlds import Departure

DISTANCE = ((0.0, 0.0), (0.2, 0.24), (0.5, 0.45), (1.0, 0.56))  # (share, D) measured
WIDEN = 0.1
MIN_PAIRS = 6


def default_departure(low: float, high: float, why: str) -> Departure:
    return Departure(low, high, f"assumed: plan.departure=[{low:g}, {high:g}] ({why})")


def share_of_distance(distance: float) -> float:
    """The departed share whose distance is ``distance`` (1 beyond the table)."""
    shares, ds = zip(*DISTANCE, strict=True)
    if distance >= ds[-1]:
        return 1.0
    return float(np.interp(distance, ds, shares))


def distance(real: Sequence[tuple[float, float]]) -> float | None:
    """D of (real, twin) value pairs of one metric: the real values' mean shift
    and residual sd around the twin's, in the twin's per-case sd."""
    pairs = np.array([(a, b) for a, b in real if not (math.isnan(a) or math.isnan(b))], float)
    if len(pairs) < MIN_PAIRS:
        return None
    sd = float(np.std(pairs[:, 1], ddof=1))
    if not sd > 0:
        return None
    diff = pairs[:, 0] - pairs[:, 1]
    return math.hypot(float(np.mean(diff)) / sd, float(np.std(diff, ddof=1)) / sd)


def measured_departure(record, twin_values, metrics: Sequence[str]) -> Departure | None:
    """The departure the baseline ``record`` (real-model results) shows against
    ``twin_values(metric)`` ({(case id, repeat): value} of its configuration
    replayed by the twin on the same cases and seeds); None when too few pairs."""
    real: dict[str, dict[tuple[str, int], float]] = {}
    for job in record.jobs:
        for r in job.results:
            row = dict(r.metrics)
            row["summary.pass"] = math.nan if r.status == "skipped" else float(r.status == "pass")
            for m in metrics:
                real.setdefault(m, {})[(r.case_id, job.repeat)] = float(row.get(m, math.nan))
    found = []
    for m in metrics:
        twin = twin_values(m)
        d = distance([(v, twin.get(key, math.nan)) for key, v in real.get(m, {}).items()])
        if d is not None:
            found.append(d)
    if not found:
        return None
    dist = math.sqrt(float(np.mean(np.square(found))))
    share = share_of_distance(dist)
    low, high = max(0.0, share - WIDEN), min(1.0, share + WIDEN)
    cases = len({k for v in real.values() for k in v})
    return Departure(low, high, f"measured: the promoted baseline {record.name} (a real model, "
                                f"{cases} case runs) against its simulated replay on the same "
                                f"cases and seeds: distance {dist:.2f}, a departed share of about "
                                f"{share:.2f}")
