"""Settings of the end-of-sweep analysis (config group ``analysis``): which
variant is the control, which metrics gate the verdict, their margins, and
the confidence of the non-inferiority bound. Validated once at start-up."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from silas_exp.metrics.registry import find_spec

# §19.5 control per swept group: heuristic-only eviction for scorer sweeps, the
# default strategy for eviction sweeps (hydra.sweeper.controls adds them to sweeps)
DEFAULT_CONTROLS = {"scorer": "heuristic", "eviction": "two_tier"}


def _known_metric(key: str, where: str) -> str:
    found = find_spec(key)
    if found is None:
        raise ValueError(f"{where}: {key!r} is not a declared metric (see docs/metrics.md)")
    return key


class AnalysisSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # a variant of the sweep ("scorer=weights"), or "baseline" for the suite's promoted
    # baseline; null: the baseline if one is promoted, else the §19.5 control
    control: str | None = None
    use_baseline: bool = True
    controls: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_CONTROLS))
    gate: list[str] | None = None  # null: the registry's defaults for the suite kind
    margins: dict[str, float] = Field(default_factory=dict)  # metric -> margin (metric units)
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)  # two-sided; the bound is one-sided
    n_resamples: int = Field(default=1000, ge=100)
    correction: Literal["holm", "bh"] = "holm"
    seed: int = Field(default=0, ge=0)
    sensitivity_floor: float = Field(default=1.0, ge=0.0)  # oracle-random gap in per-case SDs
    # below this many paired cases a CI says too little: a gated metric stays undecided
    # (bench/bench_verdict.py: the expanded interval holds its level from 6 cases)
    min_cases: int = Field(default=6, ge=2)
    # a paid study (a real model) corrects its paired differences with its simulated
    # twin, replayed free on the whole pool (docs/analysis.md, "Fewer paid cases")
    twin: bool = True

    @field_validator("gate")
    @classmethod
    def _gate_known(cls, v: list[str] | None) -> list[str] | None:
        for key in v or []:
            _known_metric(key, "analysis.gate")
            if find_spec(key).direction == "none":
                raise ValueError(f"analysis.gate: {key!r} has no direction (better higher or "
                                 "lower), so it cannot gate a verdict")
        return v

    @field_validator("margins")
    @classmethod
    def _margins_known(cls, v: dict[str, float]) -> dict[str, float]:
        for key, margin in v.items():
            _known_metric(key, "analysis.margins")
            if not margin >= 0:
                raise ValueError(f"analysis.margins.{key}={margin}: a margin is >= 0")
        return v
