"""Context-assembly fixture benchmark (deterministic, no model): each fixture
gives a scope's items, a profile (or none, to test routing) and a budget, and
expects which zones are populated after render, whether the budget guard
fires, and which profile routing selects.

Metrics (pure, over per-fixture outcomes): zone precision / recall of the
populated zones, guard accuracy and trigger rate, routing coverage and
accuracy. Gates (``--fail-under``) turn them into an exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from silas_exp.context.budget import PROFILES, TokenBudget
from silas_exp.context.replay import replay
from silas_exp.context.routing import route_profile
from silas_exp.context.stats import ReplayStats
from silas_exp.context.window import Window
from silas_exp.errors import SuiteError
from silas_exp.eviction.two_tier import TwoTierEviction, TwoTierSettings
from silas_exp.schema.session import Session, SessionItem, SessionTruth
from silas_exp.scorers.heuristic import HeuristicWeights, LinearScorer


class FixtureExpected(BaseModel):
    model_config = ConfigDict(extra="forbid")
    zones: list[str]
    guard: bool
    profile: str | None = None


class Fixture(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    profile: str | None = None  # None: routing decides (and is evaluated)
    budget: dict[str, float] = Field(default_factory=dict)
    turns: int = Field(ge=1)
    items: list[SessionItem]
    expected: FixtureExpected


class FixtureFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: str
    fixtures: list[Fixture]


@dataclass(frozen=True)
class FixtureOutcome:
    id: str
    zones: frozenset[str]
    guard: bool
    profile: str
    expected: FixtureExpected


def load_fixtures(path: str | Path) -> FixtureFile:
    path = Path(path)
    try:
        return FixtureFile.model_validate(json.loads(path.read_text()))
    except FileNotFoundError:
        raise SuiteError(f"{path}: fixture file not found") from None
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SuiteError(f"{path}: field '{'.'.join(map(str, err['loc']))}': {err['msg']}") from None


def render(fx: Fixture) -> FixtureOutcome:
    """Replay the fixture through the real context manager (control scorer, no
    keep-backs) and observe the populated zones at the end."""
    profile = fx.profile or route_profile(fx.items)
    budget = TokenBudget(**fx.budget)
    stats = ReplayStats()
    session = Session(session_id=fx.id, scope_id=fx.id, profile=profile, turns=fx.turns, items=fx.items)
    strategy = TwoTierEviction(TwoTierSettings(keepbacks=False), budget, PROFILES[profile],
                               LinearScorer("heuristic", HeuristicWeights().vector()), None, stats, fx.id)
    final: list[Window] = []

    def step(window: Window, turn: int) -> None:
        strategy.step(window, turn)
        if turn == fx.turns - 1:
            final.append(window)

    replay(session, SessionTruth(), step, budget, stats)
    zones = frozenset(it.zone.value for it in final[0] if it.tokens > 0)
    return FixtureOutcome(fx.id, zones, stats.guard_triggers > 0, profile, fx.expected)


def fixture_metrics(outcomes: list[FixtureOutcome]) -> dict[str, float]:
    tp = sum(len(o.zones & set(o.expected.zones)) for o in outcomes)
    predicted = sum(len(o.zones) for o in outcomes)
    actual = sum(len(o.expected.zones) for o in outcomes)
    routed = [o for o in outcomes if o.expected.profile is not None]
    n = max(len(outcomes), 1)
    return {
        "fixtures.zone_precision": tp / predicted if predicted else 1.0,
        "fixtures.zone_recall": tp / actual if actual else 1.0,
        "fixtures.guard_accuracy": sum(o.guard == o.expected.guard for o in outcomes) / n,
        "fixtures.guard_trigger_rate": sum(o.guard for o in outcomes) / n,
        "fixtures.routing_coverage": len(routed) / n,
        "fixtures.routing_accuracy": (sum(o.profile == o.expected.profile for o in routed) / len(routed))
        if routed else 1.0,
    }


def run_fixtures(path: str | Path) -> tuple[dict[str, float], list[FixtureOutcome]]:
    outcomes = [render(fx) for fx in load_fixtures(path).fixtures]
    return fixture_metrics(outcomes), outcomes
