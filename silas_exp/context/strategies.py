"""Eviction strategies behind one protocol and one registry (config group
``eviction``). A strategy runs once per turn (``step``) and may be asked for
an explicit flush (``compress``: a compression event, used by probes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from silas_exp.context.budget import TokenBudget, ZoneShares
from silas_exp.context.stats import ReplayStats
from silas_exp.context.window import Window
from silas_exp.errors import ConfigError


class EvictionStrategy(Protocol):
    def step(self, window: Window, turn: int) -> None: ...

    def compress(self, window: Window, turn: int) -> None: ...


class StrategySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


@dataclass
class StrategyDeps:
    """Everything a strategy may need at run time."""

    budget: TokenBudget
    shares: ZoneShares
    stats: ReplayStats
    scope_id: str
    scorer: Any = None  # silas_exp.scorers.Scorer
    broker: Any = None  # silas_exp.feedback.flush.KeepBackBroker
    llm: Any = None  # silas_exp.llm.LLMClient (summaries)
    namespace: str = ""
    model_id: str = ""


@dataclass(frozen=True)
class StrategyKind:
    name: str
    settings: type[StrategySettings]
    factory: Callable[[Any, StrategyDeps], EvictionStrategy]
    uses_scorer: bool
    description: str
    evicts_per_turn: bool = False  # acts every turn (replay cases); else only at compression events


_REGISTRY: dict[str, StrategyKind] = {}


def register_strategy(name: str, settings: type[StrategySettings], *, uses_scorer: bool = False,
                      description: str = "", evicts_per_turn: bool = False) -> Callable:
    def deco(factory: Callable[[Any, StrategyDeps], EvictionStrategy]) -> Callable:
        _REGISTRY[name] = StrategyKind(name, settings, factory, uses_scorer, description,
                                       evicts_per_turn)
        return factory

    return deco


def strategy_kinds() -> Mapping[str, StrategyKind]:
    from silas_exp.context import builtin_strategies  # noqa: F401  (registers built-ins)

    return dict(_REGISTRY)


def validate_strategy_settings(raw: Mapping[str, Any]) -> StrategySettings:
    kinds = strategy_kinds()
    name = raw.get("name")
    if name not in kinds:
        raise ConfigError(f"eviction.name = {name!r} is not a known eviction strategy; choose one of "
                          f"{sorted(kinds)} (e.g. eviction=two_tier)")
    from silas_exp.config import pydantic_error_to_config_error

    try:
        return kinds[name].settings.model_validate(dict(raw))
    except Exception as exc:
        raise pydantic_error_to_config_error(exc, prefix="eviction") from None


def build_strategy(settings: StrategySettings, deps: StrategyDeps) -> EvictionStrategy:
    return strategy_kinds()[settings.name].factory(settings, deps)
