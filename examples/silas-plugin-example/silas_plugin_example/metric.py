"""``metrics.plugins=[example.evicted_share]``: the share of a case's items
that were evicted at least once (no direction: a descriptive metric that the
ablation report shows next to the gated ones)."""

from __future__ import annotations

from silas_exp.metrics.plugins import metric_kind
from silas_exp.metrics.registry import MetricSpec

SPEC = MetricSpec(key="example.evicted_share", direction="none", unit="share",
                  meaning="share of the case's needed items evicted at least once (example plug-in)",
                  report=("replay",))


def evicted_share(stats, oracle, horizon: int) -> float:
    needed = {e.ctx_id for e in stats.needs}
    if not needed:
        return float("nan")
    evicted = {cid for _, cid in stats.evictions}
    return len(needed & evicted) / len(needed)


KIND = metric_kind(SPEC, evicted_share)
