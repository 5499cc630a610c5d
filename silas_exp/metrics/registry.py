"""One declared spec per metric: canonical key, direction, unit, meaning, and
whether (and with which non-inferiority margin) it gates a ship decision.

Reports, gates, regressions, compare, the summary table and plots read a
metric's direction from here; nothing infers it from the key's spelling. A key
is found exactly, else by its family pattern (``probe.dim.*``). Metrics of
plug-ins are declared with :func:`register_metric`. ``run_job`` refuses to
return a metric without a spec, so an undeclared metric fails in tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from silas_exp.errors import ConfigError

Direction = Literal["higher", "lower", "none"]
SuiteKind = Literal["replay", "probe", "mixed"]  # mixed: replay and probe cases in one suite
MarginKind = Literal["absolute", "relative"]

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
    per_case: bool = True  # has a value per case (can be paired), else run-level only

    def __post_init__(self) -> None:
        if not _KEY.match(self.key):
            raise ValueError(f"metric key {self.key!r} must be dotted lowercase [a-z0-9_] parts")
        if self.gate and (self.direction == "none" or self.margin is None):
            raise ValueError(f"{self.key}: a gated metric needs a direction and a margin")

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    def margin_for(self, control_mean: float) -> float:
        if self.margin is None:
            return float("nan")
        return self.margin * abs(control_mean) if self.margin_kind == "relative" else self.margin

    def arrow(self) -> str:
        return {"higher": "higher is better", "lower": "lower is better"}.get(self.direction,
                                                                              "no direction")


_SPECS: dict[str, MetricSpec] = {}


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    if spec.key in _SPECS and not replace and _SPECS[spec.key] != spec:
        raise ValueError(f"metric {spec.key!r} is already declared differently")
    _SPECS[spec.key] = spec
    return spec


def find_spec(key: str) -> MetricSpec | None:
    if key in _SPECS:
        return _SPECS[key]
    parts = key.split(".")
    for n in range(len(parts) - 1, 0, -1):
        spec = _SPECS.get(".".join(parts[:n]) + ".*")
        if spec is not None:
            return spec
    from silas_exp.metrics.plugins import declare_installed  # plug-ins register on first use

    return declare_installed(key)


def spec(key: str) -> MetricSpec:
    found = find_spec(key)
    if found is None:
        raise ConfigError(f"metric {key!r} has no declared spec (direction, unit, meaning); "
                          "declare it with silas_exp.metrics.registry.register_metric")
    return found


def direction(key: str) -> Direction:
    return spec(key).direction


def undeclared(keys: Iterable[str]) -> list[str]:
    return sorted(k for k in keys if find_spec(k) is None)


def all_specs() -> list[MetricSpec]:
    return sorted(_SPECS.values(), key=lambda s: s.key)


def _kinds(kind: SuiteKind) -> tuple[str, ...]:
    return ("replay", "probe") if kind == "mixed" else (kind,)


def gated_for(kind: SuiteKind) -> list[str]:
    """A mixed suite gates what either kind gates (each metric on the cases that have it)."""
    return [s.key for s in all_specs() if set(_kinds(kind)) & set(s.gate)]


def reported_for(kind: SuiteKind) -> list[str]:
    """Gated metrics first, then the other reported ones."""
    gated = gated_for(kind)
    return gated + [s.key for s in all_specs()
                    if set(_kinds(kind)) & set(s.report) and s.key not in gated]


def markdown() -> str:
    """docs/metrics.md: every declared metric (scripts/metrics_doc.py writes it)."""
    lines = ["# Metrics", "",
             "Generated from the metric registry (`silas_exp/metrics/catalog.py`) by "
             "`python scripts/metrics_doc.py`; a test keeps it in step. *Gated* says which suite "
             "kinds' ablations gate on the metric by default; the margin is the largest loss a "
             "non-inferiority verdict still accepts (`analysis.margins.<key>` overrides it).", "",
             "| key | better | unit | gated | margin | per case | meaning |",
             "|---|---|---|---|---|---|---|"]
    for s in all_specs():
        margin = "" if s.margin is None else (
            f"{s.margin:g}" + (" × control mean" if s.margin_kind == "relative" else ""))
        better = {"higher": "higher", "lower": "lower"}.get(s.direction, "—")
        lines.append(f"| `{s.key}` | {better} | {s.unit} | {', '.join(s.gate)} | {margin} | "
                     f"{'yes' if s.per_case else 'no'} | {s.meaning} |")
    return "\n".join(lines) + "\n"


from silas_exp.metrics import catalog as _catalog  # noqa: E402,F401  (declares the built-ins)
