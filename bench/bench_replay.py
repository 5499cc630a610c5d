"""Replay throughput: turns per CPU-second (one process = one core) on sessions
with <= 500 live items.

    python bench/bench_replay.py [--workload both] [--scorer heuristic] [--sessions 8]
                                 [--turns 200] [--repeats 3] [--store :memory:] [--gc job]
                                 [--engine auto] [--breakdown] [--instructions] [--quick]

Target: >= 20,000 turns per CPU-second for two-tier eviction. Two workloads,
each replaying the same sessions through the context manager:

- ``eviction``: two-tier eviction as the design names it -- Tier 1's
  heuristics, then Tier 2 with the control scorer (ranking, coherence
  groups, proposal, eviction, breaker) -- with ``keepbacks=false``: no
  feedback loop. This is the headline (``turns_per_s``).
- ``feedback-loop``: the same plus the feedback loop of section 19: the
  simulated main model's keep-backs on every proposal and their rows in the
  feedback store (in memory unless ``--store`` names a file). What a job of
  the default sweep replays.

Each session is replayed as a job replays it: through the compiled loop
(``silas_exp/eviction/two_tier/compiled.py``) when it can stand in, which it can for
the control and fitted weights with the simulated main model; every pass
encodes its sessions anew, as most of a sweep's replays do (a worker
replays a case ~1.3 times per encoding in the README sweep). ``--engine
python`` replays in Python only (``SILAS_EXP_REPLAY=python``).

``--scorer`` picks Tier 2's scorer (the control, ``heuristic``, by default).
``--scorer prompt`` is what the README sweep's prompt jobs replay: every
Tier-2 call renders the scorer prompt (``conf/prompt/default.yaml``, no
guidance lines: there is no calibration here) and the simulated small model
reads it back; in a README sweep that is the costliest variant's turn.

Suite loading and session generation are left out. Sessions are generated at
3x over budget (budget = the Tier-1-only peak / 3, as the shipped suites size
theirs). The two workloads evict differently (keep-backs hold items in the
window), so their windows differ too.

CPU time (``time.process_time``) is the headline because the machine may be
shared: ``turns_per_s`` is turns per CPU-second, ``turns_per_wall_s`` the same
over wall time. Each figure is the best of ``--repeats`` passes over the
sessions, under a job's garbage-collector thresholds
(``silas_exp.run.gc_policy``; ``--gc default`` for CPython's).

``--breakdown`` adds one pass per workload, in Python, with CPU timers around Tier 1,
Tier 2, the scorer, the keep-backs, the store's writes and the garbage
collector, and reports each in microseconds per turn (the timers cost ~1 us a
call; the headline passes run without them).

``--against REV`` measures this tree paired with another commit of the
repository (a tag, branch or commit id; ``git archive`` of it into a temporary
folder) in the same run: ``--pairs`` rounds, each running the workload once
per tree in a fresh process (this script with ``PYTHONPATH`` on that tree),
in alternating order, so the machine's drift falls on both alike. Reports
each pair's turns per CPU-second and their ratio, and with
``--instructions`` both trees' instructions per turn. Writes
bench/results/replay_against.json. For a change's before and after, or a
target stated against a commit (the feedback loop's 3x against 1fe688b):

    python bench/bench_replay.py --workload feedback-loop --against 1fe688b --instructions

``--instructions`` adds the figure that does not move with the machine's
load: CPU instructions per turn, counted by valgrind's callgrind (Debian
package ``valgrind``). It runs the same workload twice under callgrind, once
with one pass over the sessions and once with two, and reports the
difference per turn: one warm pass, set-up and imports left out (the
compiled loop's machine code built for a generic x86-64 CPU, compiled and
cached by a run outside callgrind first). Counts
repeat to within a few instructions per turn from run to run where CPU
seconds wander by tens of percent on a shared 2-core machine, so compare
code changes with it. It costs about a minute per 1,000 turns and workload.

Writes bench/results/replay.json: the headline workload's figures at the top
level, each workload's under ``workloads``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _procs import extract_commit  # bench/ helper
from _results import save  # bench/ helper

from silas_exp.config import compose_config
from silas_exp.context.budget import PROFILES, TokenBudget
from silas_exp.context.replay import NeedOracle, replay
from silas_exp.context.stats import ReplayStats
from silas_exp.data.suites.build import peak_usage
from silas_exp.data.suites.generator import generate_session, spec_for
from silas_exp.eviction.two_tier import TwoTierEviction, TwoTierSettings
from silas_exp.feedback.flush import KeepBackBroker

try:
    from silas_exp.feedback.flush import MainModel
except ImportError:  # a tree from before MainModel (--against): its settings held the same defaults
    from silas_exp.feedback.flush import MainModelSettings as MainModel
from silas_exp.feedback.store import FeedbackStore
from silas_exp.llm import LLMSettings, build_client
from silas_exp.run import gc_policy

try:
    from silas_exp.eviction.two_tier import compiled
except ImportError:  # a tree from before the two_tier package (--against)
    try:
        from silas_exp.eviction import compiled
    except ImportError:  # a tree from before the compiled loop
        compiled = None
from silas_exp.scorers import ScorerContext, build_scorer, validate_scorer_settings


def replay_compiled(strategy, session, truth, budget, stats) -> bool:
    """Whether the strategy replayed the session through the compiled loop (a
    tree's own way to ask: the strategy's, or an older tree's compiled module)."""
    if hasattr(strategy, "replay_compiled"):
        return strategy.replay_compiled(session, truth, budget, stats)
    return compiled is not None and compiled.replay_two_tier(session, truth, strategy, budget, stats) is not None

REPO = Path(__file__).resolve().parents[1]
HORIZON = 20  # the oracle scorer's look-ahead (metrics.horizon)
TARGET = 20_000  # turns per CPU-second, for the headline workload
# workload -> whether the main model's keep-backs (and so the feedback store) run
WORKLOADS = {"eviction": False, "feedback-loop": True}
HEADLINE = "eviction"


class Timers:
    """CPU seconds per part of a replay, a part's time net of the parts timed
    inside it; the garbage collector's runs are a part of their own."""

    PARTS = ("tier 1", "tier 2 (own work)", "tier 2: scorer", "tier 2: keep-backs",
             "store writes", "garbage collection")

    def __init__(self) -> None:
        self.cpu: dict[str, float] = dict.fromkeys(self.PARTS, 0.0)
        self._stack: list[str] = []
        self._gc_start = 0.0

    def _spent(self, name: str, seconds: float) -> None:
        self.cpu[name] += seconds
        if self._stack:  # the enclosing part's own time leaves this one out
            self.cpu[self._stack[-1]] -= seconds

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            self._stack.append(name)
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.process_time() - start
                self._stack.pop()
                self._spent(name, spent)
        return timed

    def on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_start = time.process_time()
        else:
            self._spent("garbage collection", time.process_time() - self._gc_start)


@functools.cache
def default_prompt():
    """The scorer prompt template a job composes by default (``prompt=default``),
    composed once per process: outside every pass, timed or counted."""
    return compose_config().prompt


def one_pass(sessions, settings, store_path: str, keepbacks: bool,
             timers: Timers | None = None) -> tuple[int, float, float, dict[str, float]]:
    """Replay every session once; (turns, CPU seconds, wall seconds, the model
    calls made per task). Without ``keepbacks`` no proposal reaches the main
    model and the store stays empty."""
    llm = build_client(LLMSettings(cache_mode="off"), seed=1, cache_dir=None)
    prompt = default_prompt() if settings.name == "prompt" else None
    store = FeedbackStore(store_path)
    if timers:
        store.flush = timers.wrap("store writes", store.flush)
    turns = 0
    if compiled is not None:  # every pass encodes its sessions anew, as a job's first replay of a case
        compiled.forget_encodings()
    c0, t0 = time.process_time(), time.perf_counter()
    for s, truth, budget in sessions:
        oracle = NeedOracle(truth)
        stats = ReplayStats()
        scorer = build_scorer(settings, ScorerContext(
            seed=1, namespace=s.session_id, scorer_model="claude-haiku-4-5", llm=llm,
            prompt=prompt, oracle=lambda cid, t, oracle=oracle: oracle.need_score(cid, t, HORIZON)))
        broker = KeepBackBroker(MainModel("claude-sonnet-4-5", "simulated"), llm, store,
                                s.session_id, 1, oracle.max_grade_within)
        strategy = TwoTierEviction(TwoTierSettings(keepbacks=keepbacks), budget, PROFILES[s.profile], scorer, broker,
                                   stats, s.scope_id)
        if timers:
            strategy.tier1 = timers.wrap("tier 1", strategy.tier1)
            strategy.tier2 = timers.wrap("tier 2 (own work)", strategy.tier2)
            scorer.score = timers.wrap("tier 2: scorer", scorer.score)
            broker.resolve = timers.wrap("tier 2: keep-backs", broker.resolve)
        # as a job replays: through the compiled loop when it can stand in (the
        # timed parts are the Python loop's: --breakdown replays in Python)
        if timers or not replay_compiled(strategy, s, truth, budget, stats):
            replay(s, truth, strategy.step, budget, stats)
        turns += s.turns
    store.close()
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    calls = {k.removeprefix("llm.calls."): v for k, v in llm.accounting.as_metrics().items()
             if k.startswith("llm.calls.")}
    llm.close()
    return turns, cpu, wall, calls


def run_passes(sessions, settings, store: str, count: int, keepbacks: bool,
               timers: Timers | None = None) -> list[tuple[int, float, float, dict[str, float]]]:
    """``count`` passes, each with a fresh feedback store: in memory, or
    (``store`` not ``:memory:``) a new SQLite file in a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        return [one_pass(sessions, settings,
                         ":memory:" if store == ":memory:" else str(Path(tmp) / f"feedback{r}.sqlite"),
                         keepbacks, timers)
                for r in range(count)]


def make_sessions(count: int, turns: int) -> list:
    sessions = []
    for i in range(count):
        flavour = ("coding", "debugging", "research", "support")[i % 4]
        s, truth = generate_session(100 + i, spec_for(flavour, turns), f"b{i}")
        total = max(int(peak_usage(s, truth) / 3.0), 2_000)
        sessions.append((s, truth, TokenBudget(total=total)))
    return sessions


def workload_args(ns: argparse.Namespace, workload: str) -> list[str]:
    """This script's arguments for a run of its own on ``workload`` with ``ns``'s
    sessions, scorer, store and collector (callgrind's runs, --against's runs)."""
    return ["--workload", workload, "--scorer", ns.scorer, "--sessions", str(ns.sessions),
            "--turns", str(ns.turns), "--store", ns.store, "--gc", ns.gc, "--engine", ns.engine]


def count_instructions(ns: argparse.Namespace, workload: str, turns: int,
                       tree: Path | None = None) -> float:
    """Instructions per turn of one warm pass: callgrind's count of a run with
    two passes minus that of a run with one, over the pass's turns (of the
    code in ``tree``, when given, through ``PYTHONPATH``)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("--instructions needs valgrind on PATH (Debian: apt-get install valgrind)")
    # the compiled loop's machine code for a generic x86-64 CPU (numba caches it per
    # CPU, and callgrind's virtual CPU is not the host's): compiled and cached by a
    # first run outside callgrind, so neither counted run compiles (a compile in
    # only one would not cancel out of the difference, and one under callgrind
    # takes minutes); one hash seed: dict and set layouts, and so the
    # instructions, repeat exactly
    env = {**os.environ, "PYTHONHASHSEED": "0", "NUMBA_CPU_NAME": "generic"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    subprocess.run([sys.executable, __file__, *workload_args(ns, workload), "--passes-only", "1"],
                   capture_output=True, env=env, check=True)
    counts = []
    for passes in (1, 2):
        cmd = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
               __file__, *workload_args(ns, workload), "--passes-only", str(passes)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if proc.returncode != 0 or found is None:
            sys.exit(f"callgrind run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
        counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) / turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--workload", default="both", choices=(*WORKLOADS, "both"),
                        help="two-tier eviction alone, with the feedback loop, or both (default)")
    parser.add_argument("--scorer", default="heuristic",
                        choices=("heuristic", "online", "oracle", "random", "prompt"),
                        help="a scorer that needs no calibration; prompt: the simulated small "
                             "model with conf/prompt/default.yaml and no guidance lines")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="passes; the best one is reported")
    parser.add_argument("--store", default=":memory:",
                        help="feedback store: :memory: or 'file' (a fresh SQLite file per pass)")
    parser.add_argument("--gc", choices=("job", "default"), default="job",
                        help="garbage-collector thresholds: a job's (silas_exp.run.gc_policy) "
                             "or CPython's default")
    parser.add_argument("--engine", choices=("auto", "python"), default="auto",
                        help="auto: as a job replays, through the compiled loop where it can "
                             "stand in (silas_exp.eviction.two_tier.compiled); python: the Python loop only "
                             "(sets SILAS_EXP_REPLAY=python)")
    parser.add_argument("--breakdown", action="store_true",
                        help="one more pass with timers: CPU per part of the Python loop's turn")
    parser.add_argument("--instructions", action="store_true",
                        help="also count CPU instructions per turn under valgrind's callgrind")
    parser.add_argument("--against", metavar="REV", default=None,
                        help="also measure commit REV of this repository, paired in the same run")
    parser.add_argument("--pairs", type=int, default=3, help="with --against: rounds of one run per tree")
    parser.add_argument("--passes-only", type=int, default=0, help=argparse.SUPPRESS)  # callgrind's runs
    parser.add_argument("--emit-result", action="store_true", help=argparse.SUPPRESS)  # --against's runs
    parser.add_argument("--quick", action="store_true", help="2 sessions of 40 turns, one pass (CI smoke)")
    ns = parser.parse_args()
    if ns.quick:
        ns.sessions, ns.turns, ns.repeats = 2, 40, 1
    workloads = list(WORKLOADS) if ns.workload == "both" else [ns.workload]
    if ns.engine == "python":  # for this process and every run it starts
        os.environ["SILAS_EXP_REPLAY"] = "python"
    if ns.against:
        paired(ns, workloads)
        return
    if ns.gc == "job":
        gc_policy.tune_for_jobs()
    sessions = make_sessions(ns.sessions, ns.turns)
    settings = validate_scorer_settings({"name": ns.scorer})
    if ns.passes_only:
        for workload in workloads:
            run_passes(sessions, settings, ns.store, ns.passes_only, WORKLOADS[workload])
        return
    items = [len(s.items) for s, _, _ in sessions]
    print(f"{ns.sessions} sessions of {ns.turns} turns ({min(items)}-{max(items)} items), "
          f"scorer {ns.scorer}; target for two-tier eviction >= {TARGET:,} turns per CPU-second")
    result: dict = {"scorer": ns.scorer, "engine": ns.engine, "gc": ns.gc, "gc_thresholds": gc.get_threshold(),
                    "sessions": ns.sessions, "store": ns.store, "items_per_session": items,
                    "target_turns_per_s": TARGET, "workloads": {}}
    for workload in workloads:
        result["workloads"][workload] = measure(ns, workload, sessions, settings)
    if ns.emit_result:  # a run of --against: the figures to the parent, nothing saved
        import silas_exp

        print("BENCH-RESULT " + json.dumps({"code": silas_exp.__file__, **result}))
        return
    headline = HEADLINE if HEADLINE in workloads else workloads[0]
    result.update(headline=headline, **{k: v for k, v in result["workloads"][headline].items()
                                        if k not in ("us_per_turn_by_part",)})
    save("replay", result)


def measure(ns: argparse.Namespace, workload: str, sessions, settings) -> dict:
    """One workload's figures, printed as they come."""
    keepbacks = WORKLOADS[workload]
    passes = run_passes(sessions, settings, ns.store, max(ns.repeats, 1), keepbacks)
    turns = passes[0][0]
    cpu = min(p[1] for p in passes)
    wall = min(p[2] for p in passes)
    rate, wall_rate = turns / cpu, turns / wall
    result = {"turns": turns, "repeats": len(passes), "seconds": cpu, "wall_seconds": wall,
              "turns_per_s": rate, "turns_per_wall_s": wall_rate,
              "cpu_seconds_per_pass": [p[1] for p in passes],
              "wall_seconds_per_pass": [p[2] for p in passes],
              "llm_calls_per_pass": passes[0][3]}  # by task: scorer (prompt), keepback
    print(f"{workload:14s} {turns} turns, best of {len(passes)}: {cpu:.3f} CPU-s = "
          f"{rate:,.0f} turns per CPU-second; wall {wall:.3f} s = {wall_rate:,.0f} turns/s")
    if ns.breakdown:
        timers = Timers()
        gc.callbacks.append(timers.on_gc)
        [(_, timed_cpu, _, _)] = run_passes(sessions, settings, ns.store, 1, keepbacks, timers)
        gc.callbacks.remove(timers.on_gc)
        parts = {name: 1e6 * cpu / turns for name, cpu in timers.cpu.items()}
        parts["rest (new items, needs, bookkeeping)"] = 1e6 * (timed_cpu - sum(timers.cpu.values())) / turns
        result["us_per_turn_by_part"] = parts
        print(f"  CPU per turn by part (one timed pass, {1e6 * timed_cpu / turns:.1f} us a turn; "
              f"{TARGET:,} turns/s allows {1e6 / TARGET:.0f} us):")
        for name, us in parts.items():
            print(f"    {name:40s} {us:7.1f} us")
    if ns.instructions:
        result["instructions_per_turn"] = count_instructions(ns, workload, turns)
        print(f"  CPU instructions per turn (callgrind, one warm pass): "
              f"{result['instructions_per_turn']:,.0f}")
    return result


def run_tree(ns: argparse.Namespace, workload: str, tree: Path) -> dict:
    """One run of ``workload`` on the code in ``tree``, in a process of its own."""
    cmd = [sys.executable, __file__, "--emit-result", *workload_args(ns, workload),
           "--repeats", str(ns.repeats)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH-RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"the run on {tree} failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    result = json.loads(lines[-1].removeprefix("BENCH-RESULT "))
    code = Path(result["code"]).resolve()
    if not code.is_relative_to(tree.resolve()):  # an installed copy shadowing PYTHONPATH
        sys.exit(f"the run meant for {tree} imported silas_exp from {code}")
    return result["workloads"][workload]


def paired(ns: argparse.Namespace, workloads: list[str]) -> None:
    """This tree against commit ``ns.against``: ``ns.pairs`` rounds of one run each,
    alternating which goes first; per pair the ratio of turns per CPU-second."""
    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp) / "reference"
        commit = extract_commit(ns.against, ref)
        print(f"this tree ({REPO}) against {ns.against} ({commit[:12]}): {ns.sessions} sessions of "
              f"{ns.turns} turns, scorer {ns.scorer}, {ns.pairs} pairs, best of {ns.repeats} passes each")
        result: dict = {"against": ns.against, "commit": commit, "scorer": ns.scorer,
                        "sessions": ns.sessions, "turns": ns.turns, "repeats": ns.repeats,
                        "pairs": ns.pairs, "workloads": {}}
        for workload in workloads:
            pairs = []
            for i in range(ns.pairs):
                order = [("reference", ref), ("this", REPO)]
                if i % 2:
                    order.reverse()
                rates = {name: run_tree(ns, workload, tree)["turns_per_s"] for name, tree in order}
                pairs.append({**rates, "ratio": rates["this"] / rates["reference"]})
                print(f"{workload:14s} pair {i + 1}: {ns.against} {rates['reference']:,.0f}, this tree "
                      f"{rates['this']:,.0f} turns per CPU-second ({pairs[-1]['ratio']:.2f}x)")
            ratios = [p["ratio"] for p in pairs]
            figures = {"pairs": pairs, "ratio_median": statistics.median(ratios),
                       "ratio_min": min(ratios), "ratio_max": max(ratios)}
            line = (f"{workload:14s} turns per CPU-second, this tree over {ns.against}: median "
                    f"{figures['ratio_median']:.2f}x ({figures['ratio_min']:.2f}-{figures['ratio_max']:.2f}x)")
            if ns.instructions:
                turns = ns.sessions * ns.turns
                figures["instructions_per_turn"] = {
                    "reference": count_instructions(ns, workload, turns, ref),
                    "this": count_instructions(ns, workload, turns, REPO)}
                counts = figures["instructions_per_turn"]
                figures["instructions_ratio"] = counts["reference"] / counts["this"]
                line += (f"; instructions per turn {counts['reference']:,.0f} -> {counts['this']:,.0f} "
                         f"({figures['instructions_ratio']:.2f}x fewer)")
            print(line)
            result["workloads"][workload] = figures
    save("replay_against", result)


if __name__ == "__main__":
    main()
