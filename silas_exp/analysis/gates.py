"""``--fail-under metric=value`` gates (fixture-benchmark style): a metric
below its floor (above it, for lower-is-better metrics) fails the gate."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from silas_exp.errors import ConfigError
from silas_exp.metrics.registry import find_spec


@dataclass(frozen=True)
class GateResult:
    metric: str
    bound: float
    value: float
    passed: bool

    def line(self) -> str:
        op = "<=" if _lower(self.metric) else ">="
        mark = "ok  " if self.passed else "FAIL"
        return f"{mark} {self.metric} = {self.value:.4f} (required {op} {self.bound})"


def _lower(key: str) -> bool:
    found = find_spec(key)
    return found is not None and found.direction == "lower"


def parse_gates(specs: Sequence[str]) -> dict[str, float]:
    gates: dict[str, float] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        try:
            if not sep or not key:
                raise ValueError
            gates[key.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--fail-under {spec!r}: expected metric=value, "
                              "e.g. --fail-under context.retrieval_relevance=0.7") from None
    return gates


def check_gates(metrics: Mapping[str, float], gates: Mapping[str, float]) -> list[GateResult]:
    results = []
    for key, bound in gates.items():
        if key not in metrics:
            raise ConfigError(f"--fail-under {key}: no such metric; known: {sorted(metrics)[:12]} …")
        found = find_spec(key)
        if found is None or found.direction == "none":
            raise ConfigError(f"--fail-under {key}: the metric has no declared direction, so it "
                              "cannot be gated; gate a metric that is better higher or lower")
        value = metrics[key]
        ok = not math.isnan(value) and (value <= bound if _lower(key) else value >= bound)
        results.append(GateResult(key, bound, value, ok))
    return results
