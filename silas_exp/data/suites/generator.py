"""Deterministic synthetic sessions with ground truth.

Same (seed, spec) → byte-identical session. The generator writes items as a
harness would see them and, separately, which later turns need which items
(graded 0–3). The need process depends on item attributes the scorers can
partly observe (kind, zone, status, retrieval relevance, age) plus hidden
noise, and deliberately rewards what the control heuristic undervalues:
early user instructions and error outputs in the chronicle are needed again
long after they were written (the §19.4 miscalibration).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import Reference, Session, SessionItem, SessionTruth

TOOLS = ("pytest", "grep", "http_get", "sql_query", "shell")
VIEW_TOOLS = ("read_file", "git_diff")
FILES = ("parser.py", "cache.py", "api/routes.py", "models/user.py", "README.md", "tests/test_io.py")
TOPICS = ("timeouts", "auth tokens", "retry policy", "schema migration", "rate limits", "billing")


@dataclass(frozen=True)
class SessionSpec:
    """Shape of one generated session (the case mix varies these)."""

    profile: str = "coding"  # conversation | coding | research | support
    flavour: str = "coding"  # coding | debugging | research | support | conversation
    turns: int = 80
    tool_rate: float = 0.6
    error_rate: float = 0.15
    view_rate: float = 0.3  # file views (read_file, git_diff) held in the workspace
    memory_rate: float = 0.3
    plan_rate: float = 0.08
    subscription_rate: float = 0.04
    chronicle_need: float = 0.0  # > 0: early user messages needed with this probability


FLAVOURS: dict[str, dict[str, float | str]] = {
    "coding": {"profile": "coding", "tool_rate": 0.4, "error_rate": 0.15, "view_rate": 0.6,
               "memory_rate": 0.3, "plan_rate": 0.12},
    "debugging": {"profile": "coding", "tool_rate": 0.6, "error_rate": 0.35, "view_rate": 0.5,
                  "memory_rate": 0.25, "plan_rate": 0.1},
    "research": {"profile": "research", "tool_rate": 0.3, "error_rate": 0.05, "view_rate": 0.15,
                 "memory_rate": 0.9},
    "support": {"profile": "support", "tool_rate": 0.25, "error_rate": 0.1, "view_rate": 0.1,
                "memory_rate": 0.45, "subscription_rate": 0.1},
    "conversation": {"profile": "conversation", "tool_rate": 0.1, "error_rate": 0.0,
                     "view_rate": 0.05, "memory_rate": 0.3},
    # §19.4: long-running support threads where early user instructions are needed
    # again much later — exactly what a low chronicle prior gets wrong
    "chronicle": {"profile": "support", "tool_rate": 0.3, "error_rate": 0.3, "view_rate": 0.2,
                  "memory_rate": 0.5, "chronicle_need": 0.8},
}


def spec_for(flavour: str, turns: int) -> SessionSpec:
    params = dict(FLAVOURS[flavour])
    return SessionSpec(flavour=flavour, turns=turns, **params)  # type: ignore[arg-type]


class _Builder:
    def __init__(self, rng: np.random.Generator, spec: SessionSpec) -> None:
        self.rng, self.spec = rng, spec
        self.items: list[SessionItem] = []
        self.refs: list[Reference] = []
        self.n = 0

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}-{self.n:04d}"

    def add(self, turn: int, zone: ContextZone, kind: str, tokens: int, text: str, **kw) -> SessionItem:
        item = SessionItem(ctx_id=self._id(kind[:3]), turn=turn, zone=zone, kind=kind,
                           tokens=int(tokens), text=text, **kw)
        self.items.append(item)
        return item

    def need(self, item: SessionItem, p: float, lag_scale: float, grades: tuple[int, ...],
             max_refs: int = 3) -> None:
        """With probability p the item is needed again 1..max_refs times later."""
        if self.rng.random() >= p:
            return
        t = item.turn
        for _ in range(int(self.rng.integers(1, max_refs + 1))):
            t += 1 + int(self.rng.exponential(lag_scale))
            if t >= self.spec.turns:
                break
            self.refs.append(Reference(turn=t, ctx_id=item.ctx_id, grade=int(self.rng.choice(grades))))


def generate_session(seed: int, spec: SessionSpec, session_id: str) -> tuple[Session, SessionTruth]:
    """Return (session, truth) for one synthetic session."""
    rng = np.random.default_rng(seed)
    b = _Builder(rng, spec)
    b.add(0, ContextZone.SYSTEM, "system_prompt", rng.integers(1500, 4000),
          f"system: Silas agent, profile {spec.profile}", pinned=True)
    for t in range(spec.turns):
        topic = TOPICS[int(rng.integers(len(TOPICS)))]
        u = b.add(t, ContextZone.CHRONICLE, "user_message", rng.integers(30, 160),
                  f"user: please look at {topic} in {FILES[int(rng.integers(len(FILES)))]}")
        p_need = 0.55 if t < spec.turns // 3 else 0.35
        b.need(u, max(p_need, spec.chronicle_need), 25.0, (2, 3, 3))
        a = b.add(t, ContextZone.CHRONICLE, "agent_response", rng.integers(60, 420),
                  f"agent: working on {topic}", group=f"g{t}")
        b.need(a, 0.2, 8.0, (1, 2), max_refs=1)
        if rng.random() < spec.tool_rate:
            err = rng.random() < spec.error_rate
            tool = TOOLS[int(rng.integers(len(TOOLS)))]
            r = b.add(t, ContextZone.CHRONICLE, "tool_result", rng.integers(200, 2600),
                      f"{tool}: {'Traceback: ValueError in ' + topic if err else 'ok ' + topic}",
                      tool_name=tool, status="error" if err else "ok", group=f"g{t}")
            b.need(r, 0.75 if err else 0.25, 12.0 if err else 4.0, (2, 3) if err else (1, 2))
        if rng.random() < spec.view_rate:
            tool = VIEW_TOOLS[int(rng.integers(len(VIEW_TOOLS)))]
            path = FILES[int(rng.integers(len(FILES)))]
            done = t + int(rng.integers(3, 30))
            v = b.add(t, ContextZone.WORKSPACE, "tool_result", rng.integers(300, 2200),
                      f"{tool}: {path}", tool_name=tool, status="ok",
                      completed_turn=min(done, spec.turns - 1))
            for rt in range(t + 1, min(done, spec.turns), int(rng.integers(2, 7))):
                b.refs.append(Reference(turn=rt, ctx_id=v.ctx_id, grade=int(rng.choice((1, 2, 3)))))
            b.need(v, 0.2, 20.0, (1, 2), max_refs=1)
        if rng.random() < 0.15:
            b.add(t, ContextZone.CHRONICLE, "ack", rng.integers(3, 18), "agent: ok")
        if rng.random() < spec.memory_rate:
            rel = float(np.clip(rng.beta(2, 2), 0, 1))
            m = b.add(t, ContextZone.MEMORY, "memory", rng.integers(100, 700),
                      f"memory: note about {topic}", relevance=round(rel, 3))
            b.need(m, 0.1 + 0.6 * rel**1.5, 15.0, (1, 2, 3) if rel > 0.6 else (1, 2))
        if rng.random() < spec.plan_rate:
            done = t + int(rng.integers(5, 40))
            p = b.add(t, ContextZone.WORKSPACE, "plan", rng.integers(150, 600),
                      f"plan: steps for {topic}", completed_turn=min(done, spec.turns - 1))
            for rt in range(t + 3, min(done, spec.turns), 6):
                b.refs.append(Reference(turn=rt, ctx_id=p.ctx_id, grade=2))
        if rng.random() < spec.subscription_rate:
            stale = rng.random() < 0.5
            refresh = [] if stale else list(range(t + 4, spec.turns, int(rng.integers(4, 9))))
            s = b.add(t, ContextZone.WORKSPACE, "subscription", rng.integers(300, 2000),
                      f"subscription: {FILES[int(rng.integers(len(FILES)))]}",
                      refreshed_turns=refresh)
            b.refs += [Reference(turn=rt, ctx_id=s.ctx_id, grade=1) for rt in refresh[::2]]
    refs = sorted(b.refs, key=lambda r: (r.turn, r.ctx_id))
    # one need per (turn, item): keep the highest grade
    dedup: dict[tuple[int, str], Reference] = {}
    for r in refs:
        key = (r.turn, r.ctx_id)
        if key not in dedup or dedup[key].grade < r.grade:
            dedup[key] = r
    session = Session(session_id=session_id, scope_id=f"scope-{session_id}", profile=spec.profile,
                      turns=spec.turns, items=b.items)
    return session, SessionTruth(references=list(dedup.values()))
