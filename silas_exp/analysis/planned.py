"""The plan of a study as a record (``plan.json`` in a sweep folder, and on
its parent run: typed, versioned, one reader), the one way it is printed
(``silas-exp plan``, a study before its first call) and the one way it is set
beside what the study spent (the end of the sweep, its parent run). Made by
``silas_exp.plan``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from silas_exp.stats import Outcome

PLAN_VERSION = 1
PLAN_FILE = "plan.json"
PLAN_TABLE = "plan_vs_actual.json"  # the parent run's table (MLflow's log_table: .json)
RANGE = (10, 90)  # the percentiles of an 80 % range


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class Spread(_Strict):
    """A predicted figure: its median and 80 % range over the simulated studies."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values) -> Spread:
        v = np.asarray(list(values), dtype=float)
        if v.size == 0:
            return cls(median=math.nan, low=math.nan, high=math.nan)
        lo, hi = np.percentile(v, RANGE)
        return cls(median=float(np.median(v)), low=float(lo), high=float(hi))

    def scaled(self, low: float, high: float) -> Spread:
        """The range widened by factors (an uncertain pace: ``low`` ≤ 1 ≤ ``high``)."""
        return Spread(median=self.median, low=self.low * low, high=self.high * high)

    def text(self, fmt: str = "{:,.0f}", unit: str = "") -> str:
        f = lambda x: unit + fmt.format(x)  # noqa: E731
        if math.isclose(self.low, self.high, rel_tol=1e-9, abs_tol=1e-9):
            return f(self.median)
        return f"{f(self.median)} [{f(self.low)}–{f(self.high)}]"

    def holds(self, actual: float) -> bool:
        return self.low - 1e-9 <= actual <= self.high + 1e-9


class VariantPlan(_Strict):
    variant: str
    chances: dict[str, float]  # outcome value -> share of simulated studies
    cases: Spread  # cases to a decision (or to the pool's end)
    calls: Spread
    usd: Spread
    twin: str  # the simulated twin's own verdict on the pool (no departure), in words
    decide: list[str] = Field(default_factory=list)  # what would decide it, when unlikely to


class Plan(_Strict):
    """What a study is predicted to take, and where each figure came from."""

    schema_version: int = PLAN_VERSION
    command: list[str]
    model: str  # model=… (the config option)
    models: dict[str, str]  # role -> model id
    control: str
    kind: str  # sequential | grid
    pool_cases: int
    cases_per_block: int
    repeats: int
    looks: list[int]
    confidences: list[float]
    worlds: int
    departure: list[float]  # the share range the worlds drew from
    variants: list[VariantPlan]
    cases: Spread  # pool cases the study draws (the control's)
    case_runs: Spread  # case replays of every arm (× repeats): what is paid for
    calls: Spread
    usd: Spread
    minutes: Spread
    calls_by_task: dict[str, float] = Field(default_factory=dict)  # twin, whole pool, every arm
    sources: list[str] = Field(default_factory=list)  # where each figure came from
    seconds: float = 0.0  # the plan's own time
    written_at: float = 0.0  # when a study wrote it, just before its first job (time.time())
    twin_seconds: float = 0.0
    replayed_jobs: int = 0

    def write(self, folder: Path) -> Path:
        from silas_exp.records import write_json_atomic

        return write_json_atomic(Path(folder) / PLAN_FILE, json.loads(self.model_dump_json()))

    @classmethod
    def read(cls, folder: Path) -> Plan | None:
        path = Path(folder) / PLAN_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            if data.get("schema_version", 0) > PLAN_VERSION:
                return None
            return cls.model_validate(data)
        except (ValueError, TypeError):
            return None


# -- how a plan is printed, and set beside what the study spent ---------------------
MONEY, COUNT, MINUTES = "{:,.2f}", "{:,.0f}", "{:,.1f}"


def _chances(chances: Mapping[str, float]) -> str:
    return ", ".join(f"{Outcome(o).words} {p:.0%}" for o, p in chances.items() if p > 0)


def header(plan: Plan) -> str:
    design = (f"sequential over {plan.pool_cases:,} cases in blocks of {plan.cases_per_block}, "
              f"looks after blocks {', '.join(map(str, plan.looks))}"
              if plan.kind == "sequential" else f"all {plan.pool_cases:,} cases at once")
    models = sorted(set(plan.models.values()))
    return (f"Plan of `python -m silas_exp -m {' '.join(plan.command)}`: {design}, "
            f"{plan.repeats} repeat(s); control {plan.control}; model={plan.model} "
            f"({', '.join(models)}); {plan.worlds} simulated studies "
            f"(median [80 % range])")


def totals(plan: Plan) -> list[str]:
    """The whole study in a few lines: what a study prints before its first call."""
    judge = plan.calls_by_task.get("judge")
    return [f"  whole study: {plan.cases.text()} of the pool's {plan.pool_cases:,} cases, "
            f"{plan.case_runs.text()} case runs over every arm; {plan.calls.text()} calls"
            + (" (the judge's included)" if judge else "")
            + f", ${plan.usd.text(MONEY)}, {plan.minutes.text(MINUTES)} min"]


def plan_lines(plan: Plan) -> list[str]:
    lines = [header(plan), ""]
    for v in plan.variants:
        lines.append(f"  {v.variant}: {_chances(v.chances)}; cases to a verdict "
                     f"{v.cases.text()}; its calls {v.calls.text()}, ${v.usd.text(MONEY)} "
                     f"(the simulated replay alone: {v.twin})")
        for what in v.decide:
            lines.append(f"      what would decide it — {what}")
    lines += totals(plan)
    lines += ["", "  where the figures come from:"] + [f"    - {s}" for s in plan.sources]
    lines.append(f"  (planned in {plan.seconds:.0f} s, no paid call)")
    return lines


def compare_rows(plan: Plan, actual: Mapping[str, float]) -> list[tuple[str, Spread, float]]:
    """(figure, planned, actual) for what the study spent."""
    names = {"cases": "pool cases drawn", "case_runs": "case runs (every arm)",
             "calls": "calls", "usd": "dollars", "minutes": "wall minutes"}
    return [(label, getattr(plan, key), actual[key]) for key, label in names.items()
            if key in actual]


def comparison_lines(plan: Plan, actual: Mapping[str, float]) -> list[str]:
    lines = ["Plan against actual (median [80 % range] → actual):"]
    for label, planned, value in compare_rows(plan, actual):
        fmt = MONEY if label == "dollars" else MINUTES if label == "wall minutes" else COUNT
        inside = "inside" if planned.holds(value) else "OUTSIDE"
        off = (value / planned.median - 1) if planned.median else 0.0
        lines.append(f"  {label}: {planned.text(fmt)} → {fmt.format(value)} "
                     f"({off:+.0%} of the median, {inside} the range)")
    return lines


def comparison_table(plan: Plan, actual: Mapping[str, float]) -> dict[str, list]:
    """The parent run's table ``plan_vs_actual.json``."""
    rows = compare_rows(plan, actual)
    return {"figure": [r[0] for r in rows], "plan_median": [r[1].median for r in rows],
            "plan_low": [r[1].low for r in rows], "plan_high": [r[1].high for r in rows],
            "actual": [r[2] for r in rows],
            "inside_range": [r[1].holds(r[2]) for r in rows]}
