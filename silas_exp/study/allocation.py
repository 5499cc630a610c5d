"""Repeats where the noise is, in a ``repeats=auto`` study: how many repeats
each case gets once the first ``repeats_min`` rounds have run every case.

The rule. After the look that ends round ``repeats_min``, each case's
within-case sd of the paired differences (variant − control, each gated
metric but errors, each variant still open) is predicted on those first
rounds alone by ``cross_fitted_sd`` from the *other* cases of its group (the
suite's stratum of a case: its flavour, the first tag, and its difficulty),
and divided by the sd of all the *other* cases; a metric counts for a case
when at least ``MIN_VARYING`` other cases' differences vary. That ratio,
averaged over metrics and variants, times ``repeats_max`` is the case's count
(Neyman: in proportion to its sd), within [``repeats_min``, ``repeats_max``]:
a case as noisy as the rest gets ``repeats_max``, a quieter one fewer. Round
r ≥ ``repeats_min`` then runs a case only while r is below its count, for the
control and every open variant alike: the pairs stay paired, and every arm of
a repeat shares its seeds. With too few cases to predict from, every case
gets ``repeats_max``: the design without allocation.

Why the interval stays valid. The counts are fixed once, from rounds that ran
every case, and a case's count is a function of the other cases' outcomes
only, never of its own: its group's sd, the others' sd it is divided by and
which metrics count all leave the case out, and the count is a fixed
proportion of that ratio, case by case (``stats.repeats.allocate``'s
rescaling to a total would read every case, and so the case itself through
its peers). Given its count, a case's mean over its repeats is then an
unbiased draw, independent of the other cases' means (the cases are the
independent units). The intervals (``silas_exp.stats.intervals``) are about
the mean of the case means, each case over the repeats it has, and estimate
its variance between cases, which holds with unequal repeats; the pass/fail
interval weighs each case alike. The counts are recorded in ``adaptive.json``
(``AdaptiveState.allocation``), so a resumed study runs the same pairs.
tests/analysis/test_repeats.py shows the coverage and the gain of this rule
by simulation, and the bias of a rule that reads the case's own repeats.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.stats.intervals import MIN_DISAGREEING
from silas_exp.stats.repeats import cross_fitted_sd

log = logging.getLogger(__name__)
# a group's variance is shrunk toward every other case's, on the log scale, as if that
# were worth this many degrees of freedom (cross_fitted_sd's prior_dof): simulated, it
# keeps most of the gain where sds differ and loses least where they do not
PRIOR_DOF = 4.0
MIN_VARYING = MIN_DISAGREEING  # below this many cases whose differences vary, a source is noise


def neyman_counts(relative: dict[str, float], repeats_min: int, repeats_max: int
                  ) -> dict[str, int]:
    """Repeats per case in proportion to its predicted sd relative to every
    other case's (:func:`relative_sd`): a case as noisy as the rest gets
    ``repeats_max``, a quieter one its share of it, none fewer than
    ``repeats_min``. A fixed proportion, case by case: ``allocate``'s
    rescaling to a total would read every case's prediction, and through its
    peers' predictions the case's own repeats."""
    return {c: int(np.clip(round(repeats_max * r), repeats_min, repeats_max))
            for c, r in relative.items()}


def relative_sd(differences: dict[str, dict[str, list[float]]], groups: dict[str, str],
                prior_dof: float = PRIOR_DOF, min_varying: int = MIN_VARYING) -> dict[str, float]:
    """Each case's predicted within-case sd of its paired differences relative to
    that of every other case, both without the case's own repeats: per source
    (a metric of a variant: ``differences[source][case]``) the sd of the other
    cases of its group (``cross_fitted_sd``) over the sd of all the other
    cases, averaged over the sources whose differences vary within at least
    ``min_varying`` of the other cases (a pass/fail difference that flipped in
    two cases says nothing of a kind of case). 1 where no source does."""
    cases = sorted(groups)
    everyone = dict.fromkeys(cases, 0)
    ratios: dict[str, list[float]] = {c: [] for c in cases}
    for by_case in differences.values():
        values = {c: by_case.get(c, []) for c in cases}
        varying = {c for c, v in values.items() if len(v) > 1 and float(np.var(v)) > 0}
        group_sd = cross_fitted_sd(values, groups, prior_dof)
        rest_sd = cross_fitted_sd(values, everyone)
        for c in cases:
            if len(varying - {c}) >= min_varying and rest_sd[c] > 0:
                ratios[c].append(group_sd[c] / rest_sd[c])
    return {c: float(np.mean(r)) if r else 1.0 for c, r in ratios.items()}


def case_groups(suite_path: Path, case_ids: list[str]) -> dict[str, str]:
    """Each case's group: its stratum in the suite (``flavour/difficulty``)."""
    from silas_exp.data.suites.blocks import stratum
    from silas_exp.data.suites.memo import load_suite_cached

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
