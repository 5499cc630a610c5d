"""A metric's declared facts (:class:`MetricSpec`) and the table of declared
specs: the lowest layer of the metric registry, which the built-in catalog and
the plug-in metrics declare into (``silas_exp.metrics.registry`` reads it)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower", "none"]
SuiteKind = Literal["replay", "probe", "mixed"]  # mixed: replay and probe cases in one suite
MarginKind = Literal["absolute", "relative"]
# what kind of values a metric has, which picks its paired interval (silas_exp.stats.intervals):
# 0/1 per case run, a score in known bounds, or an amount (counts, tokens, ratios: no upper bound)
IntervalKind = Literal["pass_fail", "bounded", "amount"]

_KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?$")


@dataclass(frozen=True)
class MetricSpec:
    key: str  # canonical key, or a family pattern ending in ".*"
    direction: Direction
    unit: str
    meaning: str
    # suite kinds whose ablations gate on this metric by default
    gate: tuple[SuiteKind, ...] = ()
    # suite kinds whose ablation reports show it (gated metrics always are)
    report: tuple[SuiteKind, ...] = ()
    # non-inferiority margin: how much worse (in the worse direction) still counts
    # as "no worse"; relative margins are a share of the control's mean
    margin: float | None = None
    margin_kind: MarginKind = "absolute"
    # the kind of its values and, for a bounded one, the bounds; None: treated as an amount
    kind: IntervalKind | None = None
    bounds: tuple[float, float] | None = None
    per_case: bool = True  # has a value per case (can be paired), else run-level only
    # how the answers were obtained and what that was billed (an API call or the response
    # cache, a prompt-cache write or read, a retry): which call reaches the API or the cache
    # first decides it, with cases in flight or jobs in parallel, not what the answers were.
    # Operational, as latency is: scripts/compare_sweeps.py reports it apart from outcomes
    billing: bool = False
    # what people read in reports and the console ("retrieval relevance"); the key stays the
    # identity in MLflow and in config. Empty: metrics.names derives it (nDCG@10) or shows the key
    name: str = ""
    # the run-level metric a job logs for this per-case one (summary.pass: summary.pass_rate);
    # empty: the same key (the mean over the job's cases)
    run_key: str = ""

    def __post_init__(self) -> None:
        if not _KEY.match(self.key):
            raise ValueError(f"metric key {self.key!r} must be dotted lowercase [a-z0-9_] parts")
        if self.gate and (self.direction == "none" or self.margin is None):
            raise ValueError(f"{self.key}: a gated metric needs a direction and a margin")
        if (self.kind == "bounded") != (self.bounds is not None):
            raise ValueError(f"{self.key}: bounds go with kind='bounded' (and it needs them)")

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    def margin_for(self, control_mean: float) -> float:
        if self.margin is None:
            return float("nan")
        return self.margin * abs(control_mean) if self.margin_kind == "relative" else self.margin

    @property
    def interval_kind(self) -> IntervalKind:
        return self.kind or "amount"

    def arrow(self) -> str:
        return {"higher": "higher is better", "lower": "lower is better"}.get(self.direction,
                                                                              "no direction")


_SPECS: dict[str, MetricSpec] = {}


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    if spec.key in _SPECS and not replace and _SPECS[spec.key] != spec:
        raise ValueError(f"metric {spec.key!r} is already declared differently")
    _SPECS[spec.key] = spec
    return spec


def declared(key: str) -> MetricSpec | None:
    """The spec declared for ``key``: exactly, else by its family pattern (``probe.dim.*``)."""
    if key in _SPECS:
        return _SPECS[key]
    parts = key.split(".")
    for n in range(len(parts) - 1, 0, -1):
        spec = _SPECS.get(".".join(parts[:n]) + ".*")
        if spec is not None:
            return spec
    return None


def all_specs() -> list[MetricSpec]:
    return sorted(_SPECS.values(), key=lambda s: s.key)
