"""How often a job process runs Python's cyclic garbage collector.

A replay allocates containers by the million (tuples, records, small lists and
dicts) that die young and form no reference cycles (a live item refers to its
window only weakly); reference counting frees them. CPython's default
thresholds (700, 10, 10) run the collector after every 700 net container
allocations, and every tenth and hundredth run walks older generations, up to
every object the process holds (Hydra, numpy, scipy, the loaded suite). In the
README sweep that was ~2,000 collections and about a tenth of the sweep's CPU,
spent mostly walking objects that were still alive.

A first threshold of 10,000 runs it ~20 times less often; cycles are still
collected, a little later. Nothing else changes: collection timing touches no
result (the replay golden digests and the README sweep's outputs are the same
either way). ``bench/README.md`` (the rounds) has the figures.
"""

from __future__ import annotations

import gc

CPYTHON_DEFAULT = (700, 10, 10)
JOB_THRESHOLDS = (10_000, 20, 20)


def tune_for_jobs() -> None:
    """Use the job thresholds, unless the process already chose its own
    (an embedding application, or a user's ``gc.set_threshold``)."""
    if gc.get_threshold() == CPYTHON_DEFAULT:
        gc.set_threshold(*JOB_THRESHOLDS)
