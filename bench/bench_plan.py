"""A study's plan against what it spent, on the fake Messages API server.

    python bench/bench_plan.py [--studies 20] [--only calibration|speed|departure] [--quick]

1. **Calibration** (``--studies N``): N small studies, each a real sweep
   (``python -m tests.fakes.departing -m …``: the real SDK, tracking on) against
   the local Messages API server, whose answers are the departing model's
   (``tests/fakes/departing.py``: the simulated model's, departed from in a
   share of 0.1–0.3 of its decisions), never the simulator's own. Seeds,
   variant sets, margins, models (prices from the price table), the server's
   latency and its limit on requests at once vary from study to study. Each
   study carries its plan (made before its first call from the simulated
   twin alone; the server's latency and limit are given to it as the account's
   pace, ``plan.answer_s`` and ``plan.max_in_flight``) and records plan
   against actual; the bench collects the two. Targets: case runs and dollars
   within ±20 % of the plan's median in ≥ 16 of 20, inside its 80 % range in
   ≥ 15 of 20; wall minutes within ±30 % in ≥ 16 of 20.
2. **Speed** (``--only speed``): the plan of the README study
   (``-m scorer=weights,prompt,online model=claude-haiku-4-5``, cold caches)
   against the simulated README sweep's own time, paired in one run, with a
   backend that fails on any call (the plan makes none). Target: ≤ 2×.
3. **Departure** (``--only departure``): the constants of the plan's worlds
   (silas_exp/plan/worlds.py, departure.py): the departing model in process at
   shares 0.2, 0.5 and 1.0 against the simulated one on the same cases.

``--quick`` (CI smoke): one tiny study (8 cases in blocks of 4, one variant, 6 worlds).
Writes bench/results/plan.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakes.messages_server import API_KEY  # noqa: E402

# the API's shortest cacheable prompt per model: the fake bills prompt caching as the API does
FLOORS = {"claude-haiku-4-5": 4096, "claude-sonnet-4-5": 1024}
VARIANTS = ["scorer=weights,online", "scorer=weights,prompt", "scorer=prompt,online",
            "scorer=weights,prompt,online", "scorer=heuristic,online"]
MARGINS = ["", "++analysis.margins={context.retrieval_relevance:0.03,summary.pass:0.08}",
           "++analysis.margins={context.retrieval_relevance:0.015,ir.ndcg_at_10:0.02}"]
SHARES = [0.1, 0.2, 0.3]
LATENCY = [0.01, 0.02, 0.04]
LIMITS = [None, 8, 12]
MODELS = ["claude-haiku-4-5", "claude-haiku-4-5", "claude-sonnet-4-5"]


def studies(n: int) -> list[dict]:
    """N studies, each setting drawn in its own rotation (so that they cross)."""
    return [{"variants": VARIANTS[i % len(VARIANTS)], "seed": i, "margins": MARGINS[i % 3],
             "share": SHARES[(i // 2) % 3], "latency": LATENCY[(i // 3) % 3],
             "limit": LIMITS[(i + 1) % 3], "model": MODELS[(i // 5) % 3]} for i in range(n)]


def _serve(share: float, latency: float, limit: int | None, urls, stop) -> None:
    from tests.fakes.departing import departing_responder
    from tests.fakes.messages_server import FakeMessagesServer

    with FakeMessagesServer(latency_s=latency, responder=departing_responder(share),
                            max_concurrent=limit, min_cache_tokens=FLOORS) as srv:
        urls.put(srv.base_url)
        stop.wait()
        urls.put(srv.message_requests)


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_per_call(calls: int = 300) -> float:
    """The fake server's CPU per answer (it shares this machine's cores with the
    study): measured once, given to the plans as part of the client's CPU per call."""
    os.environ["ANTHROPIC_API_KEY"] = API_KEY
    from silas_exp.llm import LLMRequest, LLMSettings, Message, build_client
    from silas_exp.scorers.prompt import SCORES_SCHEMA

    ctx = multiprocessing.get_context("spawn")
    urls, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(0.2, 0.0, None, urls, stop), daemon=True)
    proc.start()
    url = urls.get(timeout=120)
    lines = "\n".join(f"c{i} | chronicle | user_message | age={i} | tokens=10 | ok | - | item {i}"
                      for i in range(30))
    reqs = [LLMRequest(task="scorer", model="claude-haiku-4-5", system="Score.",
                       messages=(Message("user", f"{lines}\n#{k}"),), output_schema=SCORES_SCHEMA)
            for k in range(calls)]
    with tempfile.TemporaryDirectory() as tmp:
        settings = LLMSettings(backend="anthropic", base_url=url, cache_mode="off")
        with build_client(settings, seed=0, cache_dir=tmp) as client:
            before = _cpu_of(proc.pid)
            client.complete_many(reqs, namespace="pace")
            used = _cpu_of(proc.pid) - before
    stop.set()
    urls.get(timeout=60)
    proc.join(timeout=10)
    return used / calls * 1000.0


def run_study(i: int, study: dict, pool: int, block: int, root: Path, extra_cpu_ms: float,
              extra: tuple[str, ...] = ()) -> dict:
    """One study against its own server: its plan (plan.json) and its actual spend."""
    from silas_exp.analysis.planned import PLAN_TABLE, Plan
    from silas_exp.records import read_sweep_end

    os.environ["ANTHROPIC_API_KEY"] = API_KEY
    ctx = multiprocessing.get_context("spawn")
    urls, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(study["share"], study["latency"], study["limit"],
                                              urls, stop), daemon=True)
    server.start()
    url = urls.get(timeout=120)
    here = root / f"study-{i:02d}"
    args = ["-m", study["variants"], f"seed={study['seed']}", f"model={study['model']}",
            "model.backend=departing_http", f"llm.base_url={url}", f"suite.max_cases={pool}",
            f"cases_per_block={block}", f"plan.answer_s={study['latency']}",
            f"plan.cpu_ms_per_call={9.0 + extra_cpu_ms:.1f}",
            *([f"plan.max_in_flight={study['limit']}"] if study["limit"] else []),
            *([study["margins"]] if study["margins"] else []),
            f"paths.suites={REPO / 'suites'}", f"paths.cache={root / 'cache'}",
            f"llm.cache_dir={here / 'llm'}", f"hydra.sweep.dir={here / 'multirun'}", *extra]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "SILAS_EXP_ROOT": str(here),
           "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tests.fakes.departing", *args], cwd=REPO,
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    stop.set()
    requests = urls.get(timeout=60)
    server.join(timeout=10)
    if proc.returncode != 0:
        raise SystemExit(f"study {i} failed ({proc.returncode}): {shlex.join(args)}\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    sweep = here / "multirun"
    logs = Path(os.environ.get("SILAS_BENCH_RESULTS") or REPO / "bench" / "results") / "plan-logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"study-{i:02d}.txt").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    plan = Plan.read(sweep)
    table = read_sweep_end(sweep).tables[PLAN_TABLE]
    actual = dict(zip(table["figure"], table["actual"], strict=True))
    figures = {}
    for figure, key in (("case runs (every arm)", "case_runs"), ("dollars", "usd"),
                        ("calls", "calls"), ("wall minutes", "minutes")):
        spread = getattr(plan, key)
        value = actual[figure]
        figures[key] = {"median": spread.median, "low": spread.low, "high": spread.high,
                        "actual": value, "off": value / spread.median - 1 if spread.median else 0,
                        "inside": spread.holds(value)}
    return {"study": i, **study, "args": args[1:5], "server_requests": requests,
            "load_after": round(os.getloadavg()[0], 1),
            "sweep_wall_s": round(wall, 1), "plan_s": plan.seconds, "figures": figures,
            "variants_plan": {v.variant: v.chances for v in plan.variants}}


def calibration(n: int, pool: int, block: int) -> dict:
    extra = server_cpu_per_call()
    print(f"fake server: {extra:.1f} ms of CPU per answer (given to the plans)", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        for i, study in enumerate(studies(n)):
            row = run_study(i, study, pool, block, Path(tmp), extra)
            rows.append(row)
            f = row["figures"]
            print(f"study {i:2d} {study['variants']:30s} {study['model']:18s} q={study['share']} "
                  f"lat={study['latency']} lim={study['limit']}: "
                  + "; ".join(f"{k} {v['median']:.4g} [{v['low']:.4g}–{v['high']:.4g}] → "
                              f"{v['actual']:.4g} ({v['off']:+.0%}{'' if v['inside'] else ' OUT'})"
                              for k, v in f.items()), flush=True)
    count = lambda key, test: sum(test(r["figures"][key]) for r in rows)  # noqa: E731
    within = lambda tol: lambda v: abs(v["off"]) <= tol  # noqa: E731
    return {"studies": n, "pool": pool, "block": block, "server_cpu_ms_per_call": extra,
            "within_20pct": {k: count(k, within(0.2)) for k in ("case_runs", "usd", "calls")},
            "both_within_20pct": sum(within(0.2)(r["figures"]["case_runs"])
                                     and within(0.2)(r["figures"]["usd"]) for r in rows),
            "inside_range": {k: count(k, lambda v: v["inside"]) for k in
                             ("case_runs", "usd", "calls", "minutes")},
            "both_inside_range": sum(r["figures"]["case_runs"]["inside"]
                                     and r["figures"]["usd"]["inside"] for r in rows),
            "minutes_within_30pct": count("minutes", within(0.3)), "rows": rows}


README = "-m scorer=weights,prompt,online"


def speed(pairs: int = 1) -> dict:
    """The README plan (cold caches, a backend that fails on any call) against
    the simulated README sweep, in alternating order, in one run."""
    sys.path.insert(0, str(REPO / "bench"))
    from _sweeps import run_sweep

    out = []
    for k in range(pairs):
        order = ["sweep", "plan"] if k % 2 == 0 else ["plan", "sweep"]
        pair = {}
        for what in order:
            if what == "sweep":
                pair["sweep_s"] = round(run_sweep(shlex.split(README)).wall_s, 1)
            else:
                pair.update(_plan_failing(shlex.split(README) + ["model=claude-haiku-4-5"]))
        pair["ratio"] = round(pair["plan_s"] / pair["sweep_s"], 2)
        out.append(pair)
        print(f"pair {k}: {pair}", flush=True)
    return {"pairs": out, "max_ratio": max(p["ratio"] for p in out)}


def _plan_failing(args: list[str]) -> dict:
    """``silas-exp plan`` in a fresh process and a fresh root, its model's
    backend one that fails on any call (bench/_failing_backend.py)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "SILAS_EXP_ROOT": tmp,
               "PYTHONPATH": str(REPO)}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(REPO / "bench" / "_failing_backend.py"),
                               "plan", *args, "model.backend=fails",
                               f"paths.suites={REPO / 'suites'}"], cwd=REPO, env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"plan failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        calls = int(proc.stdout.rsplit("backend calls: ", 1)[1].split()[0])
        assert calls == 0, f"the plan made {calls} call(s) to its model's backend"
        return {"plan_s": round(wall, 1), "backend_calls": calls,
                "plan": [ln for ln in proc.stdout.splitlines() if ln.startswith("Plan of")
                         or ln.startswith("  ")]}


def departure(cases: int = 60, seed: int = 0) -> dict:
    """The departing model in process against the simulated one on the same
    cases: per arm and gated metric, the paired differences' correlation with
    the simulated ones and the shift of their mean (in their per-case sd), and
    the control's own distance D (silas_exp/plan/departure.py)."""
    import numpy as np

    from silas_exp.analysis.data import job_data
    from silas_exp.config import compose_config
    from silas_exp.plan.departure import distance
    from silas_exp.run.job import make_job, run_job
    from tests.fakes.departing import register

    metrics = ["context.retrieval_relevance", "ir.ndcg_at_10", "context.tokens_per_served_need",
               "summary.pass"]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for share in (0.0, 0.2, 0.5, 1.0):
            backend = "simulated" if share == 0 else register(share)
            for scorer in ("heuristic", "weights", "prompt", "online"):
                cfg = compose_config([f"scorer={scorer}", "model=claude-haiku-4-5",
                                      f"model.backend={backend}", f"seed={seed}",
                                      "cases_per_block=null", f"suite.max_cases={cases}",
                                      "tracking=none", f"paths.root={tmp}/r{share}"])
                o = run_job(cfg, make_job(cfg, scorer), Path(tmp) / f"{share}-{scorer}")
                runs[(share, scorer)] = job_data(scorer, 0, o.metrics, o.results()).cases
    out: dict = {}
    for share in (0.2, 0.5, 1.0):
        row = {}
        for scorer in ("weights", "prompt", "online"):
            for m in metrics:
                sim = [runs[(0.0, scorer)][c].get(m, np.nan) - runs[(0.0, "heuristic")][c].get(
                    m, np.nan) for c in sorted(runs[(0.0, scorer)])]
                dep = [runs[(share, scorer)][c].get(m, np.nan) - runs[(share, "heuristic")][
                    c].get(m, np.nan) for c in sorted(runs[(0.0, scorer)])]
                a, b = np.array(sim), np.array(dep)
                ok = ~np.isnan(a) & ~np.isnan(b)
                sd = float(np.std(a[ok], ddof=1))
                row[f"{scorer} {m}"] = {
                    "correlation": round(float(np.corrcoef(a[ok], b[ok])[0, 1]), 3),
                    "shift_sd": round(float(np.mean(b[ok]) - np.mean(a[ok])) / sd, 3)}
        control = [distance([(runs[(share, "heuristic")][c].get(m, np.nan),
                              runs[(0.0, "heuristic")][c].get(m, np.nan))
                             for c in runs[(0.0, "heuristic")]]) for m in metrics]
        found = [d for d in control if d is not None]
        row["control_distance"] = round(float(np.sqrt(np.mean(np.square(found)))), 3)
        out[str(share)] = row
        print(f"share {share}: control distance {row['control_distance']}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--studies", type=int, default=20)
    ap.add_argument("--pool", type=int, default=24, help="cases of each study's pool")
    ap.add_argument("--block", type=int, default=8, help="cases per block")
    ap.add_argument("--only", choices=["calibration", "speed", "departure"])
    ap.add_argument("--pairs", type=int, default=1, help="speed: plan/sweep pairs")
    ap.add_argument("--quick", action="store_true")
    ns = ap.parse_args()
    if ns.quick:
        result = {"quick": True, **calibration_quick()}
        print(f"written: {save('plan', result)}")
        return
    result: dict = {}
    if ns.only in (None, "calibration"):
        result["calibration"] = calibration(ns.studies, ns.pool, ns.block)
    if ns.only in (None, "speed"):
        result["speed"] = speed(ns.pairs)
    if ns.only == "departure":
        result["departure"] = departure()
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "rows"}
                      if isinstance(v, dict) else v for k, v in result.items()}, indent=1))
    print(f"written: {save('plan', result)}")


def calibration_quick() -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        study = {"variants": "scorer=heuristic,weights", "seed": 0, "margins": "", "share": 0.2,
                 "latency": 0.005, "limit": None, "model": "claude-haiku-4-5"}
        row = run_study(0, study, 8, 4, Path(tmp), 0.0, ("plan.worlds=6",))
    return {"studies": 1, "rows": [row], "inside_range": {
        k: int(v["inside"]) for k, v in row["figures"].items()}}


if __name__ == "__main__":
    main()
