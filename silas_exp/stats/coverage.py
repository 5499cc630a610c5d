"""Simulated coverage of :func:`silas_exp.stats.intervals.paired_interval`,
with known truth, for each kind of gated metric (bench/bench_coverage.py
prints the table docs/analysis.md shows).

A simulated study pairs ``n`` cases × ``repeats`` of a variant with a control.
A share ``disagree`` of the cases disagree (their pair differs); the others
are identical in every repeat, as an unchanged eviction decision leaves a case.
Each metric's model is the shape its real values have:

* ``pass rate`` (pass_fail, margin 0.05): a disagreeing case flips pass → fail
  or fail → pass, in every repeat alike with one repeat and in 70 % of its
  repeats otherwise (repeats of a case go together: clustered);
* ``relevance`` (bounded [0, 1], margin 0.02): a disagreeing case's difference
  is normal around the case effect (sd a third of it when disagreements are
  rare and large, 0.04 when every case disagrees), plus repeat noise (0.03);
* ``probe score`` (bounded 0–5, margin 0.25): like relevance, on the judge's
  grid of sixths;
* ``tokens per served need`` (amount, lower is better, relative margin 5 % of
  the control's mean): the control's per-case value is log-normal (median
  9,000, log-sd 0.35, right-skewed as token ratios are); a disagreeing case
  multiplies it by a log-normal factor, plus repeat noise.

``effect`` "none" balances the disagreements (true difference 0); "margin"
makes the variant worse by exactly the margin where the disagreements can
carry it, else by as much as they can (every disagreement worse, at the
largest size the model allows): the edge the ship rule must not cross.

With a simulated twin (``cv_design``, ``cv_table``; bench/bench_cv.py prints
the table), the same models give the paid differences, the twin's are
correlated with them at a set rho, and the interval is the corrected one
(silas_exp.stats.control_variate.corrected_interval) at each look.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from silas_exp.stats.intervals import Kind, paired_interval, t_bounds, tango

REPEAT_AGREE = 0.7  # pass_fail with repeats: a disagreeing case's repeats that flip


@dataclass(frozen=True)
class Model:
    name: str
    kind: Kind
    margin: float  # for tokens: a share of the control's mean (relative)
    direction: str  # "higher" or "lower" is better


MODELS = (Model("pass rate", "pass_fail", 0.05, "higher"),
          Model("relevance", "bounded", 0.02, "higher"),
          Model("probe score", "bounded", 0.25, "higher"),
          Model("tokens per served need", "amount", 0.05, "lower"))
BOUNDS = {"relevance": (0.0, 1.0), "probe score": (0.0, 5.0)}
TOKENS_MEDIAN, TOKENS_LOG_SD = 9000.0, 0.35
TOKENS_MEAN = TOKENS_MEDIAN * math.exp(TOKENS_LOG_SD**2 / 2)


@dataclass(frozen=True)
class Draw:
    diffs: np.ndarray  # studies × cases × repeats
    truth: float  # the true mean difference (variant − control)
    margin: float  # in the metric's units
    scale: np.ndarray | None  # per study: what the kind's interval needs
    control: np.ndarray | None = None  # amounts: studies × cases of the control's values


def margin_of(model: Model) -> float:
    return model.margin * TOKENS_MEAN if model.kind == "amount" else model.margin


def draw(model: Model, n: int, repeats: int, disagree: float, effect: str,
         studies: int, rng: np.random.Generator) -> Draw:
    """``studies`` simulated studies of one cell."""
    if model.kind == "pass_fail":
        return _pass_fail(n, repeats, disagree, effect, studies, rng, model.margin)
    if model.kind == "bounded":
        return _bounded(model, n, repeats, disagree, effect, studies, rng)
    return _tokens(n, repeats, disagree, effect, studies, rng, model.margin)


def _pass_fail(n, repeats, disagree, effect, studies, rng, margin) -> Draw:
    rho = 1.0 if repeats == 1 else REPEAT_AGREE
    reach = disagree * rho  # the largest |difference| the disagreements can carry
    worse_share = 0.5 if effect == "none" or reach == 0 else min(1.0, 0.5 + margin / (2 * reach))
    case = rng.random((studies, n, 1)) < disagree
    sign = np.where(rng.random((studies, n, 1)) < worse_share, -1.0, 1.0)
    flips = rng.random((studies, n, repeats)) < rho
    return Draw(case * sign * flips, reach * (1 - 2 * worse_share), margin, None)


def _size(effect: str, disagree: float, margin: float, cap: float, dense_sd: float
          ) -> tuple[float, float]:
    """Mean and sd of a disagreeing case's difference (higher is better)."""
    if effect == "none":
        return 0.0, (dense_sd if disagree >= 1 else min(cap / 3, 10 * margin))
    mu = -min(margin / disagree, cap) if disagree > 0 else 0.0
    return mu, (dense_sd if disagree >= 1 else abs(mu) / 3)


def _bounded(model, n, repeats, disagree, effect, studies, rng) -> Draw:
    lo, hi = BOUNDS[model.name]
    width = hi - lo
    dense_sd, noise = (0.04, 0.03) if width == 1 else (0.3, 0.2)
    mu, sd = _size(effect, disagree, model.margin, width / 2, dense_sd)
    case = rng.random((studies, n, 1)) < disagree
    x = mu + sd * rng.standard_normal((studies, n, 1))
    if repeats > 1:
        x = x + noise * rng.standard_normal((studies, n, repeats))
    if width != 1:  # the judge's grid: sixths of a point
        x = np.round(x * 6) / 6
    x = np.clip(x, -width, width)
    truth = disagree * _mean_size(mu, sd, noise if repeats > 1 else 0.0, width)
    return Draw(case * x, truth, model.margin, np.full(studies, width))


@functools.lru_cache(maxsize=256)
def _mean_size(mu: float, sd: float, noise: float, width: float) -> float:
    """E of a disagreeing case's difference after the grid and the clip, by a
    large fixed-seed draw (its error is under 1e-4 of the metric's range)."""
    x = mu + math.hypot(sd, noise) * np.random.default_rng(12345).standard_normal(2_000_000)
    if width != 1:
        x = np.round(x * 6) / 6
    return float(np.mean(np.clip(x, -width, width)))


def _tokens(n, repeats, disagree, effect, studies, rng, margin) -> Draw:
    control = TOKENS_MEDIAN * np.exp(TOKENS_LOG_SD * rng.standard_normal((studies, n, 1)))
    sd = 0.15 if disagree >= 1 else 0.2
    rise = 0.0 if effect == "none" or disagree == 0 else margin / disagree  # E[factor] − 1
    mu = math.log1p(rise) - sd**2 / 2
    factor = np.exp(mu + sd * rng.standard_normal((studies, n, 1)))
    if repeats > 1:
        factor = factor * np.exp(0.1 * rng.standard_normal((studies, n, repeats)) - 0.005)
    case = rng.random((studies, n, 1)) < disagree
    variant = np.where(case, control * factor, control)
    diffs = variant - control
    scale = np.maximum(control.max(axis=(1, 2)), variant.max(axis=(1, 2)))
    return Draw(diffs, disagree * rise * TOKENS_MEAN, margin * TOKENS_MEAN, scale, control[:, :, 0])


def intervals(model: Model, d: Draw, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The production interval of every simulated study (lows, highs): the
    score interval study by study (cached on its counts), the t family in one
    vectorised call of the same function a single interval uses."""
    studies = d.diffs.shape[0]
    if model.kind == "pass_fail":
        if d.diffs.shape[2] == 1:  # one repeat: the interval depends on the counts alone
            from scipy.stats import norm

            z = float(norm.isf((1 - confidence) / 2))
            n = d.diffs.shape[1]
            b, c = np.sum(d.diffs == 1, axis=(1, 2)), np.sum(d.diffs == -1, axis=(1, 2))
            out = np.array([tango(float(bi), float(ci), float(n), z) for bi, ci in zip(b, c,
                                                                                      strict=True)])
        else:
            out = np.array([(iv.low, iv.high) for iv in
                            (paired_interval(d.diffs[i], confidence, "pass_fail")
                             for i in range(studies))])
        return out[:, 0], out[:, 1]
    x = d.diffs.mean(axis=2)
    worse = np.sum(d.diffs.min(axis=2) < 0, axis=1)
    better = np.sum(d.diffs.max(axis=2) > 0, axis=1)
    disagreeing = np.sum(np.any(d.diffs != 0, axis=2), axis=1)
    low, high, _ = t_bounds(x, worse, better, disagreeing, confidence, d.scale)
    return low, high


@dataclass(frozen=True)
class Cell:
    coverage: float
    worse_miss: float  # the interval is entirely on the better side of the truth
    better_miss: float
    zero_width: int  # intervals of zero width
    studies: int


def coverage_cell(model: Model, n: int, repeats: int, disagree: float, effect: str,
                  confidence: float, studies: int, seed: int) -> Cell:
    rng = np.random.default_rng(seed)
    d = draw(model, n, repeats, disagree, effect, studies, rng)
    low, high = intervals(model, d, confidence)
    above, below = low > d.truth, high < d.truth
    worse, better = (above, below) if model.direction == "higher" else (below, above)
    return Cell(float(np.mean(~above & ~below)), float(np.mean(worse)), float(np.mean(better)),
                int(np.sum(high - low <= 0)), studies)


def ships_at_margin(model: Model, disagree: float, repeats: int, block: int,
                    looks: list[int], confidences: list[float], studies: int, seed: int,
                    margin_from: str = "fixed") -> tuple[float, float]:
    """The sequential design end to end, for a variant worse by the margin:
    blocks of ``block`` cases, a look after each block in ``looks`` at its
    confidence; the study ships at the first look whose worse-side bound clears
    the margin and stops when the better-side bound is beyond it. Returns the
    share shipped and how many margins worse the truth is. ``margin_from`` for a
    relative margin: "fixed" (the true control mean's 5 %), "first_look" (5 % of
    the control's mean over the first look's cases, fixed from then on)."""
    rng = np.random.default_rng(seed)
    n_max = looks[-1] * block
    d = draw(model, n_max, repeats, disagree, "margin", studies, rng)
    sign = 1.0 if model.direction == "higher" else -1.0
    margin = np.full(studies, d.margin)
    if model.kind == "amount" and margin_from == "first_look":
        margin = model.margin * d.control[:, : looks[0] * block].mean(axis=1)
    open_ = np.ones(studies, bool)
    shipped = np.zeros(studies, bool)
    for look, conf in zip(looks, confidences, strict=True):
        n = look * block
        sub = Draw(d.diffs[:, :n], d.truth, d.margin, _scale_at(model, d, n))
        low, high = intervals(model, sub, conf)
        worst, best = (low, high) if sign > 0 else (-high, -low)
        ship = open_ & (worst > -margin)
        stop = open_ & (best < -margin)
        shipped |= ship
        open_ &= ~(ship | stop)
    return float(shipped.mean()), -sign * d.truth / d.margin


def _scale_at(model: Model, d: Draw, n: int) -> np.ndarray | None:
    if model.kind != "amount":
        return d.scale
    control = d.control[:, :n]
    variant = control[:, :, None] + d.diffs[:, :n]
    return np.maximum(control.max(axis=1), variant.max(axis=(1, 2)))


# -- the simulated twin as a control variate, end to end ------------------------------------
def twin_of(d: Draw, model: Model, rho: float, fresh: Draw, rng: np.random.Generator
            ) -> np.ndarray:
    """The twin's per-case differences (studies × cases), correlated at ``rho``
    with the paid ones: each case's is the paid difference (negated for a
    negative ``rho``) with probability |rho|, else the case's difference in
    ``fresh``, an independent draw of the same model (so the correlation is
    rho exactly, and the twin is as zero-inflated and as skewed as the paid
    differences). A score's or an amount's twin is also rescaled (× 0.8) and
    off by half the margin: a predictor need be neither right nor calibrated."""
    y, other = d.diffs.mean(axis=2), fresh.diffs.mean(axis=2)
    x = np.where(rng.random(y.shape) < abs(rho), math.copysign(1.0, rho) * y, other)
    return x if model.kind == "pass_fail" else 0.8 * x + 0.5 * d.margin


@dataclass(frozen=True)
class Design:
    """One kind × share × predictor quality × effect, the sequential design end to end."""

    coverage: tuple[float, ...]  # per look, over every study
    worse_miss: tuple[float, ...]  # per look: the interval misses the truth on the worse side
    corrected: tuple[float, ...]  # per look: share of studies whose interval was corrected
    ships: float
    mean_cases: float
    multiplier: float  # median at the first look where corrected (1 where never)
    truth: float
    margin: float
    studies: int


def cv_design(model: Model, disagree: float, rho: float | None, effect: str, block: int,
              looks: list[int], confidences: list[float], studies: int, seed: int,
              interval=None, pool: int | None = None) -> Design:
    """``studies`` sequential studies of one variant on the pool of ``pool``
    cases (default ``looks[-1] * block``) with a twin at ``rho`` (None: no twin, the
    kind's interval alone): at each look the paid cases are the first blocks,
    the rest of the pool is what the twin alone saw, and the interval is
    ``interval(corrected, plain, confidence)`` (default
    :func:`~silas_exp.stats.control_variate.corrected_interval`). The study
    ships at the first look whose worse-side bound clears the margin and stops
    at the first whose better side is beyond it."""
    from silas_exp.stats.control_variate import corrected_interval, corrected_mean
    from silas_exp.stats.intervals import Interval

    interval = interval or corrected_interval
    rng = np.random.default_rng(seed)
    pool = pool or looks[-1] * block
    d = draw(model, pool, 1, disagree, effect, studies, rng)
    x = None if rho is None else twin_of(d, model, rho, draw(model, pool, 1, disagree, effect,
                                                             studies, rng), rng)
    sign = 1.0 if model.direction == "higher" else -1.0
    open_ = np.ones(studies, bool)
    shipped = np.zeros(studies, bool)
    cases = np.full(studies, pool)
    cover, worse_miss, corrected, first_mult = [], [], [], []
    for i, (look, conf) in enumerate(zip(looks, confidences, strict=True)):
        n = look * block
        sub = Draw(d.diffs[:, :n], d.truth, d.margin, _scale_at(model, d, n))
        low, high = intervals(model, sub, conf)
        fixed = np.zeros(studies, bool)
        if x is not None and n < pool:
            y = sub.diffs.mean(axis=2)
            disagreeing = np.sum(np.any(sub.diffs != 0, axis=2), axis=1)
            for s in range(studies):
                plain = Interval(float(y[s].mean()), float(low[s]), float(high[s]), n,
                                 int(disagreeing[s]), "plain")
                c = corrected_mean(y[s], x[s, :n], x[s, n:])
                ci = interval(c, plain, conf)
                if ci is not plain:
                    low[s], high[s], fixed[s] = ci.low, ci.high, True
                    if i == 0:
                        first_mult.append(c.multiplier)
        above, below = low > d.truth, high < d.truth
        cover.append(float(np.mean(~above & ~below)))
        worse_miss.append(float(np.mean(above if sign > 0 else below)))
        corrected.append(float(np.mean(fixed)))
        worst, best = (low, high) if sign > 0 else (-high, -low)
        ship = open_ & (worst > -d.margin)
        stop = open_ & (best < -d.margin)
        shipped |= ship
        cases[open_ & (ship | stop)] = n
        open_ &= ~(ship | stop)
    return Design(tuple(cover), tuple(worse_miss), tuple(corrected), float(shipped.mean()),
                  float(cases.mean()), float(np.median(first_mult)) if first_mult else 1.0,
                  d.truth, d.margin, studies)


# the cells of the twin's table: pass/fail with 6 % of pairs flipping (and a quarter, where
# the correction acts from the first look), a bounded score and a skewed amount, dense
CV_CELLS = ((MODELS[0], 0.06), (MODELS[0], 0.25), (MODELS[1], 1.0), (MODELS[3], 1.0))
CV_RHOS = (None, 1.0, 0.9, 0.7, 0.0, -0.5)
QUICK_STUDIES = 40  # bench/bench_cv.py --quick


def cv_table(studies: int, looks: list[int], confidences: list[float], block: int = 40,
             cells=CV_CELLS, rhos=CV_RHOS, interval=None, seed: int = 7,
             pool: int | None = None) -> list[dict]:
    """Every cell × predictor quality (None: no twin) × effect (A/A, worse by
    the margin) of :func:`cv_design`, each row with its flags: a look whose
    misses exceed 1 − its confidence beyond chance, or whose worse-side misses
    exceed its one-sided level (one-sided binomial tests at 1 %); an A/A ship
    rate under 80 %, and a ship rate at the margin above 2.5 % beyond chance
    (binomial at 1 %). ``pool``: as :func:`cv_design`'s (the first look alone,
    many studies, on the whole pool: ``looks=[1]``, ``pool=320``)."""
    from scipy.stats import binom

    rows = []
    for model, share in cells:
        for rho in rhos:
            for effect in ("none", "margin"):
                d = cv_design(model, share, rho, effect, block, looks, confidences, studies, seed,
                              interval, pool)
                flags = []
                for look, conf, cov, worse in zip(looks, confidences, d.coverage, d.worse_miss,
                                                  strict=True):
                    for what, share_missed, level in (("coverage", 1 - cov, 1 - conf),
                                                      ("worse side", worse, (1 - conf) / 2)):
                        k = round(share_missed * studies)
                        if k and binom.sf(k - 1, studies, level) < 0.01:
                            flags.append(f"{what} at {look * block} cases")
                if effect == "none" and d.ships < 0.8 and len(looks) > 1:
                    flags.append("A/A ships under 80 %")
                k = round(d.ships * studies)
                if effect == "margin" and len(looks) > 1 and k and binom.sf(k - 1, studies, 0.025) < 0.01:
                    flags.append("ships at the margin above 2.5 %")
                rows.append({"metric": model.name, "kind": model.kind, "disagree": share,
                             "rho": rho, "effect": effect, **d.__dict__, "flags": flags})
    return rows
