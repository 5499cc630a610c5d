"""Eviction strategies behind one protocol and one registry (config group
``eviction``). A strategy runs once per turn (``step``) and may be asked for
an explicit flush (``compress``: a compression event, used by probes).

A strategy may also replay a whole session faster than the Python loop steps
it: ``replay_compiled(session, truth, budget, stats, flush_turn) -> bool``
replays it (True, ``stats`` filled as the Python loop fills them) or declines
(False, nothing recorded). ``replay_strategy`` asks it first; the strategy
alone decides, from its settings and the traits its parts' kinds declare."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from silas_exp.context.budget import TokenBudget, ZoneShares
from silas_exp.context.policy import (
    deactivate_stale_subscriptions,
    drop_trivial_acks,
    mask_old_tool_results,
)
from silas_exp.context.replay import replay
from silas_exp.context.stats import ReplayStats
from silas_exp.context.window import Window
from silas_exp.plugins import Kind, Registry
from silas_exp.schema.session import Session, SessionTruth


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


class StrategyBase:
    """A base for a strategy of one's own that fills the statistics every
    strategy owes the metrics (docs/plugins.md, "Eviction strategy"):

    * ``stats.guard_triggers``: a turn that starts over the eviction threshold
      (``context.guard_trigger_rate``), counted by :meth:`step`;
    * ``stats.evictions``: ``(turn, ctx_id)`` of every eviction, through :meth:`remove`;
    * ``stats.masked``, ``stats.trivial_dropped``, ``stats.subscriptions_deactivated``:
      through :meth:`tier1`, Silas's Tier 1 without its zone caps, for a
      strategy that keeps it (a strategy replaces Tier 1 and Tier 2 both).

    Write :meth:`evict` (what to do on a turn over the threshold, or at a
    compression event). ``tier2.*`` statistics are a scorer's; fill them if
    your strategy asks one (``needs={"scorer"}``)."""

    def __init__(self, settings: StrategySettings, deps: Any) -> None:
        self.settings, self.budget, self.stats = settings, deps.budget, deps.stats

    def step(self, window: Window, turn: int) -> None:
        if window.usage() > self.budget.eviction_threshold_pct * self.budget.total:
            self.stats.guard_triggers += 1
            self.evict(window, turn)

    def compress(self, window: Window, turn: int) -> None:
        self.evict(window, turn)

    def evict(self, window: Window, turn: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define evict(window, turn)")

    def remove(self, window: Window, ctx_id: str, turn: int) -> None:
        window.evict(ctx_id)
        self.stats.evictions.append((turn, ctx_id))

    def tier1(self, window: Window, turn: int) -> None:
        st = self.stats
        st.masked += int(mask_old_tool_results(window, turn, self.budget) > 0)
        dropped = drop_trivial_acks(window, turn, self.budget)
        st.trivial_dropped += len(dropped)
        st.evictions += [(turn, cid) for cid in dropped]
        st.subscriptions_deactivated += deactivate_stale_subscriptions(window, turn, self.budget)


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


def replay_strategy(strategy: EvictionStrategy, session: Session, truth: SessionTruth,
                    budget: TokenBudget, stats: ReplayStats, flush_turn: int | None = None,
                    before_step: Callable[[int], None] | None = None) -> ReplayStats:
    """Replay ``session`` through ``strategy``: ``strategy.step`` every turn
    (``strategy.compress`` at ``flush_turn``), ``before_step(turn)`` before each
    step. Through the strategy's own ``replay_compiled`` when it has one and
    takes the replay. A ``replay_compiled`` that takes ``before_step`` calls it
    itself, for every turn before its scorer is next asked or changes; else
    ``before_step`` is called for every turn after it (a strategy takes a
    replay only when its scorer keeps no state, so what ``before_step`` asks of
    it is the same either way)."""
    replay_compiled = getattr(strategy, "replay_compiled", None)
    if replay_compiled is not None:
        if _takes_before_step(replay_compiled):
            if replay_compiled(session, truth, budget, stats, flush_turn, before_step=before_step):
                return stats
        elif replay_compiled(session, truth, budget, stats, flush_turn):
            if before_step is not None:
                for turn in range(session.turns):
                    before_step(turn)
            return stats

    def step(window: Window, turn: int) -> None:
        if before_step is not None:
            before_step(turn)
        if turn == flush_turn:
            strategy.compress(window, turn)  # a snapshot case: one flush decision
        else:
            strategy.step(window, turn)

    return replay(session, truth, step, budget, stats)


@functools.lru_cache(maxsize=256)
def _takes_before_step_of(function: Callable) -> bool:
    try:
        return "before_step" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _takes_before_step(method: Callable) -> bool:
    """Whether a strategy's ``replay_compiled`` takes ``before_step`` (and calls it itself)."""
    return _takes_before_step_of(getattr(method, "__func__", method))


def validate_strategy_settings(raw: Mapping[str, Any]) -> StrategySettings:
    return STRATEGIES.validate(raw)  # type: ignore[return-value]


def build_strategy(settings: StrategySettings, deps: StrategyDeps) -> EvictionStrategy:
    always = {"budget": deps.budget, "shares": deps.shares, "stats": deps.stats,
              "scope_id": deps.scope_id, "namespace": deps.namespace, "model_id": deps.model_id}
    offers = {"scorer": deps.scorer, "broker": deps.broker, "llm": deps.llm}
    return STRATEGIES.build(settings, always, offers)
