"""Write fixtures/context/bench_v1.json: the context-assembly fixture benchmark.

Each fixture is small and hand-designed; expectations follow from the Silas
rules (zone policies, masking, subscription TTL, the 0.80 guard, routing).
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "context" / "bench_v1.json"


def item(ctx_id, turn, zone, kind, tokens, **kw):
    return {"ctx_id": ctx_id, "turn": turn, "zone": zone, "kind": kind, "tokens": tokens, **kw}


SYSTEM = item("sys", 0, "system", "system_prompt", 2000, pinned=True)


def chat(n, tokens=80):
    return [item(f"u{t}", t, "chronicle", "user_message", tokens) for t in range(n)]


FIXTURES = [
    {"id": "coding-routed", "profile": None, "turns": 6,
     "items": [SYSTEM, *chat(6),
               *[item(f"f{t}", t, "workspace", "tool_result", 900, tool_name="read_file") for t in range(5)]],
     "expected": {"zones": ["system", "chronicle", "workspace"], "guard": False, "profile": "coding"}},
    {"id": "research-routed", "profile": None, "turns": 6,
     "items": [SYSTEM, *chat(6), *[item(f"m{t}", t, "memory", "memory", 700, relevance=0.6)
                                   for t in range(6)]],
     "expected": {"zones": ["system", "chronicle", "memory"], "guard": False, "profile": "research"}},
    {"id": "support-routed", "profile": None, "turns": 6,
     "items": [SYSTEM, *chat(6), item("s1", 1, "workspace", "subscription", 600, refreshed_turns=[4]),
               item("m1", 2, "memory", "memory", 300, relevance=0.5)],
     "expected": {"zones": ["system", "chronicle", "memory", "workspace"], "guard": False,
                  "profile": "support"}},
    {"id": "conversation-routed", "profile": None, "turns": 8, "items": [SYSTEM, *chat(8, 150)],
     "expected": {"zones": ["system", "chronicle"], "guard": False, "profile": "conversation"}},
    # each turn adds 4000 tokens; Tier 1 trims the chronicle to its cap, so every
    # later turn starts above 0.80 x 10000 and the guard fires
    {"id": "overflow-guard", "profile": "conversation", "budget": {"total": 10000}, "turns": 10,
     "items": [SYSTEM, *[item(f"a{t}", t, "chronicle", "agent_response", 4000) for t in range(10)]],
     "expected": {"zones": ["system", "chronicle"], "guard": True}},
    {"id": "stale-subscription-costs-zero", "profile": "support", "turns": 14,
     "items": [SYSTEM, *chat(14), item("s1", 0, "workspace", "subscription", 1500)],
     "expected": {"zones": ["system", "chronicle"], "guard": False}},
    {"id": "old-tool-results-masked-not-gone", "profile": "coding", "turns": 12,
     "items": [SYSTEM, *[item(f"t{t}", t, "chronicle", "tool_result", 3000, tool_name="pytest",
                              status="ok") for t in range(3)]],
     "expected": {"zones": ["system", "chronicle"], "guard": False}},
    {"id": "memory-over-budget", "profile": "research", "budget": {"total": 9000}, "turns": 6,
     "items": [SYSTEM, *[item(f"m{t}", t, "memory", "memory", 3000, relevance=round(0.1 * t, 1))
                         for t in range(6)]],
     "expected": {"zones": ["system", "memory"], "guard": True}},
    {"id": "trivial-acks-dropped", "profile": "conversation", "turns": 4,
     "items": [SYSTEM, item("ack0", 0, "chronicle", "ack", 5), item("ack1", 1, "chronicle", "ack", 6)],
     "expected": {"zones": ["system"], "guard": False}},
]


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"version": "1", "fixtures": FIXTURES}, indent=1) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
