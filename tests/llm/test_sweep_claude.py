"""A sweep with the Claude backend, end to end: the real CLI, the real SDK, the
local Messages API server injecting faults into a share of the requests."""

from __future__ import annotations

from pathlib import Path

from silas_exp.records import read_job_result
from tests.conftest import isolated_overrides
from tests.fakes.messages_server import API_KEY, Fault

FAULTS = [Fault("rate_limit", retry_after=0.01), Fault("overloaded"), Fault("server_error"),
          Fault("malformed"), Fault("bad_schema"), Fault("slow")]


def every_seventh(n: int, body: dict) -> Fault | None:
    return FAULTS[(n // 7) % len(FAULTS)] if n % 7 == 0 else None


def job_results(sweep_dir: Path) -> list[dict]:
    return [read_job_result(p).with_cases(p.parent).model_dump(mode="json")
            for p in sorted(sweep_dir.glob("*/result.json"))]


def test_sweep_against_faulty_api_completes_and_counts_add_up(server, cli, tmp_path):
    server.slow_s = 1.0
    server.fault_fn = every_seventh
    args = ["-m", "suite=smoke", "scorer=heuristic,prompt", "model=claude-haiku-4-5", "repeats=1",
            f"llm.base_url={server.base_url}", "llm.timeout_s=0.4", "llm.max_retry_wait_s=0.01"]
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = job_results(tmp_path / "multirun")
    assert len(jobs) == 2 and all(j["status"] == "finished" for j in jobs)
    n_cases = {len(j["run"]["results"]) for j in jobs}
    assert n_cases == {2}  # cases in = cases with a result (pass, fail or error)
    assert all(r["status"] in ("pass", "fail", "error") for j in jobs for r in j["run"]["results"])
    m = [j["metrics"] for j in jobs]
    made = sum(x[f"llm.{part}{n}"] for x in m for part in ("", "overhead.")
               for n in ("calls", "retries", "errors"))
    assert made == server.message_requests > 0
    assert sum(x["llm.retries"] for x in m) > 0  # the faults did happen and were retried
    assert sum(server.counts[f.kind] for f in FAULTS) > 0

    # nothing anywhere in the store or the outputs holds the key
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.stat().st_size < 50_000_000:
            assert API_KEY.encode() not in path.read_bytes(), path

    from silas_exp.tracking.reader import MlflowRunReader

    reader = MlflowRunReader(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    runs = reader.store.search_runs([e.experiment_id for e in reader.experiments()])
    assert len(runs) == 3  # parent + 2 jobs
    assert {r.data.tags.get("llm.backend") for r in runs} == {"anthropic"}

    # the same sweep again, replay-only: every answer comes from the cache
    before = server.message_requests
    replay_dir = tmp_path / "multirun-replay"  # a sweep folder holds one sweep
    extra = [o if not o.startswith("hydra.sweep.dir=") else f"hydra.sweep.dir={replay_dir}"
             for o in isolated_overrides(tmp_path)]
    again = cli(*args, "llm.cache_mode=replay", *extra, isolate=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert server.message_requests == before
    # every case ends as it did the first time
    rerun = job_results(replay_dir)
    assert [[(r["case_id"], r["status"], r["error"]) for r in j["run"]["results"]] for j in rerun] \
        == [[(r["case_id"], r["status"], r["error"]) for r in j["run"]["results"]] for j in jobs]


def test_dry_run_estimates_cost_and_tracks_nothing(cli, tmp_path):
    proc = cli("-m", "suite=smoke", "scorer=prompt", "model=claude-sonnet-4-5", "repeats=2",
               "llm.dry_run=true")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "dry run:" in proc.stdout and "estimated $" in proc.stdout
    assert "Dry run (2 jobs, model=claude-sonnet-4-5)" in proc.stdout
    assert "Model calls per look:" in proc.stdout and "stopping early saved 0 calls" in proc.stdout
    assert not (tmp_path / "mlruns" / "mlflow.db").exists()


def test_model_without_price_is_bad_input(cli):
    proc = cli("model=claude-haiku-4-5", "model.scorer_id=claude-haiku-9")
    assert proc.returncode == 2
    assert "model.scorer_id='claude-haiku-9': 'claude-haiku-9' has no price in llm.prices" in proc.stderr
