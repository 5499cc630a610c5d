"""Scores on a grid: the harness's decisions do not hinge on a score's last bits.

A scorer's relevance is a float computed with numpy: a dot product that
OpenBLAS runs with a kernel chosen per CPU (Haswell, SkylakeX, Zen,
Sandybridge …) and an ``exp`` whose SIMD code path depends on the CPU too.
Across kernels the same score differs by a few units in the last place
(measured: ≤ 2e-15 relative on the golden replay sessions). Two items whose
scores tie in exact arithmetic then rank one way on one machine and the other
way on the next, and a sweep's per-case results move with the machine.

The harness therefore reads every score on a grid of ``2**-32`` (≈ 2.3e-10)
before it ranks, groups, proposes or measures with it: scores closer than the
grid are the same score, and equal scores are ordered by ``ctx_id`` (see
:func:`silas_exp.eviction.two_tier.keep_first`). Snapping is exact
arithmetic (a power-of-two scale and ``rint``), so a snapped score is the same
float on every machine unless the unsnapped one lies within float noise of a
grid boundary: with noise ≤ 2e-15 that is a chance of about 1e-5 per score
that sits in a near-tie, and zero for a score that does not.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

SCORE_GRID_BITS = 32
_SCALE = float(2**SCORE_GRID_BITS)


def on_grid(scores: Mapping[str, float]) -> dict[str, float]:
    """``scores`` rounded to the nearest multiple of ``2**-32``. NaN and ±inf
    pass through unchanged, for the score contract's check to name them; so
    does anything that is not a real number."""
    values = list(scores.values())
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return dict(scores)
    snapped = np.rint(x * _SCALE) / _SCALE
    if set(map(type, values)) == {float}:  # every score a plain float: all snapped
        return dict(zip(scores, snapped.tolist(), strict=True))
    # a value that is not a float stays as it was (an int score stays an int for the schema)
    return {cid: (s if isinstance(v, float) else v)
            for cid, v, s in zip(scores, values, snapped.tolist(), strict=True)}
