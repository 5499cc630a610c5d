"""The gate as a sequential study: two sides (the checked code and
configuration, and the baseline's), paired case by case on blocks of the
pool, looked at like a study's arms until the checked side's verdict is
decided or ``--max-cases`` is reached.

The looks are the study's own (silas_exp.study): the rounds are blocks of
cases in one seeded order (``jobs.Order``), launched a look at a time by
``study.loop.run_looks``; each look reads the blocks so far at the confidence
of its group-sequential boundary (``study.state.AdaptiveState.plan_blocks``,
alpha spent over the cases up to ``--max-cases``) and closes the checked side
by ``study.looks.look_and_close``: decided, futile, or the cases used up. The
first look holds the cases both sides already have (the baseline's own blocks,
a study's blocks), so a baseline that decides on its own cases runs nothing
more; every later block is run for both sides, each with its own code.

Each side says where its results came from: logged (the baseline's record, a
study's runs) or run now, and with which code (silas_exp.gate.revision).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from silas_exp.analysis.ablation import AblationResult
from silas_exp.analysis.data import JobData, SweepData, merge_blocks
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.gate.jobs import GridJob, Order, run_jobs
from silas_exp.gate.revision import Revision, Site
from silas_exp.metrics.numbers import percent
from silas_exp.stats import Outcome
from silas_exp.study.looks import look_and_close
from silas_exp.study.loop import run_looks
from silas_exp.study.state import AdaptiveState


@dataclass
class Side:
    """One arm of a check: what it runs (configuration and design), the code
    it runs, the results it already has and where more come from."""

    label: str  # its variant name in the comparison
    what: str  # for the report: "`scorer=weights` (the change)"
    overrides: list[str]  # configuration and design, without repeat and block
    revision: Revision
    site: Site | None  # where more of its jobs run; None: they cannot (``why_not``)
    why_not: str = ""
    offset: int = 0  # repeat r runs as repeat r + offset (other seeds)
    logged: dict[tuple[int, int], JobData] = field(default_factory=dict)  # (repeat, block)
    logged_from: str = ""  # "the baseline's record (run abcd1234)"
    ran: dict[tuple[int, int], JobData] = field(default_factory=dict)
    runner: Callable[..., dict[tuple[int, int], JobData]] = run_jobs  # (overrides, grid, out, workers, site)

    def has(self, repeat: int, block: int) -> bool:
        return (repeat, block) in self.logged or (repeat, block) in self.ran

    def prefix(self, repeats: Sequence[int]) -> int:
        """How many leading blocks it has for every repeat."""
        b = 0
        while all(self.has(r, b) for r in repeats):
            b += 1
        return b

    def run(self, blocks: Sequence[int], repeats: Sequence[int], out: Path, workers: int) -> None:
        grid = [GridJob(r, r + self.offset, b) for b in blocks for r in repeats
                if not self.has(r, b)]
        if not grid:
            return
        if self.site is None:
            raise AssertionError(f"{self.label}: no site to run blocks {blocks}")  # planned out
        self.ran.update(self.runner(self.overrides, grid, out, workers, self.site))

    def jobs(self, blocks: int, repeats: Sequence[int]) -> list[JobData]:
        """Its results on the first ``blocks`` blocks, one job per repeat."""
        parts = []
        for (r, b), job in [*self.logged.items(), *self.ran.items()]:
            if b < blocks and r in repeats:
                parts.append(JobData(self.label, r, dict(job.metrics), dict(job.cases),
                                     dict(job.outputs), job.run_id, dict(job.status),
                                     dict(job.evictions)))
        return merge_blocks(parts)

    def provenance(self, blocks: int, repeats: Sequence[int], order: Order) -> str:
        """Where its results on the first ``blocks`` blocks came from."""
        logged = sorted({b for (r, b) in self.logged if b < blocks and r in repeats})
        ran = sorted({b for (r, b) in self.ran if b < blocks and r in repeats} - set(logged))
        parts = []
        if logged:
            parts.append(f"logged for {_blocks(logged, order)} ({self.logged_from})")
        if ran:
            parts.append(f"run now for {_blocks(ran, order)} with the code of "
                         f"{self.site.describe() if self.site else self.revision}")
        return "; ".join(parts) or "no results"


def _blocks(blocks: Sequence[int], order: Order) -> str:
    n = sum(len(order.block(b)) for b in blocks)
    if list(blocks) == list(range(blocks[0], blocks[-1] + 1)) and len(blocks) > 1:
        return f"blocks {blocks[0]}–{blocks[-1]} ({n} cases)"
    return f"block{'s' if len(blocks) > 1 else ''} {', '.join(map(str, blocks))} ({n} cases)"


def paired(checked: Side, control: Side, blocks: int, repeats: Sequence[int]) -> SweepData:
    """Both sides on the first ``blocks`` blocks, as a two-arm sweep."""
    return SweepData("regress", "", [*checked.jobs(blocks, repeats),
                                     *control.jobs(blocks, repeats)])


@dataclass
class GateRun:
    """How a sequential gate went: its plan, the block it stopped after, and
    a line per look."""

    state: AdaptiveState
    order: Order
    stopped: int  # blocks read by the deciding look
    lines: list[str]

    @property
    def confidence(self) -> float:
        return self.state.confidence_at(self.stopped)

    def plan_line(self) -> str:
        looks = ", ".join(str(self.order.cases_in(b)) for b in self.state.looks)
        confs = ", ".join(percent(c) for c in self.state.confidences or [self.state.confidence])
        if len(self.state.looks) == 1:
            return (f"one look, on {self.order.cases_in(self.state.looks[0])} cases at "
                    f"{confs} two-sided confidence")
        return (f"sequential over cases (as a study): looks after {looks} cases in the order "
                f"seed={self.order.seed} fixes (blocks of {self.order.cases_per_block}), at "
                f"{confs} two-sided confidence (group-sequential alpha spending up to "
                f"{self.order.cases_in(self.state.looks[-1])} cases); decided after "
                f"{self.order.cases_in(self.stopped)} cases")


def run_gate(checked: Side, control: Side, order: Order, repeats: Sequence[int], first: int,
             last: int, settings: AnalysisSettings, work: Path, workers: int,
             say: Callable[[str], None] = print) -> GateRun:
    """Look at the two sides block after block (module docstring) until the
    checked side closes; ``settings`` names ``control.label`` as the control."""
    size = order.cases_per_block or len(order.ids)
    state = AdaptiveState.plan_blocks(settings, last, size, order.cases_in(last), order.seed,
                                      first=first)
    state.control = control.label
    sides = {checked.label: checked, control.label: control}
    lines: list[str] = []

    def round_jobs(r: int, open_: list) -> list:
        return [(label, r) for label in open_]

    def launch(batch: list, index: int) -> None:
        for label, side in sides.items():
            blocks = sorted({b for name, b in batch if name == label})
            side.run(blocks, repeats, work / label.replace(" ", "_"), workers)

    def look(at: int) -> None:
        result = look_and_close(paired(checked, control, at, repeats), settings, state, at)
        lines.append(_look_line(result, state, checked.label, order.cases_in(at), at))
        say(lines[-1])

    run_looks(state, {checked.label: checked.label, control.label: control.label},
              round_jobs, launch, look)
    closed = state.closed.get(checked.label)
    return GateRun(state, order, closed["round"] if closed else state.looks[-1], lines)


def _look_line(result: AblationResult | None, state: AdaptiveState, label: str, cases: int,
               at: int) -> str:
    head = f"gate: look after {cases} cases at {percent(state.confidence_at(at))} confidence"
    if result is None:
        return f"{head}: nothing to compare yet"
    verdict = result.verdicts[label]
    words = {Outcome.SHIP: "no regression", Outcome.DO_NOT_SHIP: "regression",
             Outcome.INCONCLUSIVE: "undecided"}[verdict.outcome]
    closed = state.closed.get(label)
    if closed and verdict.outcome is Outcome.INCONCLUSIVE:
        return f"{head}: regression not ruled out — {closed['why']}"
    if closed:
        return f"{head}: {words} — {'; '.join(verdict.reasons)}"
    return f"{head}: undecided ({'; '.join(verdict.reasons)}); more cases, both sides"
