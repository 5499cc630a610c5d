"""LLM layer against the local Messages API server (real SDK, real HTTP).

    python bench/bench_llm.py [--requests 640] [--latency 0.2] [--connections 32]
                              [--sweep "suite=default scorer=prompt repeats=1"] [--quick]
                              [--job-cases 12] [--job-latency 0.3] [--job-faults 0.25]
                              [--only job]

1. Throughput: ``complete_many`` of N structured-output requests with
   ``llm.max_connections=32`` against a server answering in 200 ms.
   Target: >= 90 % of 32 / 0.2 s = 144 requests/s.
2. Cache: the same sweep run twice (tracking off). Target: the rerun makes
   0 API calls and is >= 10x faster (wall time of the command, and time spent
   in jobs as Hydra's job logs report it).

3. Job pace: the prompt scorer's job (``scorer=prompt model=claude-haiku-4-5
   cases_per_block=null suite.max_cases=12``, a cold cache each run) against
   the server at 300 ms, with ``llm.max_connections=1`` (one case at a time)
   and with the default 10 (cases in flight), in alternating order in the
   same run; then with the default at 25 % faults (429, 529, 500, bodies
   that are not JSON, answers that break the schema, answers slower than
   the 2 s deadlines). Requests per second of the job's own time (the
   server's requests: calls, retries and errors, the calibration and the
   control's reference replays included) against ``max_connections /
   latency``. Target: >= 60 % of it (20 requests/s at 10 and 300 ms), and at
   25 % faults every case scored or errored with a reason.

   Each job is also measured end to end, from the command's start to its
   exit (start-up, calibration, cases, end): its requests per second of wall
   time against the ceiling (``e2e``). Target: >= 80 % end to end.

4. ``--only e2e --against TREE``: that end-to-end pace of the job with cases
   in flight (the default connections) for this tree's code and for the
   checkout in TREE (``git worktree add --detach TREE main``), alternating
   which goes first, ``--job-pairs`` pairs against one server:

       flock /work/.bench.lock python bench/bench_llm.py --only e2e --against /tmp/base --job-pairs 3

``--quick`` (CI smoke): 64 requests at 20 ms over 8 connections, the smoke
suite's first case as the sweep, and the job on it at 20 ms over 4 connections.
Writes bench/results/llm.json (``--against``: llm_against.json).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
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
from tests.fakes.messages_server import API_KEY, FakeMessagesServer, Fault  # noqa: E402

# the job's faults, one of these in turn for a share of the requests (slow: past the 2 s deadlines)
FAULTS = (Fault("rate_limit", retry_after=0.5), Fault("overloaded"), Fault("server_error"),
          Fault("malformed"), Fault("bad_schema"), Fault("slow"))


def _serve(latency: float, jitter: float, urls: multiprocessing.Queue, stop: multiprocessing.Event,
           fault_share: float = 0.0) -> None:
    with FakeMessagesServer(latency_s=latency, jitter_s=jitter, slow_s=2.5) as srv:
        if fault_share:
            srv.fault_fn = lambda n, body: (FAULTS[n % len(FAULTS)]
                                            if random.Random(n).random() < fault_share else None)
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


def _requests(metrics: dict[str, float]) -> float:
    """Requests the job sent: its own and its measuring calls, retries and errors."""
    return sum(metrics.get(f"llm.{part}{n}", 0.0) for part in ("", "overhead.")
               for n in ("calls", "retries", "errors"))


def one_job(args: list[str], base_url: str, tmp: Path, label: str, tree: Path | None = None) -> dict:
    """``python -m silas_exp`` (one run, tracking off, a cold cache) against the
    server; ``tree``: with the code of that checkout (the suites stay this tree's)."""
    cmd = [sys.executable, "-m", "silas_exp", *args, f"llm.base_url={base_url}", "tracking=none",
           f"paths.suites={REPO / 'suites'}", f"paths.cache={tmp}/{label}/cache",
           f"hydra.run.dir={tmp}/{label}/run"]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree or REPO, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{label} job failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    # "[run] scorer=prompt: 12 cases, pass 50%, ...=0.612 (41.2s) -> folder"
    seconds = float(re.findall(r"\(([\d.]+)s\) ->", proc.stdout)[-1])
    result = json.loads((tmp / label / "run" / "result.json").read_text())
    cases = [json.loads(line) for line in
             (tmp / label / "run" / "results.jsonl").read_text().splitlines()]
    requests = _requests(result["metrics"])
    return {"job_s": seconds, "requests": requests, "req_per_s": round(requests / seconds, 1),
            "wall_s": round(wall, 1), "e2e_req_per_s": round(requests / wall, 1),
            "cases": len(cases), "statuses": dict(sorted(
                {s: sum(c["status"] == s for c in cases) for s in {c["status"] for c in cases}}.items())),
            "errored_without_reason": sum(c["status"] == "error" and not c.get("error") for c in cases),
            "llm_errors": result["metrics"].get("llm.errors", 0.0),
            "limiter": [ln for ln in proc.stdout.splitlines() if ln.startswith("llm: ")][-1:]}


def job_pace(job_args: list[str], latency: float, connections: int, fault_share: float,
             pairs: int = 1) -> dict:
    """The prompt scorer's job one case at a time and with cases in flight, paired,
    then at ``fault_share`` faults; the server in a process of its own."""
    os.environ["ANTHROPIC_API_KEY"] = API_KEY
    ctx = multiprocessing.get_context("spawn")
    out: dict = {"latency_s": latency, "max_connections": connections,
                 "ceiling_req_per_s": round(connections / latency, 1), "args": job_args, "pairs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for share in (0.0, fault_share):
            urls, stop = ctx.Queue(), ctx.Event()
            proc = ctx.Process(target=_serve, args=(latency, 0.0, urls, stop, share), daemon=True)
            proc.start()
            base_url = urls.get(timeout=60)
            try:
                if not share:
                    for i in range(pairs):  # alternating order: neither always runs on a warmer machine
                        order = [("one_at_a_time", 1), ("in_flight", connections)]
                        pair = {}
                        for label, n in order if i % 2 == 0 else order[::-1]:
                            pair[label] = one_job([*job_args, f"llm.max_connections={n}"], base_url,
                                                  Path(tmp), f"{label}-{i}")
                        pair["speedup"] = round(pair["one_at_a_time"]["job_s"]
                                                / pair["in_flight"]["job_s"], 2)
                        pair["share_of_ceiling"] = round(pair["in_flight"]["req_per_s"]
                                                         / out["ceiling_req_per_s"], 3)
                        pair["share_of_ceiling_e2e"] = round(pair["in_flight"]["e2e_req_per_s"]
                                                             / out["ceiling_req_per_s"], 3)
                        out["pairs"].append(pair)
                else:
                    out["faults"] = {"share": share, **one_job(
                        [*job_args, f"llm.max_connections={connections}"], base_url, Path(tmp),
                        "faults")}
            finally:
                stop.set()
                urls.get(timeout=60)
                proc.join(timeout=10)
    return out


def e2e_against(job_args: list[str], latency: float, connections: int, tree: Path,
                pairs: int) -> dict:
    """The job with cases in flight, end to end from the command, this tree's code
    against the checkout in ``tree``, alternating, against one server."""
    os.environ["ANTHROPIC_API_KEY"] = API_KEY
    ctx = multiprocessing.get_context("spawn")
    ceiling = connections / latency
    out: dict = {"latency_s": latency, "max_connections": connections, "against": str(tree),
                 "ceiling_req_per_s": round(ceiling, 1), "args": job_args, "pairs": []}
    with tempfile.TemporaryDirectory() as tmp:
        urls, stop = ctx.Queue(), ctx.Event()
        proc = ctx.Process(target=_serve, args=(latency, 0.0, urls, stop, 0.0), daemon=True)
        proc.start()
        base_url = urls.get(timeout=60)
        try:
            for i in range(pairs):
                order = [("before", tree), ("after", None)]
                pair = {}
                for label, code in order if i % 2 == 0 else order[::-1]:
                    run = one_job([*job_args, f"llm.max_connections={connections}"], base_url,
                                  Path(tmp), f"{label}-{i}", tree=code)
                    run["share_of_ceiling_e2e"] = round(run["e2e_req_per_s"] / ceiling, 3)
                    run["share_of_ceiling_job"] = round(run["req_per_s"] / ceiling, 3)
                    pair[label] = run
                    print(f"pair {i + 1} {label:6s}: {run['requests']:.0f} requests, end to end "
                          f"{run['wall_s']} s = {run['share_of_ceiling_e2e']:.0%} of {ceiling:.1f}/s "
                          f"(the job alone {run['job_s']} s = {run['share_of_ceiling_job']:.0%})", flush=True)
                out["pairs"].append(pair)
        finally:
            stop.set()
            urls.get(timeout=60)
            proc.join(timeout=10)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=640)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--sweep", default="suite=default scorer=prompt repeats=1")
    ap.add_argument("--skip-sweep", action="store_true")
    ap.add_argument("--only", choices=("job", "e2e"), help="run only the job-pace workload "
                    "(e2e: only its end-to-end pace with cases in flight, --against a checkout)")
    ap.add_argument("--against", type=Path, default=None, metavar="TREE",
                    help="with --only e2e: pair this tree's code with the checkout in TREE")
    ap.add_argument("--job", default="scorer=prompt model=claude-haiku-4-5 cases_per_block=null "
                                      "suite.max_cases=12")
    ap.add_argument("--job-latency", type=float, default=0.3)
    ap.add_argument("--job-connections", type=int, default=10)
    ap.add_argument("--job-faults", type=float, default=0.25)
    ap.add_argument("--job-pairs", type=int, default=1)
    ap.add_argument("--quick", action="store_true",
                    help="64 requests, 20 ms latency, 8 connections, a one-case smoke sweep")
    args = ap.parse_args()
    if args.quick:
        args.requests, args.latency, args.connections = 64, 0.02, 8
        args.sweep = "suite=smoke scorer=prompt repeats=1 suite.max_cases=1"
        args.job = "scorer=prompt model=claude-haiku-4-5 suite=smoke cases_per_block=null suite.max_cases=1"
        args.job_latency, args.job_connections = 0.02, 4
    result: dict = {}
    if args.only == "e2e":
        if args.against is None:
            ap.error("--only e2e needs --against TREE (a checkout to pair this tree with)")
        save("llm_against", e2e_against(shlex.split(args.job), args.job_latency, args.job_connections,
                                        args.against.resolve(), args.job_pairs))
        return
    if args.only == "job":
        args.skip_sweep, args.requests = True, 0
    # constant latency keeps all 32 answers in lock-step, so the client's own
    # CPU per answer (~2 ms in SDK + httpx) queues up once per wave; real
    # latencies vary, which the jittered run models (same 200 ms mean)
    for label, jitter in (("throughput", 0.0), ("throughput_jitter", args.latency / 4)):
        if not args.requests:
            break
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
    result["job"] = j = job_pace(shlex.split(args.job), args.job_latency, args.job_connections,
                                 args.job_faults, args.job_pairs)
    for pair in j["pairs"]:
        one, many = pair["one_at_a_time"], pair["in_flight"]
        print(f"job '{args.job}' at {args.job_latency}s: one case at a time {one['req_per_s']} req/s "
              f"({one['requests']:.0f} requests, {one['job_s']} s); cases in flight "
              f"{many['req_per_s']} req/s ({many['requests']:.0f} requests, {many['job_s']} s) = "
              f"{pair['share_of_ceiling']:.0%} of {j['ceiling_req_per_s']} (target >= 60%), end to end "
              f"{pair['share_of_ceiling_e2e']:.0%} ({many['wall_s']} s; target >= 80%); "
              f"speedup {pair['speedup']}x")
    f = j["faults"]
    print(f"job at {f['share']:.0%} faults: {f['cases']} cases {f['statuses']}, "
          f"{f['errored_without_reason']} errored without a reason, {f['requests']:.0f} requests in "
          f"{f['job_s']} s ({f['req_per_s']} req/s), {f['llm_errors']:.0f} calls failed "
          f"after retries; {' '.join(f['limiter'])}")
    save("llm", result)


if __name__ == "__main__":
    main()
