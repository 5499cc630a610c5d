"""Sequential studies: after each round, settle the variants whose verdict is
decided and stop running them. A round adds one repeat of every case
(``repeats=auto``, unit "repeat") or one block of new cases at the configured
repeats (sequential over cases, unit "block", the default for a suite larger
than ``cases_per_block``).

The sweeper runs round r of every open variant and of the control, then
calls :func:`review`. A variant closes when, at the look's confidence of the
study's alpha-spending plan (silas_exp.stats.sequential: group-sequential
boundaries over blocks of new cases, Bonferroni over repeats), its verdict is
ship or do not ship; when even ``repeats_max`` repeats could not decide
(futility: inconclusive, with the cases that would); or at ``repeats_max``.
The state is ``adaptive.json`` in the sweep folder, so the end-of-sweep
report uses the same confidence and names the round each variant stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from silas_exp.analysis.ablation import AblationResult, ablation, suite_kind
from silas_exp.analysis.data import load_sweep_dir
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.errors import AnalysisError
from silas_exp.metrics.registry import gated_for, spec
from silas_exp.records import ADAPTIVE_FILE
from silas_exp.stats import MetricCall, Oriented, Outcome
from silas_exp.stats.sequential import (
    chances_at_max,
    decide_chances,
    futile,
    look_confidence,
    look_rounds,
    look_z,
    spending_confidences,
)


@dataclass
class AdaptiveState:
    repeats_min: int
    repeats_max: int
    looks: list[int]  # the rounds after which verdicts are looked at
    confidence: float  # two-sided confidence of each look (the last look's, if they differ)
    control: str | None = None
    closed: dict[str, dict] = field(default_factory=dict)  # variant -> round, outcome, why
    unit: str = "repeat"  # what a round adds: "repeat" (same cases) or "block" (new cases)
    cases_per_block: int | None = None  # unit "block": cases a round adds
    pool_cases: int | None = None  # unit "block": cases in the pool (the most a study can use)
    seed: int | None = None  # unit "block": the seed that fixed the order of the cases
    confidences: list[float] | None = None  # unit "block": each look's, by its boundary

    @classmethod
    def plan(cls, settings: AnalysisSettings, repeats_min: int, repeats_max: int) -> AdaptiveState:
        looks = look_rounds(repeats_min, repeats_max)
        return cls(repeats_min, repeats_max, looks, look_confidence(settings.confidence,
                                                                     len(looks)))

    @classmethod
    def plan_blocks(cls, settings: AnalysisSettings, blocks: int, cases_per_block: int,
                    pool_cases: int, seed: int) -> AdaptiveState:
        """Looks after blocks 1, 2, 4, … and the last, each at the confidence
        of its group-sequential boundary (information fraction = cases so far
        over the pool's)."""
        looks = look_rounds(1, blocks) if blocks > 1 else [1]
        cases = [min(b * cases_per_block, pool_cases) for b in looks]
        confidences = spending_confidences(settings.confidence,
                                           tuple(n / pool_cases for n in cases))
        return cls(1, blocks, looks, confidences[-1], unit="block",
                   cases_per_block=cases_per_block, pool_cases=pool_cases, seed=seed,
                   confidences=confidences)

    def confidence_at(self, round_: int) -> float:
        """The two-sided confidence of the look after ``round_`` (or of the
        first look after it)."""
        if not self.confidences:
            return self.confidence
        for look, conf in zip(self.looks, self.confidences, strict=True):
            if round_ <= look:
                return conf
        return self.confidences[-1]

    def closed_confidences(self) -> dict[str, float]:
        """Each closed variant's look confidence: the one its verdict was read at."""
        return {v: self.confidence_at(c["round"]) for v, c in self.closed.items()}

    def write(self, folder: Path) -> None:
        tmp = folder / (ADAPTIVE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(folder / ADAPTIVE_FILE)

    @classmethod
    def read(cls, folder: Path) -> AdaptiveState | None:
        path = folder / ADAPTIVE_FILE
        return cls.from_json(path.read_text()) if path.is_file() else None

    @classmethod
    def from_json(cls, text: str) -> AdaptiveState:
        return cls(**json.loads(text))


def _undecided(r: AblationResult, variant: str):
    """The variant's undecided gated comparisons, each with its difference
    oriented so that positive is better."""
    for c in r.comparisons:
        if c.variant == variant and c.metric in r.gated and c.call is MetricCall.UNDECIDED:
            yield c, Oriented.of(c.delta, c.ci_low, c.ci_high, spec(c.metric).direction)


def _needed(c) -> str:
    return f"{c.metric} (≈ {c.n_needed or '?'} cases)"


def _futile(r: AblationResult, data, variant: str, repeats_max: int) -> str | None:
    """Why more repeats of the same cases cannot decide ``variant``, or None."""
    chances, names = [], []
    for c, d in _undecided(r, variant):
        if c.n_cases < r.min_cases:
            return f"only {c.n_cases} cases; repeats cannot add cases"
        _, m = data.matrix(variant, r.control, c.metric)
        chances.append(chances_at_max(m, d.estimate, d.low, d.high, c.margin, repeats_max,
                                      r.confidence, c.n_cases))
        names.append(_needed(c))
    if futile(chances):
        return (f"under 10% chance that {repeats_max} repeats decide; more cases would: "
                + ", ".join(names))
    return None


def _futile_cases(r: AblationResult, variant: str, pool_cases: int,
                  final_confidence: float) -> str | None:
    """Why the rest of the pool cannot decide ``variant``, or None: the
    predictive power of the whole pool (Spiegelhalter's: conditional power
    averaged over where the truth may lie given the cases so far, so an
    unlucky first blocks do not end a study that the pool could still
    decide), with the interval shrinking as 1/sqrt(cases)."""
    chances, names = [], []
    for c, d in _undecided(r, variant):
        if c.n_cases >= pool_cases:
            return f"the pool's {pool_cases} cases are used up"
        z_now, z_end = look_z(r.confidence, c.n_cases), look_z(final_confidence, pool_cases)
        h_max = (d.high - d.low) / 2 * (max(c.n_cases, 1) / pool_cases) ** 0.5 * z_end / z_now
        # the final estimate's predictive variance is the conditional one x N/n
        chances.append(decide_chances(d.estimate, d.low, d.high, c.margin, h_max, z_end,
                                      spread=(pool_cases / max(c.n_cases, 1)) ** 0.5,
                                      z_now=z_now))
        names.append(_needed(c))
    if futile(chances):
        return (f"under 10% chance that the pool's {pool_cases} cases decide; it would take: "
                + ", ".join(names))
    return None


def review(sweep_dir: Path, settings: AnalysisSettings, state: AdaptiveState, round_: int,
           suite_dir: Path | None = None) -> AdaptiveState:
    """Close the variants decided after ``round_`` rounds (1-based); write the state."""
    if look_and_close(load_sweep_dir(sweep_dir, suite_dir), settings, state, round_) is not None:
        state.write(sweep_dir)
    return state


def look_and_close(data, settings: AnalysisSettings, state: AdaptiveState, round_: int
                   ) -> AblationResult | None:
    """One look at ``data`` after ``round_`` rounds: the ablation at this look's
    confidence and the stopping rule (:func:`close_decided`); None when nothing
    can be compared yet."""
    looked = settings.model_copy(update={"confidence": state.confidence_at(round_)})
    try:  # a look needs the gated metrics only: the verdicts and futility read nothing else
        result = ablation(data, looked, metrics=list(settings.gate) if settings.gate
                          else gated_for(suite_kind(data)))
    except AnalysisError:
        return None  # e.g. nothing finished yet: look again after the next round
    close_decided(result, data, state, round_)
    return result


def close_decided(result: AblationResult, data, state: AdaptiveState, round_: int) -> None:
    """The stopping rule at one look: close every open variant whose verdict is
    decided, or that the study's remaining rounds cannot decide."""
    state.control = result.control
    for variant, vv in result.verdicts.items():
        if variant in state.closed:
            continue
        why = None
        if vv.outcome is not Outcome.INCONCLUSIVE:
            why = "; ".join(vv.reasons)
        elif round_ >= state.repeats_max:
            why = (f"repeats_max={state.repeats_max} reached: " if state.unit == "repeat" else
                   f"the pool's {state.pool_cases} cases are used up: ") + "; ".join(vv.reasons)
        elif state.unit == "block":
            why = _futile_cases(result, variant, state.pool_cases or 0, state.confidence)
        else:
            why = _futile(result, data, variant, state.repeats_max)
        if why:
            state.closed[variant] = {"round": round_, "outcome": vv.outcome.value, "why": why}


def read_as_decided(state: AdaptiveState | None, settings: AnalysisSettings | None
                    ) -> tuple[AnalysisSettings | None, dict[str, float] | None, list[str]]:
    """How to re-read a sweep as its study decided it (``state``: its
    ``adaptive.json``): the settings at the last look's confidence, each
    stopped variant's own look confidence and the report lines of the plan.
    A sweep without a sequential plan reads as it is (``settings``, None, [])."""
    if state is None or settings is None:
        return settings, None, []
    return (settings.model_copy(update={"confidence": state.confidence}),
            state.closed_confidences(), adaptive_notes(state))


def run_looks(state: AdaptiveState, variants: Mapping[str, Any],
              round_jobs: Callable[[int, list], list], launch: Callable[[list, int], Any],
              look: Callable[[int], None], before: Callable[[int], None] | None = None,
              follow: Collection[str] = ()) -> list:
    """Run a study in rounds: the rounds up to each planned look in one launch
    (no variant can close between looks, so the launcher gets every job it
    could run in parallel), for the control and every variant still open,
    until every variant but the control is closed or the rounds run out.
    ``round_jobs(r, jobs)``: round r of the open variants' jobs;
    ``launch(batch, first_index)``; ``look(round)`` reviews the verdicts after
    each look, closing variants in ``state``; ``before(r)`` runs as round r is
    planned. ``follow``: variants that, like the control, run while another
    one is open and never keep the study going by themselves. Returns what
    each launch returned."""
    returns, index, first = [], 0, 0
    for at in state.looks:
        open_ = [v for v in variants
                 if v not in state.closed and v != state.control and v not in follow]
        if not open_:
            break
        jobs = [job for v, job in variants.items() if v not in state.closed]
        batch = []
        for r in range(first, at):
            batch += round_jobs(r, jobs)
            if before is not None:
                before(r)
        returns.append(launch(batch, index))
        index += len(batch)
        look(at)
        first = at
    return returns


def adaptive_notes(state: AdaptiveState) -> list[str]:
    """Report lines: the plan and where each variant stopped."""
    if state.unit == "block":
        size = state.cases_per_block or 0
        if state.confidences:
            plan = ("group-sequential alpha spending, Kim–DeMets power rho=2: two-sided "
                    "confidence " + ", ".join(f"{c:.2%}" for c in state.confidences)
                    + " at those looks")
        else:  # a study planned before looks had their own boundaries
            plan = (f"Bonferroni alpha spending over {len(state.looks)} looks: each at "
                    f"{state.confidence:.2%} two-sided confidence")
        notes = [f"sequential over cases: blocks of {size} cases drawn from a pool of "
                 f"{state.pool_cases} in the order seed={state.seed} fixes; verdicts looked at "
                 f"after blocks {', '.join(map(str, state.looks))} ({plan})"]
        notes += [f"{v} stopped after block {c['round']} ({min(c['round'] * size, state.pool_cases or 0)} "
                  f"cases, read at {state.confidence_at(c['round']):.2%} confidence): "
                  f"{c['outcome']} — {c['why']}" for v, c in sorted(state.closed.items())]
        return notes
    notes = [f"repeats=auto: verdicts looked at after rounds "
             f"{', '.join(map(str, state.looks))} (Bonferroni alpha spending over "
             f"{len(state.looks)} looks: each at {state.confidence:.2%} two-sided confidence)"]
    notes += [f"{v} stopped after {c['round']} repeat(s): {c['outcome']} — {c['why']}"
              for v, c in sorted(state.closed.items())]
    return notes
