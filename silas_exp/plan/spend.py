"""What a simulated study spends: calls, dollars and wall minutes, from the
twin's jobs (the dry run's calls and tokens per case, priced at the
configured models' prices) and the pace of the API.

* **Calls.** A study pays for each arm's own calls on the blocks it ran, and
  for the offline calibration once (the response and disk caches answer the
  rest: the control's reference replays repeat the control's own requests).
  A world scales each arm's calls by its own factor (a model that departs
  evicts, and so asks, a little more or less).
* **Dollars** with prompt caching: a task's system prompt is read from the
  cache (``cache_read`` price) instead of billed in full when it is at least
  the model's shortest cacheable prefix (``plan.models.<id>.min_cache_tokens``;
  4,096 tokens for Haiku 4.5), and written once per job; shorter ones are
  billed in full, as the API bills them.
* **Minutes.** A job takes the longer of its CPU time (the twin's own, plus the
  client's CPU per API call) and its calls at the pace of cases in flight
  (``llm.max_connections`` at 89 % of connections / answer time, measured in
  docs/llm.md), plus a fixed start; a look's jobs start in the sweep's order
  on its workers, and the account's rate limit caps the calls per minute of
  all of them. The sweep adds its start and its end (report, tracking).
* **Races.** A variant's job that starts beside the control's job of the same
  block replays the control's reference flushes before the control has
  written them, and part of those calls are paid twice (``launch``).

Hand-written: no library models a sweep's pace; the figures are checked
against studies run on the fake Messages server (bench/bench_plan.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from silas_exp.config import PlanConfig
from silas_exp.llm.settings import ModelPrice
from silas_exp.run.twin import TwinJob

PACE_SHARE = 0.89  # of max_connections / answer time reached with cases in flight (docs/llm.md)
JOB_START_S = 1.0  # a job's own start and end (suite, feedback store, its record)
LAUNCH_S = 1.5  # a look's launch of its jobs (forked workers) and the look itself
SWEEP_START_S = 8.0  # Hydra, imports, pre-flight, the tracking store and parent run
SWEEP_END_S = 12.0  # the end: summary, ablation report and plots, tracking


def _tokens(chars: float) -> int:
    return math.ceil(chars / 3.5)


@dataclass(frozen=True)
class JobSpend:
    calls: float
    usd: float
    cpu_s: float
    answer_s: float  # mean seconds per answer of this job's calls


def caching_saving(job: TwinJob, prices: Mapping[str, ModelPrice], settings: PlanConfig
                   ) -> float:
    """USD prompt caching takes off a twin job's cost (which bills every token
    as input): cached system prompts read at ``cache_read``, written once."""
    saved = 0.0
    for task, (model, chars) in job.prefixes.items():
        price, n = prices.get(model), job.metrics.get(f"llm.calls.{task}", 0.0)
        prefix = _tokens(chars)
        if price is None or not n or prefix < settings.pace(model).min_cache_tokens:
            continue
        saved += prefix * (n * (price.input - price.cache_read)
                           - (price.cache_write - price.cache_read)) / 1e6
    return saved


def job_spend(job: TwinJob, prices: Mapping[str, ModelPrice], settings: PlanConfig,
              main_model: str) -> JobSpend:
    """A twin job's own calls and dollars as the study would pay them (no
    calibration: ``calibration_spend``), its CPU and its answers' pace."""
    m = job.metrics
    calls = m.get("llm.calls", 0.0)
    usd = m.get("llm.cost_usd_simulated", m.get("llm.cost_usd", 0.0))
    usd = max(usd - caching_saving(job, prices, settings), 0.0)
    out_tokens = m.get("llm.output_tokens", 0.0) / calls if calls else 0.0
    if settings.answer_s is not None:
        answer = settings.answer_s
    else:
        models = [model for model, _ in job.prefixes.values()] or [main_model]
        answer = sum(settings.pace(model).answer_s(out_tokens) for model in models) / len(models)
    return JobSpend(calls, usd, job.cpu_s, answer)


def calibration_spend(jobs: Sequence[TwinJob]) -> tuple[float, float]:
    """(calls, USD) of the offline calibration: the twin counts it once, in
    whichever job computed it (``llm.overhead.*``)."""
    calls = sum(j.metrics.get("llm.overhead.calls", 0.0) for j in jobs)
    usd = sum(j.metrics.get("llm.overhead.cost_usd_simulated", j.metrics.get(
        "llm.overhead.cost_usd", 0.0)) for j in jobs)
    return calls, usd


def job_seconds(s: JobSpend, calls_factor: float, connections: int, settings: PlanConfig,
                slow: float = 1.0) -> float:
    """One job's wall seconds: its CPU or its calls at the pace of cases in
    flight, whichever is longer, and its start. ``slow`` scales the answer time."""
    calls = s.calls * calls_factor
    cpu = s.cpu_s + calls * settings.cpu_ms_per_call / 1000.0
    net = calls * s.answer_s * slow / (connections * PACE_SHARE) if calls else 0.0
    return max(cpu, net) + JOB_START_S


RACE_SHARE = 0.5  # of the control's calls on a block paid again by a variant started beside it


@dataclass(frozen=True)
class Launch:
    """A look's launch: its wall seconds and the reference replays its
    variants paid for, racing the control's job of their block."""

    seconds: float
    race_calls: float
    race_usd: float


def launch(batch: Sequence[tuple[str, bool, tuple, float, float, float, float]], workers: int,
           connections: int, settings: PlanConfig) -> Launch:
    """``batch``: the launch's jobs in the order the sweep launches them
    (round by round, the control first), each (arm, is control, its (block,
    repeat), seconds, calls, USD, answer seconds). Jobs start in that order,
    ``workers`` at a time (the sweep's launcher). A variant that starts while
    the control's job of its block runs replays the reference flushes the
    control has not written yet, and pays ``RACE_SHARE`` of them again (the
    response cache answers the rest; docs/llm.md, "Cases in flight")."""
    if not batch:
        return Launch(0.0, 0.0, 0.0)
    lanes = [0.0] * max(workers, 1)
    when: dict[tuple, tuple[float, float]] = {}
    for arm, _, key, seconds, _, _, _ in batch:
        i = lanes.index(min(lanes))
        when[(arm, key)] = (lanes[i], lanes[i] + seconds)
        lanes[i] += seconds
    controls = {key: (calls, usd, when[(arm, key)]) for arm, is_control, key, _, calls, usd, _
                in batch if is_control}
    race_calls = race_usd = 0.0
    for arm, is_control, key, _, _, _, _ in batch:
        if is_control or key not in controls:
            continue
        calls, usd, (c0, c1) = controls[key]
        start = when[(arm, key)][0]
        if start < c1 and c1 > c0:
            share = RACE_SHARE * (c1 - max(start, c0)) / (c1 - c0)
            race_calls, race_usd = race_calls + share * calls, race_usd + share * usd
    wall = max(lanes)
    calls = sum(b[4] for b in batch) + race_calls
    if settings.requests_per_minute:
        wall = max(wall, calls / (settings.requests_per_minute / 60.0))
    in_flight = min(workers, len(batch)) * connections
    if settings.max_in_flight and settings.max_in_flight < in_flight and calls:
        answer = sum(b[4] * b[6] for b in batch) / max(sum(b[4] for b in batch), 1e-9)
        wall = max(wall, calls * answer / (settings.max_in_flight * PACE_SHARE))
    return Launch(wall + LAUNCH_S, race_calls, race_usd)
