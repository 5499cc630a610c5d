"""Plug-in metrics: a declared :class:`~silas_exp.metrics.registry.MetricSpec`
(direction, unit, meaning, gate) plus a function of one replayed case, from
an installed package (entry point group ``silas_exp.metrics``, named by the
metric key). A run computes the ones its config lists in ``metrics.plugins``;
their values join the built-in per-case metrics, so the summary, ablation,
gates and regressions treat them alike."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from silas_exp.errors import ConfigError
from silas_exp.metrics.spec import MetricSpec, register_metric
from silas_exp.plugins import Kind, Registry

# (stats: ReplayStats, oracle: NeedOracle, horizon: int) -> value for the case
CaseMetric = Callable[[Any, Any, int], float]

METRICS = Registry("metric", key="metrics.plugins", group="silas_exp.metrics",
                   builtins="silas_exp.metrics.catalog", capabilities=(),
                   example="metrics.plugins=[my_pkg.my_metric]")


class MetricSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


def metric_kind(spec: MetricSpec, compute: CaseMetric, *, description: str = "") -> Kind:
    """A plug-in metric for an entry point in group ``silas_exp.metrics`` whose
    name is ``spec.key``. ``compute(stats, oracle, horizon)`` sees the case's
    replay observations and its ground truth, after the replay."""
    if not spec.per_case:
        raise ConfigError(f"plug-in metric {spec.key!r}: a case metric must be per_case=True")
    return METRICS.kind(spec.key, MetricSettings, lambda settings, granted: compute,
                        description=description or spec.meaning, spec=spec)


def case_metric_functions(names: Iterable[str]) -> dict[str, CaseMetric]:
    """The listed plug-in metrics, their specs declared; unknown names are a ConfigError."""
    out: dict[str, CaseMetric] = {}
    for name in names:
        kind = METRICS.get(name)
        register_metric(kind.trait("spec"))
        out[name] = kind.factory(MetricSettings(name=name), None)
    return out


def declare_installed(key: str) -> MetricSpec | None:
    """The spec of an installed plug-in metric named ``key`` (declared on the way),
    for processes that read results without running a job (analysis, uploader)."""
    try:
        kind = METRICS.get(key)
    except ConfigError:
        return None
    return register_metric(kind.trait("spec"))
