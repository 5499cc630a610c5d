"""One declared spec per metric: canonical key, direction, unit, meaning, and
whether (and with which non-inferiority margin) it gates a ship decision.

Reports, gates, regressions, compare, the summary table and plots read a
metric's direction from here; nothing infers it from the key's spelling. A key
is found exactly, else by its family pattern (``probe.dim.*``). Metrics of
plug-ins are declared with :func:`register_metric`. ``run_job`` refuses to
return a metric without a spec, so an undeclared metric fails in tests.
"""

from __future__ import annotations

from collections.abc import Iterable

from silas_exp.errors import ConfigError
from silas_exp.metrics import catalog as _catalog  # noqa: F401  (declares the built-ins)
from silas_exp.metrics.plugins import declare_installed
from silas_exp.metrics.spec import (
    Direction,
    MarginKind,
    MetricSpec,
    SuiteKind,
    all_specs,
    declared,
    register_metric,
)

__all__ = ["Direction", "MarginKind", "MetricSpec", "SuiteKind", "all_specs", "declared",
           "direction", "find_spec", "gate_of", "gated_for", "markdown", "register_metric",
           "reported_for", "run_key", "spec", "undeclared"]


def find_spec(key: str) -> MetricSpec | None:
    found = declared(key)
    return found if found is not None else declare_installed(key)  # plug-ins register on first use


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


ALWAYS_GATED = ("summary.pass", "summary.error")


def _kinds(kind: SuiteKind) -> tuple[str, ...]:
    return ("replay", "probe") if kind == "mixed" else (kind,)


def gated_for(kind: SuiteKind) -> list[str]:
    """A mixed suite gates what either kind gates (each metric on the cases that have it)."""
    return [s.key for s in all_specs() if set(_kinds(kind)) & set(s.gate)]


def gate_of(kind: SuiteKind, chosen: Iterable[str] | None = None) -> list[str]:
    """What a verdict gates on: the metrics chosen (``analysis.gate``), else the
    suite kind's, and always pass and errors (a variant that errors more never ships)."""
    gated = list(chosen) if chosen else gated_for(kind)
    return gated + [k for k in ALWAYS_GATED if k not in gated]


def run_key(key: str) -> str:
    """The run-level metric a job logs for ``key`` (its declared ``run_key``, else ``key``)."""
    return spec(key).run_key or key


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
             "non-inferiority verdict still accepts (`analysis.margins.<key>` overrides it; a relative "
             "one is fixed once per study, docs/analysis.md). *Kind* picks the paired interval "
             "(`silas_exp/stats/intervals.py`): pass/fail, a score in its bounds, or an amount "
             "(no upper bound; also what an undeclared kind is read as).", "",
             "| key | better | unit | kind | gated | margin | per case | meaning |",
             "|---|---|---|---|---|---|---|---|"]
    for s in all_specs():
        margin = "" if s.margin is None else (
            f"{s.margin:g}" + (" × control mean" if s.margin_kind == "relative" else ""))
        better = {"higher": "higher", "lower": "lower"}.get(s.direction, "—")
        kind = {"pass_fail": "pass/fail", "amount": "amount", None: ""}.get(
            s.kind, f"score in [{s.bounds[0]:g}, {s.bounds[1]:g}]" if s.bounds else "")
        lines.append(f"| `{s.key}` | {better} | {s.unit} | {kind} | {', '.join(s.gate)} | {margin} | "
                     f"{'yes' if s.per_case else 'no'} | {s.meaning} |")
    return "\n".join(lines) + "\n"

