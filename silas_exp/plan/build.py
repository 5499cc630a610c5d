"""Build a study's plan: its design, its simulated twin (replayed as far as
the simulated looks reach), the worlds run through the study's own looks, and
what each world spends.

    plan = build_plan(["-m", "scorer=weights,prompt,online", "model=claude-haiku-4-5"])
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from silas_exp.analysis.planned import Plan, Spread, VariantPlan
from silas_exp.plan.design import StudyDesign, study_design
from silas_exp.plan.spend import (
    SWEEP_END_S,
    SWEEP_START_S,
    JobSpend,
    calibration_spend,
    job_seconds,
    job_spend,
    launch,
)
from silas_exp.plan.worlds import Departure, Worlds, look_worlds
from silas_exp.run.twin import Twin, default_workers, simulated_twin
from silas_exp.stats import Outcome
from silas_exp.study.state import AdaptiveState

ANSWER_SD = 0.45  # log-scale spread of a typical answer time (80 %: ×0.56–×1.78)
CPU_SD = 0.10  # log-scale spread of the replay's CPU between here and the study's run
_CTX: dict[str, Any] = {}  # what forked look workers read (set before they fork)


def _fresh(state: AdaptiveState) -> AdaptiveState:
    return AdaptiveState(**state.plan_fields())


def _look_chunk(ks: list[int]) -> dict[int, tuple[dict, dict]]:
    c = _CTX
    return look_worlds(c["worlds"], ks, c["settings"], c["states"].__getitem__, c["at"],
                       c["repeats"])


def _run_looks(worlds: Worlds, states: list[AdaptiveState], settings: Any, at: int,
               repeats: int, workers: int, needs: list[dict[str, int | None]]) -> None:
    """The look after ``at`` rounds in every world with an open variant, in
    ``workers`` forked processes; ``needs[k]``: each variant's cases needed at
    world ``k``'s last look of it."""
    ks = [k for k, s in enumerate(states) if any(v not in s.closed for v in worlds.variants)]
    if not ks:
        return
    if workers > 1 and len(ks) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        _CTX.update(worlds=worlds, settings=settings, states=states, at=at, repeats=repeats)
        chunks = [ks[i::workers] for i in range(workers)]
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(workers, mp_context=ctx) as ex:
            found: dict[int, tuple[dict, dict]] = {}
            for part in ex.map(_look_chunk, [c for c in chunks if c]):
                found.update(part)
        _CTX.clear()
        for k, (closed, _) in found.items():
            states[k].closed = closed
            states[k].looked.append(at)
    else:
        found = look_worlds(worlds, ks, settings, states.__getitem__, at, repeats)
    for k, (_, needed) in found.items():
        needs[k].update(needed)


class _Rows:
    """The twin's per-case rows by (arm, block, repeat); grows with the twin."""

    def __init__(self) -> None:
        self.index: dict[tuple[str, int, int], dict] = {}

    def update(self, twin: Twin) -> None:
        self.index = {(j.variant, j.block, j.repeat): j.cases for j in twin.jobs}

    def __call__(self, arm: str, block: int, repeat: int) -> dict:
        return self.index[(arm, block, repeat)]


def simulate(design: StudyDesign, departure_of: Callable[[Twin, list[str]], Departure],
             workers: int, say: Callable[[str], None] = lambda s: None) -> Simulated:
    """The twin, replayed as far as the worlds' looks reach, the worlds and
    their states after every look, the twin's own study (no departure) and
    the gated metrics."""
    from silas_exp.analysis.ablation import suite_kind
    from silas_exp.metrics.registry import gated_for

    cfg, ps = design.cfg, design.cfg.plan
    settings = cfg.analysis.model_copy(update={"control": design.control, "use_baseline": False})
    spec, looks = design.twin_spec(), design.state.looks
    upto = {arm: looks[0] for arm in spec.arms}
    twin = simulated_twin(spec, upto, workers)
    rows = _Rows()
    rows.update(twin)
    gated = list(settings.gate) if settings.gate else gated_for(
        suite_kind(twin.sweep_data(looks[0])))
    departure = departure_of(twin, gated)
    worlds = Worlds(design.variants, design.control, gated, departure, ps.worlds, ps.seed, rows)
    own = Worlds(design.variants, design.control, gated, Departure(0.0, 0.0, "none"), 1,
                 ps.seed, rows)
    states = [_fresh(design.state) for _ in range(ps.worlds)]
    twin_state = _fresh(design.state)
    needs: list[dict[str, int | None]] = [{} for _ in states]
    seconds, replayed = twin.seconds, twin.replayed
    for at in looks:
        need = {v for s in [*states, twin_state] for v in design.variants if v not in s.closed}
        if not need:
            break
        grow = {v: at for v in need if upto[v] < at}
        if grow:
            upto.update(grow)
            upto[design.control] = max(upto.values())
            say(f"plan: replaying {', '.join(sorted(grow))} to block {at} with the simulated model")
            twin = simulated_twin(spec, upto, workers)
            seconds, replayed = seconds + twin.seconds, replayed + twin.replayed
            rows.update(twin)
        _run_looks(own, [twin_state], settings, at, design.repeats, 1, [{}])
        _run_looks(worlds, states, settings, at, design.repeats, workers, needs)
    twin.seconds, twin.replayed = round(seconds, 3), replayed
    last = looks[-1]
    for s in [*states, twin_state]:
        for v in design.variants:  # a look that could compare nothing: undecided at the end
            s.closed.setdefault(v, {"round": last, "outcome": Outcome.INCONCLUSIVE.value,
                                    "why": "no look could compare it"})
    return Simulated(twin, worlds, states, twin_state, gated, needs)


@dataclass
class Simulated:
    twin: Twin
    worlds: Worlds
    states: list[AdaptiveState]  # each world's study after its looks
    twin_state: AdaptiveState  # the twin's own study: no departure
    gated: list[str]
    needs: list[dict[str, int | None]]  # each world's cases needed per variant, at its last look


def _departure_for(design: StudyDesign, workers: int) -> Callable[[Twin, list[str]], Departure]:
    from silas_exp.plan.departure import default_departure, measured_departure

    ps = design.cfg.plan
    low, high = ps.departure

    def departure(twin: Twin, gated: list[str]) -> Departure:
        record, why = _history(design)
        if record is None:
            return default_departure(low, high, why)
        replay = _baseline_twin(record, workers)
        if replay is None:
            return default_departure(low, high, "the promoted baseline could not be replayed here")
        found = measured_departure(record, lambda m: replay.values(record.name, m), gated)
        return found or default_departure(low, high, "the promoted baseline has too few cases")

    return departure


def _history(design: StudyDesign) -> tuple[Any, str]:
    """The suite's promoted baseline when a real model made it with this study's
    model (its per-case history), else None and why not."""
    from silas_exp.analysis.baseline import read_baseline

    cfg = design.cfg
    if cfg.model.backend == "simulated":
        return None, "the study's model is the simulated one"
    record = read_baseline(cfg.suite.path)
    if record is None:
        return None, "no real-model history: the suite has no promoted baseline"
    if record.simulated:
        return None, f"the promoted baseline {record.name} was run on the simulated model"
    models = [o.partition("=")[2] for o in record.design if o.startswith("model=")]
    if (models[-1] if models else "simulated") != cfg.model.name:
        return None, (f"the promoted baseline {record.name} ran on model="
                      f"{models[-1] if models else 'simulated'}, not {cfg.model.name}")
    return record, ""


def _baseline_twin(record: Any, workers: int) -> Twin | None:
    from silas_exp.run.regress import baseline_design
    from silas_exp.run.twin import TwinSpec

    overrides = [*baseline_design(record), *record.overrides]
    repeats = max(j.repeat for j in record.jobs) + 1
    blocks = max(j.block for j in record.jobs) + 1
    try:
        spec = TwinSpec({record.name: overrides}, record.name, repeats,
                        _pool_blocks(overrides) or blocks)
        return simulated_twin(spec, {record.name: blocks}, workers)
    except Exception:  # noqa: BLE001 - a baseline of another code's design: no history
        return None


def _pool_blocks(overrides: Sequence[str]) -> int | None:
    from silas_exp.config import compose_config
    from silas_exp.data.suites.blocks import n_blocks
    from silas_exp.study import loop

    cfg = compose_config([*overrides, "tracking=none"])
    pool = loop.study_pool(cfg.suite.path, cfg.suite.max_cases)
    return n_blocks(len(pool), cfg.cases_per_block) if pool is not None else None


# -- spend and time of each simulated study ----------------------------------------------
class _Costs:
    """A simulated study's calls, dollars and minutes from the twin's jobs."""

    def __init__(self, design: StudyDesign, twin: Twin) -> None:
        cfg = design.cfg
        ps = cfg.plan
        self.jobs: dict[tuple[str, int, int], JobSpend] = {
            (j.variant, j.block, j.repeat): job_spend(j, cfg.llm.prices, ps, cfg.model.main_id)
            for j in twin.jobs}
        self.calibration = calibration_spend(twin.jobs)
        ratios = [j.wall_s / j.cpu_s for j in twin.jobs if j.cpu_s > 0.05]
        self.contention = max(1.0, float(np.median(ratios))) if ratios else 1.0
        self.design, self.ps = design, ps
        self.order = [design.control, *design.variants]  # the sweep's order within a round

    def world(self, rounds: dict[str, int], factors: dict[str, float], slow: float, cpu: float,
              workers: int) -> tuple[float, float, float, dict[str, tuple[float, float]]]:
        """(calls, USD, minutes, each arm's (calls, USD)) of one simulated
        study whose arms ran ``rounds`` blocks each."""
        d, ps = self.design, self.ps
        connections = d.cfg.llm.max_connections
        calls, usd = self.calibration
        arms = {arm: (0.0, 0.0) for arm in self.order}
        seconds, start = (SWEEP_START_S + SWEEP_END_S) * self.contention * cpu, 0
        for at in d.state.looks:
            batch = []
            for b in range(start, at):
                for r in range(d.repeats):
                    for arm in self.order:
                        if rounds[arm] <= b:
                            continue
                        s = self.jobs[(arm, b, r)]
                        f = factors[arm]
                        scaled = JobSpend(s.calls, s.usd, s.cpu_s * self.contention * cpu,
                                          s.answer_s)
                        batch.append((arm, arm == d.control, (b, r),
                                      job_seconds(scaled, f, connections, ps, slow),
                                      s.calls * f, s.usd * f, s.answer_s * slow))
                        c, u = arms[arm]
                        arms[arm] = (c + s.calls * f, u + s.usd * f)
            if not batch:
                break
            ran = launch(batch, workers, connections, ps)
            seconds += ran.seconds
            calls, usd = calls + ran.race_calls, usd + ran.race_usd
            start = at
        calls += sum(c for c, _ in arms.values())
        usd += sum(u for _, u in arms.values())
        return calls, usd, seconds / 60.0, arms


def build_plan(args: Sequence[str] = (), design: StudyDesign | None = None,
               workers: int | None = None, say: Callable[[str], None] = lambda s: None) -> Plan:
    """The plan of ``python -m silas_exp -m <args>`` (or of ``design``)."""
    from silas_exp.plan.decide import what_would_decide

    t0 = time.perf_counter()
    design = design or study_design(args)
    cfg, ps = design.cfg, design.cfg.plan
    workers = workers or ps.workers or default_workers()
    sim = simulate(design, _departure_for(design, workers), workers, say)
    twin, worlds, states, twin_state = sim.twin, sim.worlds, sim.states, sim.twin_state
    costs = _Costs(design, twin)
    rng = np.random.default_rng([ps.seed, 7])
    variants = design.variants
    per: dict[str, dict[str, list[float]]] = {v: {"cases": [], "calls": [], "usd": []}
                                              for v in variants}
    study: dict[str, list[float]] = {"cases": [], "case_runs": [], "calls": [], "usd": [],
                                     "minutes": []}
    outcomes: dict[str, list[str]] = {v: [] for v in variants}
    for k, state in enumerate(states):
        factors = worlds.studies[k].calls_factor
        rounds = {v: int(state.closed[v]["round"]) for v in variants}
        rounds[design.control] = max(rounds.values())
        slow = 1.0 if ps.answer_s is not None else math.exp(ANSWER_SD * rng.standard_normal())
        cpu = math.exp(CPU_SD * rng.standard_normal())
        calls, usd, minutes, arms = costs.world(rounds, factors, slow, cpu, workers)
        for v in variants:
            per[v]["cases"].append(design.cases_at(rounds[v]))
            per[v]["calls"].append(arms[v][0])
            per[v]["usd"].append(arms[v][1])
            outcomes[v].append(state.closed[v]["outcome"])
        study["cases"].append(design.cases_at(rounds[design.control]))
        study["case_runs"].append(sum(design.cases_at(n) for n in rounds.values())
                                  * design.repeats)
        study["calls"].append(calls)
        study["usd"].append(usd)
        study["minutes"].append(minutes)
    plans = []
    for v in variants:
        chances = {o.value: outcomes[v].count(o.value) / len(outcomes[v]) for o in Outcome}
        own = twin_state.closed[v]
        twin_words = (f"{Outcome(own['outcome']).words} after "
                      f"{design.cases_at(int(own['round']))} cases")
        plans.append(VariantPlan(
            variant=v, chances=chances, cases=Spread.of(per[v]["cases"]),
            calls=Spread.of(per[v]["calls"]), usd=Spread.of(per[v]["usd"]), twin=twin_words,
            decide=what_would_decide(design, sim, v, chances)))
    full = {}
    for j in twin.jobs:
        for key, value in j.metrics.items():
            if key.startswith("llm.calls."):
                full[key.removeprefix("llm.calls.")] = full.get(key.removeprefix("llm.calls."),
                                                                0.0) + value
    plan = Plan(
        command=list(design.command), model=cfg.model.name,
        models={"scorer": cfg.model.scorer_id, "main": cfg.model.main_id,
                "judge": cfg.model.judge_id},
        control=design.control, kind=design.kind, pool_cases=design.pool_cases,
        cases_per_block=design.cases_per_block, repeats=design.repeats,
        looks=list(design.state.looks), confidences=list(design.state.confidences or []),
        worlds=ps.worlds, departure=[worlds_low(worlds), worlds_high(worlds)], variants=plans,
        cases=Spread.of(study["cases"]), case_runs=Spread.of(study["case_runs"]),
        calls=Spread.of(study["calls"]), usd=Spread.of(study["usd"]),
        minutes=Spread.of(study["minutes"]), calls_by_task=full,
        sources=sources(design, twin, worlds, costs, workers),
        twin_seconds=twin.seconds, replayed_jobs=twin.replayed)
    plan.seconds = round(time.perf_counter() - t0, 3)
    return plan


def worlds_low(worlds: Worlds) -> float:
    return float(min(worlds.shares)) if worlds.shares else 0.0


def worlds_high(worlds: Worlds) -> float:
    return float(max(worlds.shares)) if worlds.shares else 0.0


def sources(design: StudyDesign, twin: Twin, worlds: Worlds, costs: _Costs, workers: int
            ) -> list[str]:
    """Where each figure came from, and how uncertain it is."""
    from silas_exp.plan.spend import PACE_SHARE

    cfg, ps = design.cfg, design.cfg.plan
    d = worlds.departure
    out = [f"outcomes and cases: {ps.worlds} simulated studies, each through the study's own "
           f"looks (silas_exp/study/looks.py) on the simulated replay of the same "
           f"{design.pool_cases} cases, seeds and blocks ({len(twin.jobs)} jobs"
           + (f", {twin.replayed} replayed now in {twin.seconds:.0f} s" if twin.replayed else
              ", all from the disk cache") + "), its per-case differences moved by the real "
           f"model's departure from the simulated one, a share of {d.low:g}–{d.high:g} of its "
           f"decisions, {d.source}"]
    caching = []
    seen = set()
    for j in twin.jobs:
        for task, (model, chars) in j.prefixes.items():
            if (task, model) in seen:
                continue
            seen.add((task, model))
            tokens, floor = math.ceil(chars / 3.5), ps.pace(model).min_cache_tokens
            caching.append(f"{task} ({model}): {tokens:,}-token system prompt, "
                           + ("read from the cache" if tokens >= floor
                              else f"under the {floor:,}-token minimum: billed in full"))
    out.append("calls and tokens: the simulated replay's own (the dry run's calls per case), "
               f"each arm × a factor of its own (about ±{25 * max(d.high, 0.01):.0f} % at the "
               "highest departure); dollars at llm.prices ("
               + ", ".join(sorted({cfg.model.scorer_id, cfg.model.main_id, cfg.model.judge_id}))
               + "); prompt caching: " + ("; ".join(caching) or "no cached prompt"))
    if ps.answer_s is not None:
        pace = f"answers in {ps.answer_s:g} s (given: plan.answer_s)"
    else:
        m = ps.pace(cfg.model.main_id)
        pace = (f"answers at typical figures, not measured ({cfg.model.main_id}: "
                f"{m.first_token_s:g} s to the first token, {m.output_tokens_per_s:g} tokens/s; "
                "×0.6–1.8 in the range; plan.answer_s=… gives yours)")
    limit = (f"; rate limit {ps.requests_per_minute:,.0f} requests/min" if ps.requests_per_minute
             else "; no rate limit given (plan.requests_per_minute)")
    if ps.max_in_flight:
        limit += f"; at most {ps.max_in_flight} requests at once"
    out.append(f"minutes: the replay's CPU measured here (×{costs.contention:.1f} for this "
               f"machine's load) plus {ps.cpu_ms_per_call:g} ms of client CPU per call; {pace}; "
               f"{cfg.llm.max_connections} connections × {workers} workers at "
               f"{PACE_SHARE:.0%} of their pace (measured, docs/llm.md){limit}")
    return out
