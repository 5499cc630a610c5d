"""Calibration: turn feedback into better scorer weights and prompt guidance.

* Offline weights: L2-regularised logistic regression of "kept back" on the
  candidate features, shrunk toward the control's weights (so sparse data
  moves little). Hand-written on scipy.optimize because the project carries no
  scikit-learn and needs the shrink-toward-prior penalty.
* Prompt guidance: exclusion rates by zone and age bucket turned into short
  instructions for the scorer prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from silas_exp.feedback.store import FeedbackDataset, FeedbackStore

AGE_BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("0_2", 0, 2), ("3_9", 3, 9), ("10_29", 10, 29), ("30_plus", 30, 10**9),
)


def age_bucket(age: int) -> str:
    for name, lo, hi in AGE_BUCKETS:
        if lo <= age <= hi:
            return name
    return AGE_BUCKETS[-1][0]


@dataclass(frozen=True)
class Rate:
    rate: float
    n: int


@dataclass(frozen=True)
class ExclusionRates:
    overall: Rate
    by_zone: dict[str, Rate]
    by_age: dict[str, Rate]
    by_scope: dict[str, Rate]

    def as_metrics(self) -> dict[str, float]:
        out = {"feedback.exclusion_rate": self.overall.rate}
        out.update({f"feedback.exclusion_rate.zone.{k}": v.rate for k, v in self.by_zone.items()})
        out.update({f"feedback.exclusion_rate.age.{k}": v.rate for k, v in self.by_age.items()})
        return out


Counts = dict[str, tuple[int, int]]  # key -> (candidates, kept back)


def _counts(labels: np.ndarray, keys: Iterable) -> Counts:
    out: dict[str, list[int]] = {}
    for key, label in zip(keys, labels.tolist(), strict=True):
        c = out.setdefault(str(key), [0, 0])
        c[0] += 1
        c[1] += int(label)
    return {k: (n, kept) for k, (n, kept) in out.items()}


def _rates(counts: Counts) -> dict[str, Rate]:
    return {k: Rate(kept / n, n) for k, (n, kept) in sorted(counts.items())}


def rates_from_counts(by_zone: Counts, by_age: Counts, by_scope: Counts) -> ExclusionRates:
    n = sum(c[0] for c in by_zone.values())
    kept = sum(c[1] for c in by_zone.values())
    overall = Rate(kept / n if n else float("nan"), n)
    return ExclusionRates(overall, _rates(by_zone), _rates(by_age), _rates(by_scope))


def exclusion_rates(data: FeedbackDataset) -> ExclusionRates:
    y = data.y
    buckets = [age_bucket(int(a)) for a in data.ages]
    return rates_from_counts(_counts(y, data.zones.tolist()), _counts(y, buckets),
                             _counts(y, data.scopes.tolist()))


def stored_exclusion_rates(store: FeedbackStore) -> ExclusionRates:
    """``exclusion_rates`` of everything in ``store``, counted by the database
    (a 10,000-case job holds millions of candidates)."""
    by_age: dict[str, tuple[int, int]] = {}
    for age, (n, kept) in store.label_counts("age_turns").items():
        a, b = by_age.get(age_bucket(int(age)), (0, 0))
        by_age[age_bucket(int(age))] = (a + n, b + kept)
    return rates_from_counts({str(k): v for k, v in store.label_counts("zone").items()}, by_age,
                             {str(k): v for k, v in store.label_counts("scope_id").items()})


def fit_logistic(
    X: np.ndarray, y: np.ndarray, prior: np.ndarray, l2: float = 1.0, max_iter: int = 200
) -> np.ndarray:
    """argmin_w  mean log-loss(y, σ(Xw)) + l2/n · ||w − prior||²  (l2 counts as
    pseudo-records: with few records the prior dominates, with many the data)."""
    n = max(len(y), 1)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = X @ w
        # log(1 + e^z) computed stably
        ll = np.logaddexp(0.0, z) - y * z
        diff = w - prior
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
        grad = X.T @ (p - y) / n + 2 * l2 / n * diff
        return float(ll.mean() + l2 / n * diff @ diff), grad

    from scipy.optimize import minimize  # lazy: ~0.5 s import, only calibrated scorers fit

    res = minimize(loss, prior.copy(), jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    return np.asarray(res.x)


def guidance_lines(rates: ExclusionRates, min_n: int = 20, min_gap: float = 0.05) -> list[str]:
    """One instruction per zone / age bucket whose keep-back rate departs from the overall."""
    lines: list[str] = []
    base = rates.overall.rate
    for label, table in (("zone", rates.by_zone), ("age", rates.by_age)):
        for key, r in table.items():
            if r.n < min_n or abs(r.rate - base) < min_gap:
                continue
            direction = "score these higher" if r.rate > base else "score these lower"
            lines.append(
                f"- {label}={key}: kept back in {r.rate:.0%} of proposals "
                f"(overall {base:.0%}); {direction}"
            )
    return lines


@dataclass(frozen=True)
class Calibration:
    """What offline calibration hands to the calibrated scorers."""

    weights: np.ndarray
    rates: ExclusionRates
    guidance: list[str] = field(default_factory=list)
    n_candidates: int = 0


def calibrate(data: FeedbackDataset, prior: np.ndarray, l2: float = 1.0) -> Calibration:
    if len(data) == 0:
        raise ValueError("no feedback records to calibrate from")
    weights = fit_logistic(data.X, data.y, prior, l2=l2)
    rates = exclusion_rates(data)
    return Calibration(weights, rates, guidance_lines(rates), len(data))
