"""Repeats where the noise is, in a ``repeats=auto`` study: how many repeats
each case gets once the first ``repeats_min`` rounds have run every case.

The rule. After the look that ends round ``repeats_min``, each case's
within-case sd of the paired differences (variant − control, each gated
metric, each variant still open) is predicted by ``cross_fitted_sd`` from the
*other* cases of its group (the suite's stratum of a case: its flavour, the
first tag, and its difficulty), on those first rounds alone. The sds of a
metric are put on one scale (divided by their mean over the cases), averaged
over metrics and variants, and ``allocate`` gives each case repeats in
proportion (Neyman), the noisiest case ``repeats_max``, none fewer than
``repeats_min``. Round r ≥ ``repeats_min`` then runs a case only while r is
below its count, for the control and every open variant alike: the pairs stay
paired, and every arm of a repeat shares its seeds. Where every predicted sd
is the same, every case gets ``repeats_max``: the design without allocation.

Why the interval stays valid. The counts are fixed once, from rounds that ran
every case, and a case's count is a function of the other cases' outcomes
only, never of its own: given its count, a case's mean over its repeats is an
unbiased draw, independent of the other cases' means (the cases are the
independent units). The intervals (``silas_exp.stats.intervals``) are about
the mean of the case means, each case over the repeats it has, and estimate
its variance between cases, which holds with unequal repeats; the pass/fail
interval weighs each case alike. The counts are recorded in ``adaptive.json``
(``AdaptiveState.allocation``), so a resumed study runs the same pairs.
tests/analysis/test_repeats.py shows the gain and the coverage of this rule
by simulation, and the bias of a rule that reads the case's own repeats.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.stats.repeats import allocate, cross_fitted_sd

log = logging.getLogger(__name__)
# a group's variance is shrunk toward every other case's, on the log scale, as if that
# were worth this many degrees of freedom (cross_fitted_sd's prior_dof): simulated, it
# keeps most of the gain where sds differ and loses least where they do not
PRIOR_DOF = 4.0


def neyman_counts(predicted_sd: dict[str, float], repeats_min: int, repeats_max: int
                  ) -> dict[str, int]:
    """Repeats per case in proportion to its predicted sd: the noisiest case
    ``repeats_max``, none fewer than ``repeats_min``; equal (or no) sds give
    every case ``repeats_max``."""
    sds = np.array(list(predicted_sd.values()), dtype=float)
    if len(sds) == 0 or not np.any(sds > 0):
        return dict.fromkeys(predicted_sd, repeats_max)
    # the repeats in all when the noisiest case gets repeats_max and the others their
    # share of it (at least repeats_min); allocate spreads that total by Neyman
    budget = float(np.clip(repeats_max * sds / sds.max(), repeats_min, repeats_max).mean())
    return allocate(predicted_sd, budget, repeats_min, repeats_max)


def relative_sd(differences: dict[str, dict[str, list[float]]], groups: dict[str, str],
                prior_dof: float = PRIOR_DOF) -> dict[str, float]:
    """Each case's predicted within-case sd of its paired differences, cross-fitted
    within its group, on one scale: per source (a metric of a variant:
    ``differences[source][case]``) divided by its mean over the cases, then
    averaged over the sources whose differences vary at all."""
    cases = sorted(groups)
    scaled = []
    for by_case in differences.values():
        values = {c: by_case.get(c, []) for c in cases}
        sd = cross_fitted_sd(values, groups, prior_dof)
        mean = float(np.mean(list(sd.values()))) if sd else 0.0
        if mean > 0:
            scaled.append([sd[c] / mean for c in cases])
    if not scaled:
        return dict.fromkeys(cases, 0.0)
    return dict(zip(cases, np.mean(scaled, axis=0).tolist(), strict=True))


def case_groups(suite_path: Path, case_ids: list[str]) -> dict[str, str]:
    """Each case's group: its stratum in the suite (``flavour/difficulty``)."""
    from silas_exp.data.suites.memo import load_suite_cached
    from silas_exp.tune.split import stratum

    loaded = load_suite_cached(str(suite_path))
    return {c: stratum(case.tags, case.difficulty)
            for c in case_ids for case in (loaded.case(c),)}


def allocate_repeats(sweep_dir: Path, settings: AnalysisSettings, state, suite_path: Path,
                     variants: list[str]) -> None:
    """Fix ``state.allocation`` (and ``state.predicted_sd``) from the first
    ``repeats_min`` rounds of ``variants`` (the open ones) against the control,
    once; a study that has it (a resumed one) keeps it."""
    from silas_exp.analysis.ablation import pick_control, suite_kind
    from silas_exp.analysis.data import load_sweep_dir
    from silas_exp.errors import AnalysisError
    from silas_exp.metrics.registry import ALWAYS_GATED, gate_of

    if state.allocation is not None:
        return
    try:
        data = load_sweep_dir(sweep_dir, keep=lambda r: r.repeat < state.repeats_min)
        control, _ = pick_control(data, settings)
    except AnalysisError:
        return  # nothing to predict from: every case keeps every round
    metrics = [m for m in gate_of(suite_kind(data), settings.gate) if m != ALWAYS_GATED[1]]
    differences, cases = {}, set()
    for variant in (v for v in variants if v in data.variants() and v != control):
        for metric in metrics:
            ids, m = data.matrix(variant, control, metric)
            differences[f"{variant}/{metric}"] = {
                c: [x for x in row if not math.isnan(x)] for c, row in zip(ids, m.tolist(), strict=True)}
            cases.update(ids)
    if not cases:
        return
    predicted = relative_sd(differences, case_groups(suite_path, sorted(cases)))
    state.predicted_sd = predicted
    state.allocation = neyman_counts(predicted, state.repeats_min, state.repeats_max)
    pairs = sum(state.allocation.values())
    log.info(f"Adaptive repeats: repeats where the noise is: {len(cases)} cases get "
             f"{min(state.allocation.values())} to {max(state.allocation.values())} repeats, "
             f"{pairs} (case, repeat) pairs per arm of {len(cases) * state.repeats_max}")
    state.write(sweep_dir)
