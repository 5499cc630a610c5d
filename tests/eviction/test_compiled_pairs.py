"""Each compiled function of the two-tier loop (eviction/two_tier/kernel.py)
against the Python function it mirrors, one pair at a time, on the same
window: a generated session replayed in Python up to a turn under pressure,
then copied into the kernel's arrays. Each pair must leave the same window
(order, tokens, masked, active, evictions) and return the same values.

Whole replays, both ways, are compared in tests/context/test_compiled_replay.py
and pinned in tests/context/test_replay_golden.py."""

from __future__ import annotations

import numpy as np
import pytest

from silas_exp.context.budget import PROFILES, TokenBudget
from silas_exp.context.features import linear_scores
from silas_exp.context.policy import (
    deactivate_stale_subscriptions,
    drop_trivial_acks,
    evict_by_zone_policy,
    evict_to_total,
    mask_old_tool_results,
    zone_order_key,
)
from silas_exp.context.replay import NeedOracle, replay
from silas_exp.context.stats import ReplayStats
from silas_exp.data.suites.build import peak_usage
from silas_exp.data.suites.generator import generate_session, spec_for
from silas_exp.eviction.two_tier import TwoTierEviction, TwoTierSettings, eviction_units, keep_first
from silas_exp.eviction.two_tier import kernel as T
from silas_exp.eviction.two_tier import records as K
from silas_exp.eviction.two_tier.compiled import Loop, params
from silas_exp.eviction.two_tier.encode import encoded
from silas_exp.feedback.flush import KeepBackBroker, KeepbackConfig, MainModel, simulated_keepback
from silas_exp.feedback.store import DiscardingStore
from silas_exp.llm import LLMSettings, build_client
from silas_exp.llm.simulated import KeyedDraws
from silas_exp.schema.eviction import ContextZone
from silas_exp.scorers import ScorerContext, build_scorer, validate_scorer_settings
from silas_exp.scorers.grid import on_grid

ZONES = {ContextZone.CHRONICLE: K.CHRONICLE, ContextZone.MEMORY: K.MEMORY,
         ContextZone.WORKSPACE: K.WORKSPACE}


class _Stop(Exception):
    pass


class Case:
    """A session replayed in Python up to ``turn`` (its arrivals and needs in,
    no eviction yet at that turn), as a Python strategy and window and as the
    kernel's records."""

    def __init__(self, seed: int = 41, flavour: str = "coding", turn: int = 70, keepbacks: bool = True,
                 keepback: KeepbackConfig | None = None) -> None:
        session, truth = generate_session(seed, spec_for(flavour, 90), f"pairs-{seed}")
        self.budget = TokenBudget(total=max(int(peak_usage(session, truth) / 3.0), 2_000),
                                  observation_mask_after_turns=2, subscription_ttl_turns=3)
        self.turn, self.oracle, self.stats = turn, NeedOracle(truth), ReplayStats()
        self.llm = build_client(LLMSettings(cache_mode="off"), seed=5, cache_dir=None)
        scorer = build_scorer(validate_scorer_settings({"name": "heuristic"}), ScorerContext(
            seed=5, namespace="pairs", scorer_model="h", llm=self.llm))
        self.broker = KeepBackBroker(MainModel("m", "simulated", keepback or KeepbackConfig()), self.llm,
                                     DiscardingStore(), "pairs/r0", 5, self.oracle.max_grade_within)
        self.strategy = TwoTierEviction(TwoTierSettings(keepbacks=keepbacks), self.budget,
                                        PROFILES[session.profile], scorer, self.broker, self.stats,
                                        session.scope_id)
        captured = []

        def step(window, t):
            if t == turn:
                captured.append(window)
                raise _Stop
            self.strategy.step(window, t)

        with pytest.raises(_Stop):
            replay(session, truth, step, self.budget, ReplayStats())
        self.window = captured[0]
        self.enc = encoded(session, truth, self.budget)
        self.items, self.turns = self.enc.item_arrays, self.enc.turn_arrays
        self.weights = np.asarray(scorer.weights, dtype=float)
        self.params = params(Loop(keepbacks, 1.25, self.budget, self.strategy.shares, self.weights,
                                  self.broker if keepbacks else None, session.scope_id, "h"),
                             None, self.enc.n_groups)
        self.w = self._arrays()

    def _arrays(self):
        """The Python window's state as the kernel's ``WindowState``."""
        enc, window = self.enc, self.window
        n = len(enc.ids)
        w = T.new_window(self.items.full, self.items.born, 2 * n + 1)
        for it in list(window) + list(window.evicted.values()):
            i = enc.index[it.ctx_id]
            w.tok[i], w.masked[i], w.active[i], w.last_ref[i] = it._tokens, it.masked, it.active, it.last_ref
        for it in window:
            T.add(w, self.items, enc.index[it.ctx_id])
        for cid in window.evicted:
            w.state[enc.index[cid]] = K.EVICTED
        return w

    def live(self) -> list[str]:
        m = T.live_items(self.w)
        return [self.enc.ids[i] for i in self.w.live[:m]]

    def assert_same_window(self) -> None:
        """The arrays hold the Python window: order, usage and every item's state."""
        window, w, enc = self.window, self.w, self.enc
        assert self.live() == [it.ctx_id for it in window]
        assert int(w.tot[0]) == window.usage()
        for zone, z in ZONES.items():
            assert int(w.zu[z]) == window.zone_usage(zone)
        for it in list(window) + list(window.evicted.values()):
            i = enc.index[it.ctx_id]
            assert (int(w.tok[i]), bool(w.masked[i]), bool(w.active[i]), int(w.last_ref[i])) == \
                (it._tokens, it.masked, it.active, it.last_ref), it.ctx_id
        assert {enc.ids[i] for i in range(len(enc.ids)) if w.state[i] == K.EVICTED} == set(window.evicted)

    def evicted_since(self, start: int) -> list[str]:
        return [self.enc.ids[i] for i in self.w.ev_item[start:self.w.n_ev[0]]]

    def of_kind(self, kind: int) -> list[int]:
        m = T.live_items(self.w)
        return [i for i in self.w.live[:m] if self.items.kind[i] == kind]


@pytest.fixture
def case():
    c = Case()
    c.assert_same_window()  # the copy itself
    yield c
    c.llm.close()


# -- the window and Tier 1 -------------------------------------------------------


def test_mask_old_tool_result(case):
    w, items = case.w, case.items
    saved = sum(T.mask_old_tool_result(i, case.turn, case.params.mask_after, w.masked, w.last_ref,
                                       items.mask_tok, items.zone, w.tok, w.zu, w.tot)
                for i in case.of_kind(K.KIND_TOOL_RESULT))
    assert saved == mask_old_tool_results(case.window, case.turn, case.budget) > 0
    case.assert_same_window()


def test_drop_trivial_ack():
    dropped_at_all = 0
    for turn in range(40, 90, 3):  # acks are dropped the turn after they come: look at several turns
        case = Case(turn=turn)
        start = case.w.n_ev[0]
        w, items = case.w, case.items
        dropped = []
        for i in case.of_kind(K.KIND_ACK):
            if T.drop_trivial_ack(i, case.turn, case.params.trivial_ack, items.zone, items.pinned,
                                  items.born, w.tok):
                T.evict(w, items, i, case.turn)
                dropped.append(case.enc.ids[i])
        assert dropped == drop_trivial_acks(case.window, case.turn, case.budget) == case.evicted_since(start)
        case.assert_same_window()
        dropped_at_all += len(dropped)
    assert dropped_at_all


def test_deactivate_stale_subscription():
    deactivated = 0
    for turn in range(40, 90, 3):
        case = Case(flavour="support", seed=44, turn=turn)
        w, items = case.w, case.items
        count = 0
        for i in case.of_kind(K.KIND_SUBSCRIPTION):
            if T.deactivate_stale_subscription(i, case.turn, case.params.ttl, w.active, w.last_ref,
                                               items.born, items.sub_off, items.sub_turns):
                w.active[i] = False
                T.set_tokens(w, items, i, 0)
                count += 1
        assert count == deactivate_stale_subscriptions(case.window, case.turn, case.budget)
        case.assert_same_window()
        deactivated += count
    assert deactivated


def test_caps(case):
    T.caps(case.w, case.params)
    expected = case.strategy._caps(case.window)
    assert {zone: int(case.w.caps[z]) for zone, z in ZONES.items()} == expected


@pytest.mark.parametrize("zone", list(ZONES))
def test_zone_pool(case, zone):
    m = T.live_items(case.w)
    got = [case.enc.ids[i] for i in T.zone_pool(case.w, case.items, ZONES[zone], case.turn, m)]
    expected = sorted(case.window.evictable(zone), key=zone_order_key(zone, case.turn))
    assert got == [it.ctx_id for it in expected] and got


@pytest.mark.parametrize("zone", list(ZONES))
def test_evict_by_zone_policy(case, zone):
    z = ZONES[zone]
    case.w.caps[z] = limit = case.window.zone_usage(zone) // 2  # half the zone must go
    start = case.w.n_ev[0]
    count = T.evict_by_zone_policy(case.w, case.items, z, case.turn, T.live_items(case.w))
    evicted = evict_by_zone_policy(case.window, zone, limit, case.turn)
    assert case.evicted_since(start) == evicted and count == len(evicted) > 0
    case.assert_same_window()


def test_evict_to_total(case):
    T.caps(case.w, case.params)
    target = case.window.usage() // 2
    start = case.w.n_ev[0]
    T.evict_to_total(case.w, case.items, target, case.turn, T.live_items(case.w))
    evicted = evict_to_total(case.window, target, case.strategy._caps(case.window), case.turn)
    assert case.evicted_since(start) == evicted and evicted
    case.assert_same_window()


def _counted(stats: ReplayStats) -> dict[str, int]:
    return {name: getattr(stats, name) for name in K.COUNTERS}


def _kernel_counted(case) -> dict[str, int]:
    return dict(zip(K.COUNTERS, case.w.counters.tolist(), strict=True))


def test_tier1(case):
    start, before, counted = case.w.n_ev[0], len(case.stats.evictions), _counted(case.stats)
    m = T.tier1(case.w, case.items, case.params, case.turn)
    case.strategy.tier1(case.window, case.turn)
    assert m == len(case.window)
    assert case.evicted_since(start) == [cid for _, cid in case.stats.evictions[before:]]
    now = _counted(case.stats)
    assert _kernel_counted(case) == {k: now[k] - counted[k] for k in K.COUNTERS}
    assert any(_kernel_counted(case).values())
    case.assert_same_window()


# -- Tier 2 and the keep-backs ---------------------------------------------------


def _scored(case):
    """The evictable items, Python's and the kernel's, scored both ways."""
    m = T.live_items(case.w)
    n = len(case.enc.ids)
    ev = np.empty(n, np.int64)
    k = T.evictable(case.w, case.items, m, ev)
    score_int = np.empty(n, np.int64)
    T.linear_scores_on_grid(case.w, case.items, ev, k, case.turn, case.weights,
                             np.empty(len(case.weights)), score_int)
    items = case.window.evictable()
    scores = on_grid(linear_scores(items, case.turn, case.weights))
    return ev[:k], score_int[:k], items, scores


def test_evictable_and_linear_scores_on_grid(case):
    ev, score_int, items, scores = _scored(case)
    assert [case.enc.ids[i] for i in ev] == [it.ctx_id for it in items]
    assert (score_int / T.GRID).tolist() == [scores[it.ctx_id] for it in items]


def test_keep_first(case):
    ev, score_int, _, scores = _scored(case)
    order = T.keep_first(ev, len(ev), score_int, case.items.rank)
    assert tuple(case.enc.ids[ev[a]] for a in order) == keep_first(scores)


@pytest.mark.parametrize("seed", [41, 45, 46])
def test_eviction_units(seed):
    case = Case(seed=seed)
    ev, score_int, items, scores = _scored(case)
    groups = max(case.enc.n_groups, 1)
    nxt = np.empty(len(ev), np.int64)
    units = T.eviction_units(ev, len(ev), score_int, case.items, nxt,
                              np.full(groups, -1, np.int64), np.full(groups, -1, np.int64))
    got = []
    for a in units:
        members = []
        while a >= 0:
            members.append(case.enc.ids[ev[a]])
            a = nxt[a]
        got.append(members)
    expected = [[it.ctx_id for it in unit] for unit in eviction_units(items, scores)]
    assert got == expected


@pytest.mark.parametrize("horizon", [5, 20])
def test_keepback_answers(case, horizon):
    """The need oracle within the horizon and the simulated main model's answer."""
    ev, _, _, _ = _scored(case)
    kb = KeepbackConfig(horizon=horizon, false_keep=0.3)
    p = params(Loop(True, 1.25, case.budget, case.strategy.shares, case.weights,
                    KeepBackBroker(MainModel("m", "simulated", kb), case.llm, DiscardingStore(),
                                   "pairs/r0", 5, case.oracle.max_grade_within), "s", "h"),
               None, case.enc.n_groups)
    cands = T.new_proposal(len(ev))
    cands.item[:] = ev
    T.keepback_answers(case.items, case.turns, p, case.turn, cands, 0, len(ev),
                        np.zeros(len(case.enc.ids), np.int64))
    ids = [case.enc.ids[i] for i in ev]
    needed = {cid: case.oracle.max_grade_within(cid, case.turn, horizon) for cid in ids}
    assert cands.grade.tolist() == list(needed.values())
    request = type("Request", (), {"sim": {"needed": needed, "recall": kb.recall,
                                           "false_keep": kb.false_keep, "draw": (case.turn, 0)}})()
    draws = KeyedDraws(5, "pairs/r0", "keepback")  # the backend's seed, the broker's namespace
    kept = set(simulated_keepback(request, draws)["exclude_ctx_ids"])
    assert [cid in kept for cid in ids] == cands.answer.tolist() and kept


@pytest.mark.parametrize("median", [700.0, 1900.0])
def test_answered_in_time(median):
    case = Case(keepback=KeepbackConfig(latency_median_ms=median))
    for turn in range(40):
        broker_latency = case.broker._sim_latency((turn, 0))
        assert T.answered_in_time(case.params, turn) == (broker_latency <= 2000.0), turn


def test_keep_groups(case):
    ev, _, _, _ = _scored(case)
    cands = T.new_proposal(len(ev))
    cands.item[:] = ev
    rng = np.random.default_rng(0)
    cands.answer[:] = rng.random(len(ev)) < 0.2
    T.keep_groups(case.items, cands, 0, len(ev), np.zeros(max(case.enc.n_groups, 1), np.bool_))
    items = case.window.evictable()
    said = {it.ctx_id for it, a in zip(items, cands.answer, strict=True) if a}
    kept_groups = {it.group for it in items if it.ctx_id in said and it.group}
    expected = [it.ctx_id in said or it.group in kept_groups for it in items]
    assert cands.kept.tolist() == expected


@pytest.mark.parametrize("keepbacks", [True, False])
def test_tier2(keepbacks):
    """Tier 2 whole: ranking, proposal, keep-backs, evictions, hard ceiling."""
    for turn in range(60, 90):  # the first turn still over evict_to_pct after Tier 1
        case = Case(turn=turn, keepbacks=keepbacks, keepback=KeepbackConfig(false_keep=0.9))
        case.strategy.tier1(case.window, case.turn)
        if case.window.usage() > case.budget.evict_to_pct * case.budget.total:
            break
    m = T.tier1(case.w, case.items, case.params, case.turn)
    case.w.counters[:] = 0  # Tier 2's own counts from here
    case.assert_same_window()
    st = case.stats
    start, before, counted, proposed = case.w.n_ev[0], len(st.evictions), _counted(st), len(st.candidate_ids)
    n = len(case.enc.ids)
    groups = max(case.enc.n_groups, 1)
    scratch = (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
               np.zeros(n, np.int64), np.full(groups, -1, np.int64), np.full(groups, -1, np.int64),
               np.zeros(groups, np.bool_), np.empty(len(case.weights)))
    rank_item, k, cands, n_chosen, sent, _ = T.tier2(
        case.w, case.items, case.turns, case.params, case.turn, m, case.weights, scratch,
        np.empty(1, np.int64), 0, T.new_proposal(1), 0)
    case.strategy.tier2(case.window, case.turn)
    assert [case.enc.ids[i] for i in rank_item[:k]] == list(st.rankings[-1].ranked)
    assert [case.enc.ids[i] for i in cands.item[:n_chosen]] == st.candidate_ids[proposed:]
    assert cands.score[:n_chosen].tolist() == st.candidate_scores[proposed:]
    assert cands.kept[:n_chosen].tolist() == st.candidate_excluded[proposed:]
    assert n_chosen and sent == keepbacks and any(st.candidate_excluded[proposed:]) == keepbacks
    assert case.evicted_since(start) == [cid for _, cid in st.evictions[before:]]
    now = _counted(st)
    assert _kernel_counted(case) == {k: now[k] - counted[k] for k in K.COUNTERS}
    case.assert_same_window()


@pytest.mark.parametrize("window", [10, 400])
def test_observe(case, window):
    """The online scorer's observations: each candidate's feature row as
    proposed and its label into the rolling window, and when a refit is due."""
    from silas_exp.scorers.calibrated import OnlineScorer, OnlineSettings

    ev, _, items, _ = _scored(case)
    online = OnlineScorer(OnlineSettings(window=window, update_every=2, min_records=8))
    refits = []
    online.refit = lambda X, y: refits.append((X.copy(), y.copy()))
    ring_x, ring_y = np.empty((window, len(case.weights))), np.empty(window)
    ring = np.array([0, 0, 0, 2, 8], np.int64)
    rng = np.random.default_rng(7)
    for start in range(0, 30, 6):  # five proposals of up to six candidates each
        chosen = list(range(start, min(start + 6, len(ev))))
        cands = T.new_proposal(len(chosen))
        cands.item[:] = ev[chosen]
        for j, a in enumerate(chosen):
            it = items[a]
            cands.tok[j], cands.masked[j], cands.last_ref[j] = it._tokens, it.masked, it.last_ref
        cands.kept[:] = rng.random(len(chosen)) < 0.3
        due = T.observe(case.items, cands, 0, len(chosen), case.turn, ring_x, ring_y, ring)
        before = len(refits)
        online.observe([items[a] for a in chosen], cands.kept.tolist(), case.turn)
        assert due == (len(refits) > before)
        held, slot = ring[0], ring[1]
        order = np.arange(slot - held, slot) % window
        assert ring_x[order].tolist() == np.vstack(online._X).tolist()
        assert ring_y[order].tolist() == list(online._y)
    assert refits and ring[2] == online._seen
