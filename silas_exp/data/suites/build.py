"""Build the shipped synthetic suites from the session generator.

``scripts/generate_suites.py`` calls ``write_suite`` for every entry of
``SHIPPED``; the output is deterministic, so regenerating is a no-op unless the
generator or the mix changed (a test checks this).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from silas_exp.context.budget import TokenBudget, item_tokens
from silas_exp.context.policy import (
    deactivate_stale_subscriptions,
    drop_trivial_acks,
    mask_old_tool_results,
)
from silas_exp.context.replay import replay
from silas_exp.context.stats import ReplayStats
from silas_exp.context.window import Window
from silas_exp.data.suites.generator import generate_session, spec_for
from silas_exp.schema.benchmark import (
    CALIBRATION_TAG,
    BenchmarkCase,
    BenchmarkExpected,
    BenchmarkInput,
    BenchmarkSuite,
)
from silas_exp.schema.session import Session, SessionTruth

# fill = peak Tier-1 window usage / window budget
FILL_LABELS = ((0.75, "light"), (1.4, "medium"), (2.2, "heavy"), (99.0, "over-budget"))
PASS_THRESHOLDS = {"context.retrieval_relevance": 0.6}
MIN_BUDGET = 2_000


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
    # scorer target (§20.3): the pressure lands on Tier 2, not on Tier-1 hygiene —
    # zone shares fitted to each session's zone mix (no zone cap binds before the
    # eviction threshold) and observation masking after ``mask_after`` turns
    scorer_target: bool = False
    mask_after: int | None = None
    pass_threshold: float = PASS_THRESHOLDS["context.retrieval_relevance"]


def fitted_shares(session: Session) -> dict[str, float]:
    """Zone shares in proportion to the session's non-system tokens (each at
    least 0.05, summing to 0.8): the zone caps (share x allocable x 1.25) then
    sit above each zone's natural load, so Tier 2 — the scorer — decides."""
    load = {"chronicle": 0, "memory": 0, "workspace": 0}
    for it in session.items:
        if it.zone.value in load:
            load[it.zone.value] += item_tokens(it)
    total = sum(load.values()) or 1
    raw = {z: max(0.05, 0.8 * v / total) for z, v in load.items()}
    scale = 0.8 / sum(raw.values())
    return {z: math.floor(v * scale * 1000) / 1000 for z, v in raw.items()}


def hygiene_usage(session: Session, truth: SessionTruth, budget: TokenBudget | None = None
                  ) -> list[int]:
    """Window usage per turn when only Tier-1 hygiene runs (no eviction pressure)."""
    budget = budget or TokenBudget(total=10**9)

    def hygiene(window: Window, turn: int) -> None:
        mask_old_tool_results(window, turn, budget)
        drop_trivial_acks(window, turn, budget)
        deactivate_stale_subscriptions(window, turn, budget)

    return replay(session, truth, hygiene, budget, ReplayStats()).window_tokens


def peak_usage(session: Session, truth: SessionTruth) -> int:
    """Peak window usage when only Tier-1 hygiene runs (no eviction pressure):
    the window budget of a case is this peak divided by its fill level."""
    return max(hygiene_usage(session, truth))


def budget_for(peak: int, fill: float) -> int:
    """The window budget that puts a session ``fill`` times over it at its
    peak (never below ``MIN_BUDGET``)."""
    return max(int(peak / fill), MIN_BUDGET)


def _fill_label(fill: float) -> str:
    return next(label for bound, label in FILL_LABELS if fill <= bound)


def case_id_of(index: int, mix: CaseMix, width: int = 3) -> str:
    """The id of case ``index``; ``width`` digits of the index keep the case
    files of a large suite in index order."""
    prefix = "cal" if mix.split == "calibration" else "case"
    return f"{prefix}-{index:0{width}d}-{mix.flavour}-{_fill_label(mix.fill)}"


def build_case(recipe: SuiteRecipe, index: int, mix: CaseMix, width: int = 3) -> BenchmarkCase:
    """Case ``index`` of ``recipe`` (id: ``case_id_of``)."""
    seed = recipe.seed * 1000 + index
    label = _fill_label(mix.fill)
    case_id = case_id_of(index, mix, width)
    session, truth = generate_session(seed, spec_for(mix.flavour, mix.turns), case_id)
    budget = budget_for(peak_usage(session, truth), mix.fill)
    overrides: dict = {"profile": session.profile, "budget": {"total": budget}}
    if recipe.scorer_target:
        overrides["shares"] = fitted_shares(session)
    if recipe.mask_after is not None:
        overrides["budget"]["observation_mask_after_turns"] = recipe.mask_after
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
            config_overrides=overrides,
            skill_args={"turns": session.turns, "scope_id": session.scope_id,
                        "generator": {"seed": seed, "flavour": mix.flavour, "fill": mix.fill}},
        ),
        expected=BenchmarkExpected(
            mode="metric_threshold",
            value={"references": [r.model_dump() for r in truth.references]},
            metric_thresholds={"context.retrieval_relevance": recipe.pass_threshold},
        ),
        tags=tags, difficulty=difficulty, source="synthetic",
    )


def write_suite_file(recipe: SuiteRecipe, out: Path, **metadata: str) -> None:
    """``out/suite.json`` for ``recipe``, with ``metadata`` added."""
    suite = BenchmarkSuite(
        suite_id=recipe.name, name=recipe.name, target="silas.context_manager.scorer",
        version=recipe.version, cases=[],
        metadata={"source": "synthetic", "generator": "silas_exp.data.suites.generator",
                  "seed": str(recipe.seed), "description": recipe.description, **metadata},
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "suite.json").write_text(json.dumps(suite.model_dump(mode="json"), indent=1) + "\n")


def write_suite(recipe: SuiteRecipe, root: Path) -> Path:
    out = root / recipe.name
    (out / "cases").mkdir(parents=True, exist_ok=True)
    for old in (out / "cases").glob("*.json"):
        old.unlink()
    write_suite_file(recipe, out)
    width = max(3, len(str(len(recipe.mix) - 1)))
    for i, mix in enumerate(recipe.mix):
        case = build_case(recipe, i, mix, width)
        (out / "cases" / f"{case.case_id}.json").write_text(
            json.dumps(case.model_dump(mode="json", exclude_none=True), separators=(",", ":")) + "\n"
        )
    return out


_FLAVOURS = ("coding", "debugging", "research", "support")
SHIPPED: tuple[SuiteRecipe, ...] = (
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
