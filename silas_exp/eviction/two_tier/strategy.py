"""Silas two-tier eviction, once per turn.

Tier 1 (no model): mask old tool results, drop trivial acknowledgements,
deactivate stale subscriptions, then evict by zone policy any zone above its
cap (share × allocable × ``zone_cap_factor``). If usage is still above the
eviction threshold, Tier 2 asks the scorer to rank the evictable items, groups
them coherently, proposes the lowest-relevance groups until usage would reach
``evict_to_pct``, lets the main model keep items back, and evicts the rest.
Scorer failures (timeout, error) count toward a circuit breaker that opens
after ``breaker_failures`` in a row; while it is open, or on any failure,
aggressive heuristics evict instead. ``scorer_threshold_pct`` is a hard
ceiling: keep-backs cannot hold usage above it.

The strategy replays a whole session through the compiled loop
(``compiled.py``, ``kernel.py`` beside this module) when that loop makes its
decisions exactly: ``compiled_ineligible`` says when it cannot, from the
strategy's own settings and the traits its scorer's and main model's kinds
declare in their registries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
from pydantic import Field

from silas_exp.context.budget import TokenBudget, ZoneShares, zone_budgets
from silas_exp.context.features import FEATURES
from silas_exp.context.policy import (
    deactivate_stale_subscriptions,
    drop_trivial_acks,
    evict_by_zone_policy,
    evict_to_total,
    mask_old_tool_results,
)
from silas_exp.context.stats import Flush, Ranking, ReplayStats
from silas_exp.context.window import LiveItem, Window
from silas_exp.eviction.base import StrategySettings
from silas_exp.eviction.two_tier import compiled, records
from silas_exp.eviction.two_tier.encode import encoded
from silas_exp.eviction.two_tier.units import candidate_records, plain_scores, ranked_units
from silas_exp.feedback.flush import KeepBackBroker
from silas_exp.feedback.store import DiscardingStore, FeedbackStore
from silas_exp.llm import calls
from silas_exp.llm.backends import BACKENDS
from silas_exp.schema.eviction import ContextZone, ProposalRecord
from silas_exp.schema.session import Session, SessionTruth
from silas_exp.scorers.base import Scorer, ScorerUnavailable
from silas_exp.scorers.grid import SCORE_GRID_BITS, on_grid

GRID_SCALE = float(2 ** SCORE_GRID_BITS)


class TwoTierSettings(StrategySettings):
    name: str = "two_tier"
    zone_cap_factor: float = Field(default=1.25, ge=1.0, le=2.0, allow_inf_nan=False)
    breaker_failures: int = Field(default=3, ge=1)
    breaker_cooldown_turns: int = Field(default=10, ge=1)
    fallback_extra_pct: float = Field(default=0.10, ge=0.0, le=0.5)
    keepbacks: bool = True
    # share of other evictable items added to each proposal at random; used only
    # when collecting calibration feedback, so labels also cover items the
    # control would never propose (without it the fit extrapolates blindly)
    explore_rate: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)


class TwoTierEviction:
    def __init__(self, settings: TwoTierSettings, budget: TokenBudget, shares: ZoneShares,
                 scorer: Scorer, broker, stats: ReplayStats, scope_id: str) -> None:
        self.s, self.budget, self.shares, self.scorer = settings, budget, shares, scorer
        self.broker, self.stats, self.scope_id = broker, stats, scope_id
        self._failures = 0
        self._open_until = -1
        self._caps_by_system: dict[int, dict[ContextZone, int]] = {}
        seed = int(hashlib.sha256(scope_id.encode()).hexdigest()[:8], 16)
        self._rng = np.random.default_rng(seed)

    # -- tier 1 ---------------------------------------------------------------
    def _caps(self, window: Window) -> dict[ContextZone, int]:
        """The zone caps, cached and shared: read them, never change them
        (``evict_by_zone_policy`` and ``evict_to_total`` only read them)."""
        system = window.zone_usage(ContextZone.SYSTEM)
        caps = self._caps_by_system.get(system)
        if caps is None:  # the caps move only with the system zone
            caps = self._caps_by_system[system] = {
                z: int(b * self.s.zone_cap_factor)
                for z, b in zone_budgets(self.shares, self.budget, system).items()}
        return caps

    def tier1(self, window: Window, turn: int) -> None:
        st = self.stats
        st.masked += int(mask_old_tool_results(window, turn, self.budget) > 0)
        dropped = drop_trivial_acks(window, turn, self.budget)
        st.trivial_dropped += len(dropped)
        st.subscriptions_deactivated += deactivate_stale_subscriptions(window, turn, self.budget)
        evicted = list(dropped)
        for zone, cap in self._caps(window).items():
            evicted += evict_by_zone_policy(window, zone, cap, turn)
        if evicted:
            st.evictions += [(turn, cid) for cid in evicted]

    # -- tier 2 ---------------------------------------------------------------
    def _fallback(self, window: Window, turn: int) -> None:
        self.stats.fallbacks += 1
        pct = max(self.budget.evict_to_pct - self.s.fallback_extra_pct, 0.0)
        evicted = evict_to_total(window, int(pct * self.budget.total), self._caps(window), turn)
        self.stats.evictions += [(turn, cid) for cid in evicted]

    def _score(self, items: list[LiveItem], turn: int) -> dict[str, float] | None:
        if turn < self._open_until:
            return None
        self.stats.scorer_calls += 1
        try:
            scores = self.scorer.score(items, turn)
        except ScorerUnavailable:
            self.stats.scorer_failures += 1
            self._failures += 1
            if self._failures >= self.s.breaker_failures:
                self.stats.breaker_opens += 1
                self._open_until = turn + self.s.breaker_cooldown_turns
                self._failures = 0
            return None
        self._failures = 0
        return on_grid(scores)  # decisions that do not hinge on the last bits of a score

    def tier2(self, window: Window, turn: int) -> None:
        items = window.evictable()
        scores = self._score(items, turn)
        if scores is None:
            self._fallback(window, turn)
            return
        ranking, units = ranked_units(items, scores)
        self.stats.rankings.append(Ranking(turn, ranking))
        need = window.usage() - int(self.budget.evict_to_pct * self.budget.total)
        chosen: list[LiveItem] = []
        taken = 0
        for unit in units:
            if need <= 0:
                break
            # tokens read without LiveItem.tokens's property call
            if len(unit) == 1:  # most units: an item without a group
                chosen.append(unit[0])
                need -= unit[0]._tokens
            else:
                chosen += sorted(unit, key=lambda i: scores[i.ctx_id])
                need -= sum(i._tokens for i in unit)
            taken += 1
        if self.s.explore_rate > 0:
            for unit in units[taken:]:
                if self._rng.random() < self.s.explore_rate:
                    chosen += unit
        number = self.stats.proposals
        self.stats.proposals += 1
        ids = [i.ctx_id for i in chosen]
        chosen_scores = [scores[cid] for cid in ids]
        excluded: frozenset[str] = frozenset()
        said: frozenset[str] = frozenset()
        if not (self.s.keepbacks and chosen):
            # no main model sees this proposal, so no record of it is built; the
            # scorer's scores are checked all the same (candidate_records raises)
            if not plain_scores(chosen_scores):
                candidate_records(chosen, scores, turn)
        else:
            proposal = ProposalRecord(
                # deterministic id: reruns of a job reproduce every proposal exactly
                f"{self.scope_id}:{turn}:{number}", self.scope_id, turn, datetime.now(UTC),
                self.scorer.model_id, candidate_records(chosen, scores, turn),
            )
            outcome = self.broker.resolve(proposal, {i.ctx_id: i for i in chosen}, turn)
            excluded = outcome.excluded
            said = excluded  # what the main model itself kept back (before group expansion)
            self.stats.auto_resolved += outcome.feedback.resolved_by == "auto"
            # a kept-back item keeps its whole coherence group
            kept_groups = {i.group for i in chosen if i.ctx_id in excluded and i.group}
            excluded = excluded | {i.ctx_id for i in chosen if i.group in kept_groups}
        st = self.stats
        kept = [cid in excluded for cid in ids]
        st.candidate_scores += chosen_scores
        st.candidate_excluded += kept
        st.candidate_turns += [turn] * len(ids)
        st.candidate_ids += ids
        if st.flush_log is not None:
            # labels for exclusion prediction: the main model's own keep-backs
            st.flush_log.append(Flush(turn, tuple(i.snapshot() for i in chosen),
                                      tuple(cid in said for cid in ids)))
        self.scorer.observe(chosen, kept, turn)
        for cid, k in zip(ids, kept, strict=True):
            if not k:
                window.evict(cid)
                st.evictions.append((turn, cid))
        ceiling = int(self.budget.scorer_threshold_pct * self.budget.total)
        if window.usage() > ceiling:
            self.stats.hard_ceiling_overrides += 1
            evicted = evict_to_total(window, ceiling, self._caps(window), turn)
            self.stats.evictions += [(turn, cid) for cid in evicted]

    def step(self, window: Window, turn: int) -> None:
        threshold = self.budget.eviction_threshold_pct * self.budget.total
        if window.usage() > threshold:  # the budget guard: this turn is under pressure
            self.stats.guard_triggers += 1
        self.tier1(window, turn)
        if window.usage() > threshold:
            self.tier2(window, turn)

    def compress(self, window: Window, turn: int) -> None:
        """Explicit flush: Tier 1, then Tier 2 down to ``evict_to_pct`` regardless of the guard."""
        self.tier1(window, turn)
        if window.usage() > self.budget.evict_to_pct * self.budget.total:
            self.tier2(window, turn)

    # -- the compiled replay -------------------------------------------------
    def _scoring(self) -> tuple[int, str | None]:
        """How the compiled loop scores for this strategy's scorer (``records``:
        ``LINEAR``, ``ONLINE``, ``EXTERNAL``), from the traits its kind declares
        (``register_scorer``), or why it cannot (-1 and the reason)."""
        kind = getattr(self.scorer, "kind", None)  # a built scorer: a CheckedScorer of its kind
        name = getattr(kind, "name", type(self.scorer).__name__)
        if kind is not None and kind.trait("array_scores"):
            return records.EXTERNAL, None
        if kind is None or not (kind.trait("linear") or kind.trait("online")):
            return -1, f"scorer {name!r} is not declared linear, online or array_scores"
        w = np.asarray(self.scorer.weights, dtype=float)
        if w.shape != (len(FEATURES),) or not np.all(np.isfinite(w)):
            return -1, "scorer weights are not one finite weight per feature"
        return (records.LINEAR if kind.trait("linear") else records.ONLINE), None

    def compiled_ineligible(self) -> str | None:
        """Why the compiled loop cannot replay this strategy (None: it can)."""
        if type(self) is not TwoTierEviction:
            return "a strategy of its own (a subclass) steps in Python"
        if self.s.explore_rate > 0:
            return "exploration draws from the strategy's own generator"
        _, why = self._scoring()
        if why is not None:
            return why
        if self.s.keepbacks:
            return _keepbacks_ineligible(self.broker)
        return None

    def replay_compiled(self, session: Session, truth: SessionTruth, budget: TokenBudget,
                        stats: ReplayStats, flush_turn: int | None = None,
                        before_step: Callable[[int], None] | None = None) -> bool:
        """Replay ``session`` through the compiled loop, as ``step`` (``compress``
        at ``flush_turn``) would turn by turn, calling ``before_step(turn)`` for
        every turn before the scorer next changes or is asked (``compiled.replay``):
        True, or False (nothing replayed) when it cannot stand in
        (``compiled_ineligible``, ``SILAS_EXP_REPLAY=python``, a scorer that
        cannot score this session's items in process)."""
        if not compiled.enabled() or self.compiled_ineligible() is not None:
            return False
        scoring, _ = self._scoring()
        scores = None
        if scoring == records.EXTERNAL:
            scores = self._array_scores(session, truth, budget)
            if scores is None:
                return False
        return compiled.replay(session, truth, budget, stats, flush_turn, compiled.Loop(
            keepbacks=self.s.keepbacks, zone_cap_factor=self.s.zone_cap_factor, budget=self.budget,
            shares=self.shares, weights=self.scorer.weights if scoring != records.EXTERNAL
            else np.zeros(len(FEATURES)),
            broker=self.broker if self.s.keepbacks else None, scope_id=self.scope_id,
            scorer_model=self.scorer.model_id, scoring=scoring,
            online=self.scorer if scoring == records.ONLINE else None, scores=scores), before_step)

    def _array_scores(self, session: Session, truth: SessionTruth, budget: TokenBudget):
        """Tier 2's scores from the scorer's ``array_scorer`` on the session's
        items, in grid steps (``on_grid``, as ``_score`` reads them); None when
        the scorer cannot score them in process."""
        enc = encoded(session, truth, budget)
        scorer = self.scorer.array_scorer(
            enc.ids, enc.zone_text, enc.kinds, enc.statuses, enc.relevances, enc.completed_turns,
            enc.snippets)
        if scorer is None:
            return None

        def scores(rows, tok, masked, active, last_ref, turn):
            return np.rint(scorer(rows, tok, masked, active, last_ref, turn) * GRID_SCALE
                           ).astype(np.int64)

        return scores


def _keepbacks_ineligible(broker) -> str | None:
    """Why the compiled loop cannot draw ``broker``'s keep-backs itself (None: it can)."""
    if type(broker) is not KeepBackBroker:
        return "a keep-back broker of another kind"
    if not BACKENDS.get(broker.main.backend).trait("draws_in_process"):
        return f"keep-backs from a main model on backend {broker.main.backend!r}"
    llm = broker.llm
    if not BACKENDS.kind_of(llm.settings).trait("draws_in_process") or llm.settings.simulated_latency_ms:
        return "keep-back answers from a backend that does not answer inline"
    if llm.settings.max_usd is not None or llm.cache is not None or llm.ledger is not None:
        return "a spend cap or response cache sees every call"
    if calls.active():
        return "a call log records every call"
    if type(broker.store) not in (FeedbackStore, DiscardingStore):
        return "a feedback store of another kind"
    if not broker.fresh:
        return "a broker that has resolved flushes already"
    return None
