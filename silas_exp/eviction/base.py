"""Eviction strategies behind one protocol and one registry (config group
``eviction``). A strategy runs once per turn (``step``) and may be asked for
an explicit flush (``compress``: a compression event, used by probes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from silas_exp.context.budget import TokenBudget, ZoneShares
from silas_exp.context.stats import ReplayStats
from silas_exp.context.window import Window
from silas_exp.plugins import Kind, Registry


class EvictionStrategy(Protocol):
    def step(self, window: Window, turn: int) -> None: ...

    def compress(self, window: Window, turn: int) -> None: ...


class StrategySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


@dataclass
class StrategyDeps:
    """What the runner offers a strategy: ``budget``, ``shares``, ``stats``,
    ``scope_id``, ``namespace`` and ``model_id`` go to every strategy; ``scorer``,
    ``broker`` and ``llm`` only to kinds that declare them."""

    budget: TokenBudget
    shares: ZoneShares
    stats: ReplayStats
    scope_id: str
    scorer: Any = None  # silas_exp.scorers.Scorer
    broker: Any = None  # silas_exp.feedback.flush.KeepBackBroker
    llm: Any = None  # silas_exp.llm.LLMClient (summaries)
    namespace: str = ""
    model_id: str = ""


STRATEGIES = Registry(
    "eviction strategy", key="eviction", group="silas_exp.strategies",
    builtins="silas_exp.eviction.builtin", capabilities=("scorer", "broker", "llm"),
    example="eviction=two_tier", config_group="eviction")


def register_strategy(name: str, settings: type[StrategySettings], *, needs: Iterable[str] = (),
                      description: str = "", evicts_per_turn: bool = False) -> Callable:
    """Register a built-in strategy. ``needs``: "scorer" (scores flush candidates
    with the config's scorer), "broker" (the main model's keep-backs), "llm"
    (summaries). ``evicts_per_turn``: acts every turn (replay cases); else only
    at compression events (probe cases)."""
    return STRATEGIES.register(name, settings, needs=needs, description=description,
                               evicts_per_turn=evicts_per_turn)


def strategy_kind(name: str, settings: type[StrategySettings], factory: Callable, *,
                  needs: Iterable[str] = (), description: str = "",
                  evicts_per_turn: bool = False) -> Kind:
    """A plug-in strategy kind, for an entry point in group ``silas_exp.strategies``
    or an ``eviction._target_``."""
    return STRATEGIES.kind(name, settings, factory, needs=needs, description=description,
                           evicts_per_turn=evicts_per_turn)


def validate_strategy_settings(raw: Mapping[str, Any]) -> StrategySettings:
    return STRATEGIES.validate(raw)  # type: ignore[return-value]


def build_strategy(settings: StrategySettings, deps: StrategyDeps) -> EvictionStrategy:
    always = {"budget": deps.budget, "shares": deps.shares, "stats": deps.stats,
              "scope_id": deps.scope_id, "namespace": deps.namespace, "model_id": deps.model_id}
    offers = {"scorer": deps.scorer, "broker": deps.broker, "llm": deps.llm}
    return STRATEGIES.build(settings, always, offers)
