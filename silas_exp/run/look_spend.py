"""What a sequential study's model calls cost, look by look, and what
stopping early saved against running every variant on the whole pool; and,
for a study that carried a plan (``plan.json``, silas_exp.plan), that plan
beside what the study spent.

From the job records alone (variant, block, metrics): a job's spend is its own
calls and those it made only to measure (``console.spend``). A look after
``b`` blocks holds the jobs of the blocks since the previous look. A variant
that stopped at a look would have run the pool's remaining blocks at the
spend per block it showed: the whole pool's estimate is each variant's spend
per block (its repeats included) times the pool's blocks.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silas_exp.analysis.planned import PLAN_TABLE, Plan, comparison_lines, comparison_table
from silas_exp.run.console import spend

SPEND_TABLE = "llm_spend_per_look.json"  # the parent run's table (MLflow's log_table: .json)


@dataclass(frozen=True)
class Look:
    blocks: int  # blocks of cases seen at this look
    variants: int  # variants that ran this look's blocks
    calls: float
    usd: float


@dataclass(frozen=True)
class StudySpend:
    looks: list[Look]
    calls: float
    usd: float
    pool_calls: float  # estimated: every variant on every case of the pool
    pool_usd: float
    variants: int

    @property
    def saved_calls(self) -> float:
        return max(self.pool_calls - self.calls, 0.0)

    @property
    def saved_usd(self) -> float:
        return max(self.pool_usd - self.usd, 0.0)

    def lines(self) -> list[str]:
        """The console's lines."""
        out = ["Model calls per look:"]
        start = 0
        for look in self.looks:
            span = f"block {look.blocks}" if look.blocks == start + 1 else \
                f"blocks {start + 1}-{look.blocks}"
            out.append(f"  look after {span}: {look.variants} variant(s), {look.calls:,.0f} calls, "
                       f"${look.usd:,.2f}")
            start = look.blocks
        share = self.saved_usd / self.pool_usd if self.pool_usd else 0.0
        out.append(f"  in all {self.calls:,.0f} calls, ${self.usd:,.2f}; the whole pool would take "
                   f"about {self.pool_calls:,.0f} calls, ${self.pool_usd:,.2f}: stopping early saved "
                   f"{self.saved_calls:,.0f} calls, ${self.saved_usd:,.2f} ({share:.0%})")
        return out

    def table(self) -> dict[str, list]:
        """The parent run's table: one row per look, then the whole pool and the saving."""
        rows = [(f"look {i + 1} (after block {look.blocks})", look.variants, look.calls, look.usd)
                for i, look in enumerate(self.looks)]
        rows += [("in all", self.variants, self.calls, self.usd),
                 ("whole pool (estimated)", self.variants, self.pool_calls, self.pool_usd),
                 ("saved by stopping early", self.variants, self.saved_calls, self.saved_usd)]
        return {"look": [r[0] for r in rows], "variants": [r[1] for r in rows],
                "calls": [r[2] for r in rows], "cost_usd": [r[3] for r in rows]}


def study_spend(jobs: Iterable[tuple[str, int, Mapping[str, float]]], looks: Sequence[int],
                pool_blocks: int) -> StudySpend:
    """``jobs``: (variant, block, metrics) of the finished jobs; ``looks``: the
    numbers of blocks after which the study looks; ``pool_blocks``: blocks in
    the pool."""
    looks = sorted(set(looks) | {pool_blocks})
    per_look: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    look_variants: dict[int, set[str]] = defaultdict(set)
    by_variant: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # calls, usd
    blocks_of: dict[str, set[int]] = defaultdict(set)
    for variant, block, metrics in jobs:
        calls, _, usd = spend(metrics)
        look = next(b for b in looks if block < b) if block < looks[-1] else looks[-1]
        per_look[look][0] += calls
        per_look[look][1] += usd
        look_variants[look].add(variant)
        v = by_variant[variant]
        v[0], v[1] = v[0] + calls, v[1] + usd
        blocks_of[variant].add(block)
    pool_calls = pool_usd = 0.0
    for variant, (calls, usd) in by_variant.items():
        scale = pool_blocks / len(blocks_of[variant])  # its spend per block, on every block
        pool_calls += calls * scale
        pool_usd += usd * scale
    ran = [Look(b, len(look_variants[b]), per_look[b][0], per_look[b][1])
           for b in looks if b in per_look]
    return StudySpend(ran, sum(x.calls for x in ran), sum(x.usd for x in ran), pool_calls, pool_usd,
                      len(by_variant))


def sweep_spend(sweep_dir: Path, model_backend: str | None,
                jobs: Iterable[tuple[str, int, Mapping[str, float]]]) -> StudySpend | None:
    """The study's spend from its folder's plan (a sequential study's looks;
    else one look) and its finished jobs. None unless its model is a real one
    (``model.backend``, which a dry run keeps: its estimate) and its calls
    cost something (every answer cached costs nothing)."""
    if model_backend in (None, "simulated"):
        return None
    from silas_exp.study.state import AdaptiveState

    jobs = list(jobs)
    state = AdaptiveState.read(sweep_dir)
    if state is not None and state.unit == "block":
        looks, pool = state.looks, state.repeats_max
    else:
        pool = max((block for _, block, _ in jobs), default=0) + 1
        looks = [pool]
    result = study_spend(jobs, looks, pool)
    return result if result.usd > 0 else None


# -- a study's spend against its plan (plan.json, made before its first call) ------------
def actual(sweep_dir: Path, records: Sequence[Any], started_at: float) -> dict[str, float]:
    """What the study spent: from its finished jobs' records and its own clock."""
    done = [r for r in records if r.status == "finished"]
    spent = [spend(r.metrics) for r in done]
    return {"cases": float(_pool_cases_drawn(sweep_dir, done)),
            "case_runs": float(sum(r.metrics.get("summary.cases", 0.0) for r in done)),
            "calls": float(sum(s[0] for s in spent)), "usd": float(sum(s[2] for s in spent)),
            "minutes": (time.time() - started_at) / 60.0 if started_at else 0.0}


def _pool_cases_drawn(sweep_dir: Path, done: Sequence[Any]) -> int:
    from silas_exp.study.state import AdaptiveState

    state = AdaptiveState.read(sweep_dir)
    blocks = {r.block for r in done}
    if state is None or state.unit != "block":
        return int(max((r.metrics.get("summary.cases", 0.0) for r in done), default=0))
    size, pool = state.cases_per_block or 0, state.pool_cases or 0
    return min(len(blocks) * size, pool)


def plan_against_actual(sweep_dir: Path, records: Sequence[Any], started_at: float
                        ) -> tuple[list[str], dict[str, dict[str, list]], str] | None:
    """(console lines, the parent run's table, a description paragraph) when
    the study carried a plan; None otherwise."""
    plan = Plan.read(sweep_dir)
    if plan is None:
        return None
    spent = actual(sweep_dir, records, plan.written_at or started_at)
    lines = comparison_lines(plan, spent)
    description = "\n".join(["", "**Plan against actual**", "",
                             "| figure | plan: median [80 % range] | actual |", "|---|---|---|"]
                            + [f"| {line.split(':', 1)[0].strip()} | "
                               f"{line.split(':', 1)[1].split('→')[0].strip()} | "
                               f"{line.split('→')[1].strip()} |" for line in lines[1:]])
    return lines, {PLAN_TABLE: comparison_table(plan, spent)}, description
