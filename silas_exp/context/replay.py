"""Replay a scripted session turn by turn through the context manager.

Per turn: new items enter the window; the main model works on the turn and
needs some earlier items (ground truth) — each need is *served* if the item is
in the window, unmasked and active, otherwise the item is retrieved back from
memory (a re-retrieval, which costs its tokens again); subscriptions touched
this turn reactivate; then eviction runs once.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable

from silas_exp.context.budget import TokenBudget
from silas_exp.context.stats import NeedEvent, ReplayStats, tuple_maker
from silas_exp.context.window import LiveItem, Window
from silas_exp.schema.session import Session, SessionTruth

# "python": every replay, and every call a simulated model answers, in Python (default:
# auto, compiled where a strategy or scorer can stand in exactly)
ENGINE_VARIABLE = "SILAS_EXP_REPLAY"


def compiled_enabled() -> bool:
    """Whether replays and simulated calls may take their compiled paths."""
    return os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() != "python"


class NeedOracle:
    """Ground-truth look-ups (future need), for the simulated main model, the
    oracle scorer and the metrics. Never handed to a real scorer."""

    def __init__(self, truth: SessionTruth) -> None:
        # every need in turn order, for "what is needed within the horizon" in one slice
        self._needs = needs = sorted([(r.turn, r.ctx_id, r.grade) for r in truth.references])
        self._need_turns = [t for t, _, _ in needs]
        # per ctx_id, its needs sorted by (turn, grade) as two parallel lists (bisect on
        # turns): read off the sorted needs, where each item's come in that order
        self._turns: dict[str, list[int]] = {}
        self._grades: dict[str, list[int]] = {}
        for t, ctx_id, grade in needs:
            turns = self._turns.get(ctx_id)
            if turns is None:
                self._turns[ctx_id], self._grades[ctx_id] = [t], [grade]
            else:
                turns.append(t)
                self._grades[ctx_id].append(grade)
        self._memo: dict[tuple[int, int], dict[str, int]] = {}

    def max_grade_within(self, ctx_id: str, turn: int, horizon: int) -> int:
        """Highest grade of any need of ``ctx_id`` in turns (turn, turn + horizon].
        Callers ask about many items at one turn (a proposal's candidates, a
        ranking), so the answer comes from ``needed_within`` of that turn."""
        return self.needed_within(turn, horizon).get(ctx_id, 0)

    def needed_within(self, turn: int, horizon: int) -> dict[str, int]:
        """Every item needed in turns (turn, turn + horizon], with its highest
        grade there: ``max_grade_within`` of each of them (an item not listed
        has 0), from one slice of the needs instead of a look-up per item.
        Kept per (turn, horizon): the replay's keep-backs and the metrics after
        it ask about the same Tier-2 turns. Shared, so read it, never change it."""
        key = (turn, horizon)
        best = self._memo.get(key)
        if best is None:
            best = self._memo[key] = self._slice(turn, horizon)
        return best

    def _slice(self, turn: int, horizon: int) -> dict[str, int]:
        lo = bisect_right(self._need_turns, turn)
        hi = bisect_right(self._need_turns, turn + horizon)
        best: dict[str, int] = {}
        for _, ctx_id, grade in self._needs[lo:hi]:
            if grade > best.get(ctx_id, 0):
                best[ctx_id] = grade
        return best

    def need_score(self, ctx_id: str, turn: int, horizon: int) -> float:
        """The reference ceiling's relevance in [0, 1]: the highest grade needed
        within the horizon (what the metrics and the main model's keep-backs
        look at) first, the discounted need beyond it as a tie-breaker."""
        return 0.9 * self.max_grade_within(ctx_id, turn, horizon) / 3.0 \
            + 0.1 * self.discounted_need(ctx_id, turn, 2 * horizon)

    def discounted_need(self, ctx_id: str, turn: int, horizon: int = 30) -> float:
        """Future need in [0, 1]: grade/3 of the next need, discounted by distance."""
        turns = self._turns.get(ctx_id)
        if turns is None:
            return 0.0
        i = bisect_right(turns, turn)
        if i == len(turns):
            return 0.0
        t, g = turns[i], self._grades[ctx_id][i]
        return (g / 3.0) * max(0.0, 1.0 - (t - turn - 1) / (2 * horizon))


Step = Callable[[Window, int], None]


def replay(session: Session, truth: SessionTruth, step: Step, budget: TokenBudget,
           stats: ReplayStats) -> ReplayStats:
    by_turn: dict[int, list] = defaultdict(list)
    # the subscriptions refreshed at each turn (a subscription's refresh turns
    # come with it): a turn looks at those, not at every subscription
    refreshed: dict[int, dict[str, None]] = defaultdict(dict)
    for item in session.items:
        by_turn[item.turn].append(item)
        if item.kind == "subscription":
            for t in item.refreshed_turns:
                refreshed[t][item.ctx_id] = None
    needs: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for ref in truth.references:
        needs[ref.turn].append((ref.ctx_id, ref.grade))
    window = Window()
    # the calls made per item and per need, looked up once
    add, get, from_session = window.add, window.get, LiveItem.from_session
    cap = budget.max_subscription_tokens
    need_event = tuple_maker(NeedEvent)  # from a tuple: no Python-level call per need
    add_need = stats.needs.append
    for turn in range(session.turns):
        for item in by_turn.get(turn, ()):
            add(from_session(item, cap))
        for ctx_id, grade in needs.get(turn, ()):
            it = get(ctx_id)
            served = it is not None and not it.masked and it.active
            if it is None and ctx_id in window.evicted:
                it = window.retrieve(ctx_id, turn)
                stats.re_retrievals += 1
                stats.re_retrieved_tokens += it.tokens
            elif it is not None and not served:
                it.restore()  # re-run the tool / re-activate: costs the full tokens again
                stats.re_retrievals += 1
                stats.re_retrieved_tokens += it.tokens
            if it is not None:
                it.last_ref = turn
            add_need(need_event((turn, ctx_id, grade, served)))
        for ctx_id in refreshed.get(turn, ()):
            it = get(ctx_id)
            if it is not None and it.kind == "subscription" and turn in it.refreshed_turns:
                it.restore()
                it.last_ref = turn
        step(window, turn)
        stats.window_tokens.append(window.usage())
    stats.turns = session.turns
    stats.retained = [text for it in window if (text := it.visible_text())]
    return stats
