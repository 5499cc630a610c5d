"""Large generated suites for scale checks: N evaluation cases of realistic
length, mixed like the shipped default suite, plus its 8 calibration cases.

    silas-exp generate-suite --cases 10000      # -> data/benchmarks/scale-10000

Deterministic in (cases, seed); the shape of case ``i`` (flavour, length,
fill) depends on (seed, i) alone, so suites of every size mix alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from silas_exp.data.suites.build import CaseMix, SuiteRecipe, write_suite
from silas_exp.errors import ConfigError

FLAVOURS = ("coding", "debugging", "research", "support", "chronicle")
FILLS = (2.5, 3.5, 4.5)  # the default suite's eval fill levels
MEDIAN_TURNS, TURNS_SIGMA, MIN_TURNS, MAX_TURNS = 120, 0.5, 30, 400
CALIBRATION = tuple(CaseMix(f, 80, 2.0, "calibration")
                    for f in ("coding", "debugging", "research", "support") for _ in range(2))


def scale_mix(index: int, seed: int, median_turns: int = MEDIAN_TURNS) -> CaseMix:
    """Case ``index``: a flavour, a fill level and a session length around
    ``median_turns`` (log-normal, clipped to 30..400 turns), drawn from (seed,
    index) alone."""
    rng = np.random.default_rng([seed, index])
    turns = int(np.clip(round(median_turns * float(np.exp(rng.normal(0.0, TURNS_SIGMA)))),
                        MIN_TURNS, MAX_TURNS))
    return CaseMix(FLAVOURS[int(rng.integers(len(FLAVOURS)))], turns,
                   FILLS[int(rng.integers(len(FILLS)))])


def scale_name(cases: int, median_turns: int = MEDIAN_TURNS) -> str:
    return f"scale-{cases}" + ("" if median_turns == MEDIAN_TURNS else f"-t{median_turns}")


def scale_recipe(cases: int, seed: int = 0, median_turns: int = MEDIAN_TURNS) -> SuiteRecipe:
    if cases < 1:
        raise ConfigError(f"--cases must be at least 1 (got {cases}); pass the number of "
                          "evaluation cases the suite should hold")
    return SuiteRecipe(
        name=scale_name(cases, median_turns), version="1.0.0", seed=seed,
        description=f"{cases} generated sessions for scale checks (silas_exp.data.suites.scale): "
                    f"default-suite flavours and fill levels, {MIN_TURNS} to {MAX_TURNS} turns "
                    f"(median {median_turns}), plus 8 calibration cases.",
        mix=tuple(scale_mix(i, seed, median_turns) for i in range(cases)) + CALIBRATION,
        scorer_target=True, mask_after=20, pass_threshold=0.7,
    )


def write_scale_suite(cases: int, root: Path, seed: int = 0,
                      median_turns: int = MEDIAN_TURNS) -> Path:
    """Write the suite to ``root/<scale_name>`` and return that folder."""
    return write_suite(scale_recipe(cases, seed, median_turns), root)
