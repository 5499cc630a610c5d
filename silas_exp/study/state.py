"""The persisted state of a study in rounds (``adaptive.json`` in the sweep
folder): its plan of looks (after which rounds, at which confidence), the
variants closed so far (the round, outcome and why), and how the end-of-sweep
report reads a sweep as its study decided it. A round adds one repeat of the
cases whose allocated repeats it has not reached (``repeats=auto``, unit
"repeat": every case until the allocation, ``silas_exp.study.allocation``) or
one block of new cases at the configured repeats (sequential over cases, unit "block", the default for a
suite larger than ``cases_per_block``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.records import ADAPTIVE_FILE, JobResult, write_json_atomic
from silas_exp.stats import Outcome
from silas_exp.stats.sequential import look_confidence, look_rounds, spending_confidences

_FOUND = ("control", "closed", "looked", "margins", "margins_from", "allocation",
          "predicted_sd")  # what the looks found, as opposed to the plan


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
    looked: list[int] = field(default_factory=list)  # the looks taken so far, in order
    # relative margins in their metric's units, fixed once for the whole study
    # (silas_exp.analysis.margins), and what they were fixed from
    margins: dict[str, float] = field(default_factory=dict)
    margins_from: str | None = None
    # unit "repeat": each case's repeats, fixed after round repeats_min from the other
    # cases of its group (silas_exp.study.allocation), and the predicted sds they follow
    allocation: dict[str, int] | None = None
    predicted_sd: dict[str, float] | None = None

    @classmethod
    def plan(cls, settings: AnalysisSettings, repeats_min: int, repeats_max: int) -> AdaptiveState:
        looks = look_rounds(repeats_min, repeats_max)
        return cls(repeats_min, repeats_max, looks, look_confidence(settings.confidence,
                                                                     len(looks)))

    @classmethod
    def plan_blocks(cls, settings: AnalysisSettings, blocks: int, cases_per_block: int,
                    pool_cases: int, seed: int, first: int = 1) -> AdaptiveState:
        """Looks after blocks ``first``, then doubling (1, 2, 4, …), and the
        last, each at the confidence of its group-sequential boundary
        (information fraction = cases so far over the pool's)."""
        looks = look_rounds(first, blocks) if blocks > first else [blocks]
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
        """``adaptive.json``, whole or not at all (a kill leaves the last one)."""
        write_json_atomic(folder / ADAPTIVE_FILE, asdict(self))

    def plan_fields(self) -> dict:
        """The plan alone: what the looks are, not what they found."""
        return {k: v for k, v in asdict(self).items() if k not in _FOUND}

    def continued(self, folder: Path) -> AdaptiveState:
        """This plan, with the looks a resumed study already took in ``folder``
        (its ``adaptive.json``, when it holds the same plan): a resume
        continues after the last completed look instead of taking it again."""
        before = AdaptiveState.read(folder)
        if before is None or before.plan_fields() != self.plan_fields() or not before.looked:
            return self
        return before

    def runs(self, case_id: str, repeat: int) -> bool:
        """Whether ``case_id`` runs repeat ``repeat``: below its allocated
        count (every case before the allocation, and a case it does not name)."""
        return self.allocation is None or repeat < self.allocation.get(case_id, repeat + 1)

    def rounds_seen(self, look: int) -> Callable[[JobResult], bool]:
        """Which jobs the look after round ``look`` reads: those of its rounds
        (blocks, or repeats, before it), never a later round's that a folder
        may already hold (a resumed study's)."""
        if self.unit == "block":
            return lambda r: r.block < look
        return lambda r: r.repeat < look

    @classmethod
    def read(cls, folder: Path) -> AdaptiveState | None:
        path = folder / ADAPTIVE_FILE
        return cls.from_json(path.read_text()) if path.is_file() else None

    @classmethod
    def from_json(cls, text: str) -> AdaptiveState:
        return cls(**json.loads(text))


def read_as_decided(state: AdaptiveState | None, settings: AnalysisSettings | None
                    ) -> tuple[AnalysisSettings | None, dict[str, float] | None, list[str]]:
    """How to re-read a sweep as its study decided it (``state``: its
    ``adaptive.json``): the settings at the last look's confidence, each
    stopped variant's own look confidence and the report lines of the plan.
    A sweep without a sequential plan reads as it is (``settings``, None, [])."""
    if state is None or settings is None:
        return settings, None, []
    return (with_fixed_margins(state, settings).model_copy(
        update={"confidence": state.confidence}), state.closed_confidences(),
        adaptive_notes(state))


def with_fixed_margins(state: AdaptiveState | None, settings: AnalysisSettings
                       ) -> AnalysisSettings:
    """``settings`` with the study's fixed relative margins (those given in
    ``settings.margins`` win): every reading of a study uses the same."""
    if state is None or not state.margins:
        return settings
    return settings.model_copy(update={"margins": {**state.margins, **settings.margins}})


def adaptive_notes(state: AdaptiveState) -> list[str]:
    """Report lines: the plan, the fixed margins and where each variant stopped."""
    fixed = ([f"relative margins fixed for the whole study from {state.margins_from}: "
              + ", ".join(f"{m} worse by at most {v:.4g}" for m, v in sorted(state.margins.items()))]
             if state.margins else [])
    return fixed + _plan_notes(state)


def _plan_notes(state: AdaptiveState) -> list[str]:
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
                  f"{Outcome(c['outcome']).words} — {c['why']}" for v, c in sorted(state.closed.items())]
        return notes
    notes = [f"repeats=auto: verdicts looked at after rounds "
             f"{', '.join(map(str, state.looks))} (Bonferroni alpha spending over "
             f"{len(state.looks)} looks: each at {state.confidence:.2%} two-sided confidence)"]
    if state.allocation:
        counts = state.allocation.values()
        notes.append(
            f"repeats where the noise is: every case ran rounds 1–{state.repeats_min}; then each "
            f"case {min(counts)}–{max(counts)} repeats in all, in proportion to its within-case sd "
            f"predicted from the other cases of its group (never its own repeats): "
            f"{sum(counts)} (case, repeat) pairs per arm of {len(state.allocation) * state.repeats_max}")
    notes += [f"{v} stopped after {c['round']} repeat(s): {Outcome(c['outcome']).words} — {c['why']}"
              for v, c in sorted(state.closed.items())]
    return notes
