"""Build the shipped synthetic suites from the session generator.

``scripts/generate_suites.py`` calls ``write_suite`` for every entry of
``SHIPPED``; the output is deterministic, so regenerating is a no-op unless the
generator or the mix changed (a test checks this).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from silas_exp.context.budget import TokenBudget
from silas_exp.context.policy import (
    deactivate_stale_subscriptions,
    drop_trivial_acks,
    mask_old_tool_results,
)
from silas_exp.context.replay import replay
from silas_exp.context.stats import ReplayStats
from silas_exp.context.window import Window
from silas_exp.schema.benchmark import (
    BenchmarkCase,
    BenchmarkExpected,
    BenchmarkInput,
    BenchmarkSuite,
)
from silas_exp.schema.session import Session, SessionTruth
from silas_exp.suites.generator import generate_session, spec_for
from silas_exp.suites.loader import CALIBRATION_TAG

# fill = peak Tier-1 window usage / window budget
FILL_LABELS = ((0.75, "light"), (1.4, "medium"), (2.2, "heavy"), (99.0, "over-budget"))
PASS_THRESHOLDS = {"context.retrieval_relevance": 0.6}


@dataclass(frozen=True)
class CaseMix:
    flavour: str
    turns: int
    fill: float
    split: str = "eval"  # eval | calibration


@dataclass(frozen=True)
class SuiteRecipe:
    name: str
    version: str
    seed: int
    mix: tuple[CaseMix, ...]
    description: str


def peak_usage(session: Session, truth: SessionTruth) -> int:
    """Peak window usage when only Tier-1 hygiene runs (no eviction pressure):
    the window budget of a case is this peak divided by its fill level."""
    budget = TokenBudget(total=10**9)

    def hygiene(window: Window, turn: int) -> None:
        mask_old_tool_results(window, turn, budget)
        drop_trivial_acks(window, turn, budget)
        deactivate_stale_subscriptions(window, turn, budget)

    stats = replay(session, truth, hygiene, budget, ReplayStats())
    return max(stats.window_tokens)


def _fill_label(fill: float) -> str:
    return next(label for bound, label in FILL_LABELS if fill <= bound)


def build_case(recipe: SuiteRecipe, index: int, mix: CaseMix) -> BenchmarkCase:
    seed = recipe.seed * 1000 + index
    label = _fill_label(mix.fill)
    case_id = f"{'cal' if mix.split == 'calibration' else 'case'}-{index:03d}-{mix.flavour}-{label}"
    session, truth = generate_session(seed, spec_for(mix.flavour, mix.turns), case_id)
    budget = max(int(peak_usage(session, truth) / mix.fill), 2_000)
    tags = [mix.flavour, label] + (["long"] if mix.turns >= 200 else [])
    if mix.split == "calibration":
        tags.append(CALIBRATION_TAG)
    difficulty = {"light": "easy", "medium": "medium", "heavy": "hard"}.get(label, "adversarial")
    return BenchmarkCase(
        case_id=case_id,
        description=f"{mix.flavour} session, {mix.turns} turns, window fill {label} ({mix.fill}x)",
        input=BenchmarkInput(
            goal=f"Replay a {mix.flavour} session and keep what later turns need",
            context=[it.model_dump(exclude_defaults=True, mode="json") for it in session.items],
            config_overrides={"profile": session.profile, "budget": {"total": budget}},
            skill_args={"turns": session.turns, "scope_id": session.scope_id,
                        "generator": {"seed": seed, "flavour": mix.flavour, "fill": mix.fill}},
        ),
        expected=BenchmarkExpected(
            mode="metric_threshold",
            value={"references": [r.model_dump() for r in truth.references]},
            metric_thresholds=dict(PASS_THRESHOLDS),
        ),
        tags=tags, difficulty=difficulty, source="synthetic",
    )


def write_suite(recipe: SuiteRecipe, root: Path) -> Path:
    out = root / recipe.name
    (out / "cases").mkdir(parents=True, exist_ok=True)
    for old in (out / "cases").glob("*.json"):
        old.unlink()
    suite = BenchmarkSuite(
        suite_id=recipe.name, name=recipe.name, target="silas.context_manager.scorer",
        version=recipe.version, cases=[],
        metadata={"source": "synthetic", "generator": "silas_exp.suites.generator",
                  "seed": str(recipe.seed), "description": recipe.description},
    )
    (out / "suite.json").write_text(json.dumps(suite.model_dump(mode="json"), indent=1) + "\n")
    for i, mix in enumerate(recipe.mix):
        case = build_case(recipe, i, mix)
        (out / "cases" / f"{case.case_id}.json").write_text(
            json.dumps(case.model_dump(mode="json", exclude_none=True), separators=(",", ":")) + "\n"
        )
    return out


_FLAVOURS = ("coding", "debugging", "research", "support")
SHIPPED: tuple[SuiteRecipe, ...] = (
    SuiteRecipe(
        name="default", version="1.0.0", seed=7,
        description="Case mix of §20.3 (scorer): coding, debugging, research and support sessions at "
                    "light to over-budget fill, mixed zones, stale vs active items, long sessions.",
        mix=tuple(CaseMix(f, 60, fill) for f in _FLAVOURS for fill in (0.6, 1.3, 2.0, 3.0))
        + (CaseMix("coding", 220, 2.0), CaseMix("research", 240, 3.0))
        + tuple(CaseMix(f, 80, 2.0, "calibration") for f in _FLAVOURS for _ in range(2)),
    ),
    SuiteRecipe(
        name="chronicle_keepback", version="1.0.0", seed=19,
        description="§19.4 miscalibration: chronicle items the control scores low are needed "
                    "again later and kept back often; calibration must fix the zone weighting.",
        mix=tuple(CaseMix("chronicle", 80, fill) for fill in (1.3, 2.0, 3.0, 2.0, 3.0, 2.0))
        + tuple(CaseMix("chronicle", 80, 2.0, "calibration") for _ in range(6)),
    ),
    SuiteRecipe(
        name="smoke", version="1.0.0", seed=11,
        description="Tiny suite for tests and quick checks.",
        mix=(CaseMix("coding", 40, 2.0), CaseMix("research", 40, 3.0),
             CaseMix("debugging", 40, 2.0, "calibration"), CaseMix("support", 40, 2.0, "calibration")),
    ),
)
