"""Statistics over per-case metric arrays (a layer separate from the metrics).

The scipy-backed modules (``correction``, ``paired``, ``power``) load on first
use (PEP 562): scipy.stats costs ~0.5 s to import, and a sweep's jobs only need
the pure-numpy ones.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from silas_exp.stats.agreement import cohens_kappa
from silas_exp.stats.bootstrap import BootstrapCI, cluster_bootstrap_ci
from silas_exp.stats.intervals import Interval, disagreement_scale, paired_interval
from silas_exp.stats.noninferiority import (
    MetricCall,
    Oriented,
    Outcome,
    cases_needed,
    combine,
    metric_call,
)
from silas_exp.stats.sprt import SPRTResult, sprt_run, sprt_with_pilot
from silas_exp.stats.verdict import Verdict, verdict

if TYPE_CHECKING:
    from silas_exp.stats.correction import benjamini_hochberg, holm
    from silas_exp.stats.paired import (
        TestResult,
        cohens_dz,
        paired_permutation,
        paired_t,
        paired_wilcoxon,
    )
    from silas_exp.stats.power import paired_power, required_n_paired

_LAZY = {
    "benjamini_hochberg": "correction", "holm": "correction",
    "TestResult": "paired", "cohens_dz": "paired", "paired_permutation": "paired",
    "paired_t": "paired", "paired_wilcoxon": "paired",
    "paired_power": "power", "required_n_paired": "power",
}

__all__ = [
    "BootstrapCI", "Interval", "MetricCall", "Oriented", "Outcome", "SPRTResult", "TestResult",
    "Verdict", "benjamini_hochberg", "cases_needed", "cluster_bootstrap_ci", "cohens_dz",
    "cohens_kappa", "combine", "disagreement_scale", "holm", "metric_call", "paired_interval",
    "paired_permutation", "paired_power", "paired_t",
    "paired_wilcoxon", "required_n_paired", "sprt_run", "sprt_with_pilot", "verdict",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'silas_exp.stats' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"silas_exp.stats.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
