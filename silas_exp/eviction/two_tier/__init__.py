"""Silas two-tier eviction: the strategy (``strategy.py``), and the compiled
replay that stands in for its Python replay where it can (``compiled.py``
encoding and decoding, ``kernel.py`` the loop on arrays)."""

from silas_exp.eviction.two_tier.strategy import TwoTierEviction, TwoTierSettings
from silas_exp.eviction.two_tier.units import (
    candidate_records,
    eviction_units,
    keep_first,
    ranked_units,
    units_by_key,
)

__all__ = [
    "TwoTierEviction",
    "TwoTierSettings",
    "candidate_records",
    "eviction_units",
    "keep_first",
    "ranked_units",
    "units_by_key",
]
