"""LLM layer against the local Messages API server (real SDK, real HTTP).

    python bench/bench_llm.py [--requests 640] [--latency 0.2] [--connections 32]
                              [--sweep "suite=default scorer=prompt repeats=1"] [--quick]

1. Throughput: ``complete_many`` of N structured-output requests with
   ``llm.max_connections=32`` against a server answering in 200 ms.
   Target: >= 90 % of 32 / 0.2 s = 144 requests/s.
2. Cache: the same sweep run twice (tracking off). Target: the rerun makes
   0 API calls and is >= 10x faster (wall time of the command, and time spent
   in jobs as Hydra's job logs report it).

``--quick`` (CI smoke): 64 requests at 20 ms over 8 connections, and the
smoke suite's first case as the sweep. Writes bench/results/llm.json.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from silas_exp.llm import LLMRequest, LLMSettings, Message, build_client  # noqa: E402
from silas_exp.scorers.prompt import SCORES_SCHEMA  # noqa: E402
from tests.fakes.messages_server import API_KEY, FakeMessagesServer  # noqa: E402


def _serve(latency: float, jitter: float, urls: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    with FakeMessagesServer(latency_s=latency, jitter_s=jitter) as srv:
        urls.put(srv.base_url)
        stop.wait()
        urls.put(srv.max_in_flight)


def throughput(n: int, latency: float, connections: int, jitter: float = 0.0) -> dict:
    """The server runs in its own process, as the real API does not share our CPU."""
    os.environ["ANTHROPIC_API_KEY"] = API_KEY
    ctx = multiprocessing.get_context("spawn")
    urls, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(latency, jitter, urls, stop), daemon=True)
    proc.start()
    base_url = urls.get(timeout=60)
    with tempfile.TemporaryDirectory() as tmp:
        settings = LLMSettings(backend="anthropic", base_url=base_url,
                               max_connections=connections, cache_mode="off")
        requests = [LLMRequest(task="scorer", model="claude-haiku-4-5",
                               messages=(Message("user", f"c{i} | chronicle | user_message | age=1 | "
                                                         "tokens=9 | ok | - | x"),),
                               output_schema=SCORES_SCHEMA) for i in range(n)]
        with build_client(settings, seed=0, cache_dir=tmp) as client:
            client.complete_many(requests[:connections], namespace="warm")  # connection pool
            t0 = time.perf_counter()
            results = client.complete_many(requests, namespace="run")
            elapsed = time.perf_counter() - t0
        stop.set()
        max_in_flight = urls.get(timeout=60)
        proc.join(timeout=10)
        errors = sum(isinstance(r, Exception) for r in results)
        ideal = connections / latency
        return {"requests": n, "latency_s": latency, "jitter_s": jitter, "max_connections": connections,
                "elapsed_s": round(elapsed, 3), "req_per_s": round(n / elapsed, 1),
                "ideal_req_per_s": ideal, "share_of_ideal": round(n / elapsed / ideal, 3),
                "errors": errors, "server_max_in_flight": max_in_flight}


def sweep_twice(sweep_args: list[str], latency: float) -> dict:
    os.environ["ANTHROPIC_API_KEY"] = API_KEY
    out = {}
    with FakeMessagesServer(latency_s=latency) as srv, tempfile.TemporaryDirectory() as tmp:
        for label in ("first", "rerun"):
            before = srv.message_requests
            cmd = [sys.executable, "-m", "silas_exp", "-m", *sweep_args, "model=claude-haiku-4-5",
                   f"llm.base_url={srv.base_url}", "tracking=none", f"paths.suites={REPO / 'suites'}",
                   f"paths.cache={tmp}/cache", f"hydra.sweep.dir={tmp}/{label}"]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                                  env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"})
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise SystemExit(f"{label} sweep failed:\n{proc.stderr[-2000:]}")
            # "[job 0] scorer=prompt#r0: ... (1.2s) [1/2 done, ~2 s left] -> folder"
            job_s = sum(float(x) for x in re.findall(r"\(([\d.]+)s\)(?: \[[^]]*\])? ->", proc.stdout))
            out[label] = {"wall_s": round(wall, 2), "job_s": round(job_s, 2),
                          "api_calls": srv.message_requests - before}
    out["speedup_wall"] = round(out["first"]["wall_s"] / out["rerun"]["wall_s"], 1)
    out["speedup_jobs"] = round(out["first"]["job_s"] / max(out["rerun"]["job_s"], 1e-9), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=640)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--sweep", default="suite=default scorer=prompt repeats=1")
    ap.add_argument("--skip-sweep", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="64 requests, 20 ms latency, 8 connections, a one-case smoke sweep")
    args = ap.parse_args()
    if args.quick:
        args.requests, args.latency, args.connections = 64, 0.02, 8
        args.sweep = "suite=smoke scorer=prompt repeats=1 suite.max_cases=1"
    result: dict = {}
    # constant latency keeps all 32 answers in lock-step, so the client's own
    # CPU per answer (~2 ms in SDK + httpx) queues up once per wave; real
    # latencies vary, which the jittered run models (same 200 ms mean)
    for label, jitter in (("throughput", 0.0), ("throughput_jitter", args.latency / 4)):
        result[label] = t = throughput(args.requests, args.latency, args.connections, jitter)
        print(f"{label}: {t['req_per_s']} req/s = {t['share_of_ideal']:.0%} of "
              f"{t['ideal_req_per_s']:.0f} (target >= 90%; latency {args.latency}s ± {jitter}s), "
              f"errors {t['errors']}, max in flight {t['server_max_in_flight']}")
    if not args.skip_sweep:
        result["cache"] = s = sweep_twice(shlex.split(args.sweep), args.latency)
        print(f"sweep '{args.sweep}': first {s['first']['wall_s']} s wall / {s['first']['job_s']} s in jobs, "
              f"{s['first']['api_calls']} API calls; rerun {s['rerun']['wall_s']} s / "
              f"{s['rerun']['job_s']} s, {s['rerun']['api_calls']} API calls; speedup "
              f"{s['speedup_wall']}x wall, {s['speedup_jobs']}x in jobs (target >= 10x, 0 calls)")
    save("llm", result)


if __name__ == "__main__":
    main()
