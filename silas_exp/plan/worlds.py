"""Simulated studies: the study's own looks (``silas_exp.study.looks.look_and_close``,
the ablation and its stopping rule, never a copy) run on worlds made from the
simulated twin, each world a guess at what the real model would give.

A real model is not the simulated one: its answers differ in some share ``q``
of its decisions (the departure), so its per-case differences with the
control are the twin's moved apart. A world draws ``q`` (uniform over the
plan's range, or around what the real-model history measured) and, for each
variant and gated metric, moves the twin's paired differences block by block:

* continuous metrics: ``d' = ρ·d + (1 − ρ)·mean(d) + √(1 − ρ²)·sd(d)·z + shift``,
  per-case noise ``z`` drawn per world and case, ``ρ = 1 − K_NOISE·q`` (floored at
  0), and a shift of the variant's effect ``K_SHIFT·q·sd(d)·(g_v + g_m)/√2`` in
  the metric's better direction, ``g_v`` shared by the variant's metrics (a
  model that departs tends to move every metric of a variant the same way);
* 0/1 metrics (pass): each case keeps its own outcome with probability ``ρ``,
  else takes that of another case of its block with the same control outcome
  (the pairing kept); then the shift turns that share of failures into passes
  (or passes into failures).

The control keeps the twin's values, so a variant identical to its control
stays identical in every world. ``K_SHIFT`` and ``K_NOISE`` were fitted to the
departing model of the benches (the simulated model with a set share of its
decisions made need-blind, ``tests/fakes/departing.py``) on 60 cases of the
default pool: at ``q = 0.2`` the paired differences kept a correlation of
0.4–0.9 with the twin's and their means moved by 0.1–0.8 of their per-case sd;
at ``q = 0.5``, 0.0–0.4 and 0.2–2.9 (``bench/bench_plan.py --departure``).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from silas_exp.analysis.data import JobData, SweepData
from silas_exp.analysis.result import ERROR_METRIC, PASS_METRIC
from silas_exp.metrics.registry import spec
from silas_exp.stats import Outcome

K_SHIFT = 2.5  # a variant's effect moves by about K_SHIFT·q per-case sds
K_NOISE = 1.75  # its per-case differences keep a correlation of 1 − K_NOISE·q with the twin's
CALLS_SD = 0.25  # an arm's calls per case vary by about CALLS_SD·q (log scale) between models


@dataclass(frozen=True)
class Departure:
    """How far the real model is assumed to be from the simulated one: a share
    of decisions, uniform over [low, high], and where that came from."""

    low: float
    high: float
    source: str

    def draw(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.low, self.high)) if self.high > self.low else self.low


@dataclass
class WorldStudy:
    """One simulated study: when each variant stopped and how."""

    share: float  # the world's departure
    stops: dict[str, tuple[int, str]] = field(default_factory=dict)  # variant -> (round, outcome)
    calls_factor: dict[str, float] = field(default_factory=dict)  # arm -> its calls' factor


def _seed(*parts: Any) -> list[int]:
    return [zlib.crc32(str(p).encode()) for p in parts]


def _binary(values: np.ndarray) -> bool:
    v = values[~np.isnan(values)]
    return v.size > 0 and bool(np.all((v == 0) | (v == 1)))


class Worlds:
    """The worlds of a plan over a twin (``rows(arm, block, repeat)``: that
    job's per-case rows), each variant moved as the module says."""

    def __init__(self, variants: Sequence[str], control: str, metrics: Sequence[str],
                 departure: Departure, n: int, seed: int,
                 rows: Callable[[str, int, int], Mapping[str, Mapping[str, float]]]) -> None:
        self.variants, self.control, self.metrics = list(variants), control, list(metrics)
        self.rows, self.seed, self.n, self.departure = rows, seed, n, departure
        rng = np.random.default_rng(_seed("plan-worlds", seed))
        self.shares = [departure.draw(rng) for _ in range(n)]
        self.studies = [WorldStudy(q) for q in self.shares]
        self._moved: dict[tuple[int, str, int, int], dict[str, dict[str, float]]] = {}
        self._scale: dict[tuple[str, str], float] = {}
        for k, study in enumerate(self.studies):
            for arm in [control, *variants]:
                g = np.random.default_rng(_seed("calls", seed, k, arm)).normal()
                study.calls_factor[arm] = math.exp(CALLS_SD * study.share * g)

    def _shift(self, k: int, variant: str, metric: str, sd: float) -> float:
        q = self.shares[k]
        g_v = np.random.default_rng(_seed("shift", self.seed, k, variant)).normal()
        g_m = np.random.default_rng(_seed("shift", self.seed, k, variant, metric)).normal()
        sign = -1.0 if spec(metric).direction == "lower" else 1.0
        return sign * K_SHIFT * q * sd * (g_v + g_m) / math.sqrt(2.0)

    def moved(self, k: int, variant: str, block: int, repeat: int) -> dict[str, dict[str, float]]:
        """World ``k``'s per-case rows of ``variant`` on one block and repeat."""
        key = (k, variant, block, repeat)
        if key in self._moved:
            return self._moved[key]
        own, ctrl = self.rows(variant, block, repeat), self.rows(self.control, block, repeat)
        cases = sorted(set(own) & set(ctrl))
        q = self.shares[k]
        rho = max(0.0, 1.0 - K_NOISE * q)
        out = {c: {m: float(own[c].get(m, math.nan)) for m in (*self.metrics, PASS_METRIC,
                                                               ERROR_METRIC)} for c in cases}
        for metric in [*self.metrics, PASS_METRIC]:
            if metric == ERROR_METRIC or spec(metric).direction == "none" or q == 0 or not cases:
                continue
            x = np.array([own[c].get(metric, math.nan) for c in cases], float)
            x0 = np.array([ctrl[c].get(metric, math.nan) for c in cases], float)
            rng = np.random.default_rng(_seed("cases", self.seed, k, variant, metric, block,
                                              repeat))
            d = x - x0
            ok = ~np.isnan(d)
            if not ok.any():
                continue
            sd = self._scale.setdefault((variant, metric), float(np.std(d[ok], ddof=1))
                                        if ok.sum() > 1 else 0.0)
            shift = self._shift(k, variant, metric, sd)
            if _binary(x) and _binary(x0):
                new = _move_binary(x, x0, rho, shift, rng)
            else:
                mean, spread = float(np.mean(d[ok])), float(np.std(d[ok], ddof=1)) if ok.sum() > 1 \
                    else 0.0
                z = rng.standard_normal(len(cases))
                new = x0 + rho * d + (1 - rho) * mean + math.sqrt(1 - rho**2) * spread * z + shift
            for c, v in zip(cases, new, strict=True):
                out[c][metric] = float(v)
        self._moved[key] = out
        return out

    def data(self, k: int, arms: Sequence[str], blocks: int, repeats: int) -> SweepData:
        """World ``k``'s jobs of ``arms`` on blocks ``< blocks``, as a look reads them."""
        jobs = []
        for arm in arms:
            for r in range(repeats):
                cases: dict[str, dict[str, float]] = {}
                status: dict[str, str] = {}
                for b in range(blocks):
                    rows = self.rows(arm, b, r) if arm == self.control else self.moved(k, arm, b, r)
                    for c, row in rows.items():
                        cases[c] = {m: row.get(m, math.nan) for m in (*self.metrics, PASS_METRIC,
                                                                      ERROR_METRIC)}
                        status[c] = "error" if row.get(ERROR_METRIC, 0.0) == 1.0 else (
                            "pass" if row.get(PASS_METRIC) == 1.0 else "fail")
                jobs.append(JobData(arm, r, {}, cases, status=status))
        return SweepData(f"world-{k}", "", jobs)


def _move_binary(x: np.ndarray, x0: np.ndarray, rho: float, shift: float,
                 rng: np.random.Generator) -> np.ndarray:
    new = x.copy()
    keep = rng.random(len(x)) < rho
    for i in np.flatnonzero(~keep & ~np.isnan(x)):
        same = np.flatnonzero((x0 == x0[i]) & ~np.isnan(x))
        if same.size:
            new[i] = x[rng.choice(same)]
    ok = ~np.isnan(new)
    if ok.any() and shift:
        p = float(np.mean(new[ok]))
        u = rng.random(len(new))
        if shift > 0 and p < 1:
            new[ok & (new == 0) & (u < min(1.0, shift / (1 - p)))] = 1.0
        elif shift < 0 and p > 0:
            new[ok & (new == 1) & (u < min(1.0, -shift / p))] = 0.0
    return new


def look_worlds(worlds: Worlds, ks: Sequence[int], settings: Any, state_of: Callable[[int], Any],
                at: int, repeats: int) -> dict[int, tuple[dict[str, dict], dict[str, int | None]]]:
    """The look after ``at`` rounds in each world of ``ks`` whose study still
    has an open variant: the study's own look (``look_and_close``) on the
    world's data. Returns each world's closed variants after it, and the cases
    each variant it looked at would need (the verdict's ``n_needed``)."""
    from silas_exp.study.looks import look_and_close

    out = {}
    for k in ks:
        state = state_of(k)
        open_ = [v for v in worlds.variants if v not in state.closed]
        needed: dict[str, int | None] = {}
        if open_:
            data = worlds.data(k, [worlds.control, *open_], at, repeats)
            result = look_and_close(data, settings, state, at)
            if result is not None:
                needed = {v: result.verdicts[v].n_needed for v in open_ if v in result.verdicts}
        state.looked.append(at)
        out[k] = (dict(state.closed), needed)
    return out


def outcome_words(value: str) -> str:
    return Outcome(value).words
