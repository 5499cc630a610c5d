"""Statistics over per-case metric arrays (a layer separate from the metrics)."""

from silas_exp.stats.agreement import cohens_kappa
from silas_exp.stats.bootstrap import BootstrapCI, cluster_bootstrap_ci
from silas_exp.stats.correction import benjamini_hochberg, holm
from silas_exp.stats.paired import (
    TestResult,
    cohens_dz,
    paired_permutation,
    paired_t,
    paired_wilcoxon,
)
from silas_exp.stats.power import paired_power, required_n_paired
from silas_exp.stats.sprt import SPRTResult, sprt_run
from silas_exp.stats.verdict import Verdict, may_ship, verdict

__all__ = [
    "BootstrapCI", "SPRTResult", "TestResult", "Verdict", "benjamini_hochberg",
    "cluster_bootstrap_ci", "cohens_dz", "cohens_kappa", "holm", "may_ship", "paired_permutation",
    "paired_power", "paired_t", "paired_wilcoxon", "required_n_paired", "sprt_run", "verdict",
]
