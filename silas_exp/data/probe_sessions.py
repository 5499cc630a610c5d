"""Deterministic synthetic probe sessions: a coding/debugging session with
facts planted at known turns, two compression events, and probes of the four
types asking for those facts. ``scripts/generate_probes.py`` writes the
shipped set to ``probes/default``.

Layout of a session (``TURNS`` turns, compressions at ``CUTS``): every turn
has a user message, an agent response and a tool result of filler text; the
planted facts sit in those items' texts (and ``facts`` lists) at the turns in
``PLAN_A`` (asked at both compressions) and ``PLAN_B`` (asked at the second).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from silas_exp.context.budget import count_tokens
from silas_exp.probes.schema import ProbePlan, ProbeSpec
from silas_exp.schema.benchmark import (
    BenchmarkCase,
    BenchmarkExpected,
    BenchmarkInput,
    BenchmarkSuite,
)

TURNS, CUTS = 64, (32, 56)
VERSION = "1.0.0"

ERRORS = ["ImportError: cannot import name 'RetryPolicy' from 'app.http'",
          "KeyError: 'session_id' in handlers/auth.py line 88",
          "TimeoutError: redis did not answer within 5.0 s",
          "sqlite3.OperationalError: database is locked",
          "AssertionError: expected 200, got 503 in test_health",
          "ModuleNotFoundError: No module named 'orjson'"]
COMMANDS = ["pytest tests/test_cache.py -k ttl -x", "alembic upgrade head",
            "docker compose up -d redis", "ruff check src --fix", "python -m app.cli migrate --dry-run"]
VERSIONS = ["redis==5.0.1", "sqlalchemy==2.0.30", "httpx==0.27.0", "pydantic==2.7.4", "celery==5.4.0"]
CREATED = ["src/app/cache.py", "src/app/retry.py", "tests/test_retry.py", "migrations/0007_add_index.py",
           "src/app/ratelimit.py", "tests/test_cache_ttl.py"]
MODIFIED = [("src/app/http.py", "retry loop honours retry-after"),
            ("src/app/settings.py", "REDIS_URL gets a default"),
            ("handlers/auth.py", "session lookup tolerates a missing cookie"),
            ("src/app/db.py", "pool size raised to 20"),
            ("src/app/worker.py", "tasks acknowledge late"),
            ("tests/conftest.py", "fixture starts a throwaway redis")]
EXAMINED = ["setup.cfg", "docker-compose.yml", "src/app/main.py", ".github/workflows/ci.yml", "Makefile"]
DECISIONS = [("use connection pooling", "per-request connections exhausted the limit of 100"),
             ("cache tokens in redis with a 5 minute ttl", "the auth service allows 10 requests per second"),
             ("pin pydantic below 3", "the schema code uses v2 validators"),
             ("retry with capped exponential back-off", "a retry-after of 120 s stalled the workers")]
ALTERNATIVES = [("an in-process lru cache", "it is not shared between workers"),
                ("raising the server connection limit", "the hosting plan caps it"),
                ("a sidecar proxy", "it adds a deployment step")]
TODOS = ["tests/test_login.py::test_expired_token still fails", "document REDIS_URL in the README",
         "remove the debug print in handlers/auth.py", "add a migration test for 0007"]
WORDS = ("the request handler returns a response after checking the cache and the database "
         "connection while the worker logs each retry and the scheduler queues the next job "
         "with its payload and timeout settings for the service configuration").split()

# kind -> (values, item that carries the fact, sentence planting it)
SINGLE_FACTS = {
    "error": (ERRORS, "tool_result", "Traceback (most recent call last):\n  ...\n{}"),
    "command": (COMMANDS, "tool_result", "$ {}\nexit status 0"),
    "version": (VERSIONS, "agent_response", "We pin {} for now."),
    "created": (CREATED, "tool_result", "Created file {} (new module)."),
    "examined": (EXAMINED, "tool_result", "Read {} (no changes)."),
    "todo": (TODOS, "agent_response", "Still open: {}."),
}

# turn -> planted fact slots; A is asked at both compressions, B at the second
PLAN_A = {2: "error", 3: "command", 5: "version", 8: "created", 10: "modified", 12: "examined",
          15: "decision", 20: "todo"}
PLAN_B = {36: "error", 40: "modified", 42: "created", 45: "decision", 48: "todo"}


def _filler(rng: np.random.Generator, n_words: int) -> str:
    return " ".join(rng.choice(WORDS, size=n_words))


def _plant(kind: str, rng: np.random.Generator, used: dict[str, set]) -> tuple[str, str, list[str]]:
    """(item kind to carry it, sentence, facts)."""
    def pick(pool, key: str = kind):
        free = [i for i in range(len(pool)) if i not in used.setdefault(key, set())]
        i = int(rng.choice(free))
        used[key].add(i)
        return pool[i]

    if kind == "modified":
        path, change = pick(MODIFIED)
        return "tool_result", f"Edited {path}: {change}.", [f"modified:{path}|{change}"]
    if kind == "decision":
        d, why = pick(DECISIONS)
        a, a_why = pick(ALTERNATIVES, "alternative")
        return ("agent_response",
                f"Decision: {d}, because {why}. We considered {a} but rejected it: {a_why}.",
                [f"decision:{d}|{why}", f"alternative:{a}|{a_why}"])
    pool, carrier, template = SINGLE_FACTS[kind]
    value = pick(pool)
    return carrier, template.format(value), [f"{kind}:{value}"]


def generate_probe_session(seed: int, case_id: str) -> tuple[list[dict], ProbePlan, int]:
    """Items (SessionItem dicts), the probe plan and the token total at the last cut."""
    rng = np.random.default_rng(seed)
    used: dict[str, set] = {}
    planted: dict[int, tuple[str, str, list[str]]] = {}
    for plan in (PLAN_A, PLAN_B):
        for turn, kind in plan.items():
            planted[turn] = _plant(kind, rng, used)
    items = [{"ctx_id": f"{case_id}-sys", "turn": 0, "zone": "system", "kind": "system_prompt",
              "text": "You are a coding agent working in the app repository.", "pinned": True}]
    for turn in range(TURNS):
        texts = {"user_message": f"User: {_filler(rng, int(rng.integers(12, 30)))}",
                 "agent_response": f"Agent: {_filler(rng, int(rng.integers(20, 50)))}",
                 "tool_result": _filler(rng, int(rng.integers(80, 200)))}
        facts: dict[str, list[str]] = {}
        status = "ok"
        if turn in planted:
            where, sentence, fs = planted[turn]
            texts[where] = f"{texts[where]}\n{sentence}"
            facts[where] = fs
            status = "error" if fs[0].startswith("error:") else "ok"
        for kind, zone in (("user_message", "chronicle"), ("agent_response", "chronicle"),
                           ("tool_result", "workspace")):
            item = {"ctx_id": f"{case_id}-t{turn}-{kind}", "turn": turn, "zone": zone, "kind": kind,
                    "text": texts[kind], "facts": facts.get(kind, [])}
            if kind == "tool_result":
                item.update(tool_name="bash", group=f"{case_id}-call{turn}", status=status)
            items.append(item)
    total = sum(count_tokens(it["text"]) for it in items if it["turn"] <= CUTS[-1])
    return items, _plan(case_id, planted), total


def _facts_of(planted, turns, kinds) -> list[str]:
    return [f for t in sorted(turns) if t in planted for f in planted[t][2]
            if f.split(":", 1)[0] in kinds]


def _plan(case_id: str, planted) -> ProbePlan:
    a, ab = list(PLAN_A), list(PLAN_A) + list(PLAN_B)
    questions = {
        "recall": ("Which error messages did we hit, which commands did we run and which versions "
                   "did we pin? Quote them exactly.", ("error", "command", "version")),
        "artifact": ("Which files did we create, modify or examine? For modified files, say what "
                     "changed.", ("created", "modified", "examined")),
        "continuation": ("What is still open? List the pending tasks.", ("todo",)),
        "decision": ("What did we decide, why, and which alternatives did we reject?",
                     ("decision", "alternative")),
    }
    probes = []
    for cut, turns in ((0, a), (1, ab)):
        for ptype, (question, kinds) in questions.items():
            probes.append(ProbeSpec(probe_id=f"{case_id}-c{cut}-{ptype}", type=ptype, cut=cut,
                                    question=question, expected=_facts_of(planted, turns, kinds)))
    return ProbePlan(compressions=list(CUTS), probes=probes)


def build_probe_suite(n_sessions: int = 6, seed: int = 4) -> BenchmarkSuite:
    cases = []
    for i in range(n_sessions):
        case_id = f"probe-{i:03d}"
        items, plan, total = generate_probe_session(seed * 1000 + i, case_id)
        cases.append(BenchmarkCase(
            case_id=case_id,
            description=f"coding session, {TURNS} turns, compressions at turns {list(CUTS)}",
            input=BenchmarkInput(goal="fix the retry and cache issues in the app service",
                                 context=items, skill_args={"turns": TURNS},
                                 config_overrides={"profile": "coding",
                                                   "budget": {"total": max(2000, int(total * 0.35))}}),
            expected=BenchmarkExpected(mode="llm_judge",
                                       value={"references": [], "probe_plan": plan.model_dump()},
                                       metric_thresholds={"probe.overall": 2.5}),
            tags=["probes", "coding"],
        ))
    return BenchmarkSuite(suite_id="probes-default", name="probes", version=VERSION,
                          target="silas.context_manager.compression", cases=cases,
                          metadata={"source": "synthetic", "generator": "silas_exp.data.probe_sessions",
                                    "seed": str(seed), "description": "Compression probes: planted "
                                    "facts asked after two successive compressions."})


def write_probe_suite(out: Path) -> Path:
    suite = build_probe_suite()
    (out / "cases").mkdir(parents=True, exist_ok=True)
    head = suite.model_dump(mode="json")
    cases = head.pop("cases")
    head["cases"] = []
    (out / "suite.json").write_text(json.dumps(head, indent=1) + "\n")
    for case in cases:
        (out / "cases" / f"{case['case_id']}.json").write_text(json.dumps(case, indent=1) + "\n")
    return out
