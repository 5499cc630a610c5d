"""The comparison table's columns, declared once. ``ablation.md``,
``ablation.html`` and the parent run's ``ablation_table.json`` are rendered
from :data:`COLUMNS`: a statistic added here shows in all three."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from silas_exp.analysis.result import AblationResult, Comparison


def _f(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _p(x: float) -> str:
    return "—" if math.isnan(x) else ("<0.001" if x < 0.001 else f"{x:.3f}")


def _call(c: Comparison) -> str:
    return (c.call.value if c.call else "") + (f" (≈{c.n_needed} cases)" if c.n_needed else "")


@dataclass(frozen=True)
class Column:
    """One column: its header, its text in a row, and the raw values it
    stands for in the data table (``field name -> value``)."""

    header: str
    text: Callable[[Comparison], str]
    fields: tuple[tuple[str, Callable[[Comparison], Any]], ...] = ()


COLUMNS: tuple[Column, ...] = (
    Column("variant", lambda c: c.variant, (("variant", lambda c: c.variant),)),
    Column("mean ± sd (repeats)", lambda c: f"{_f(c.mean)} ± {_f(c.sd)}",
           (("mean", lambda c: c.mean), ("sd", lambda c: c.sd))),
    Column("Δ vs control [CI]",
           lambda c: f"{c.delta:+.4f} [{c.ci_low:+.4f}, {c.ci_high:+.4f}]",
           (("delta", lambda c: c.delta), ("ci_low", lambda c: c.ci_low),
            ("ci_high", lambda c: c.ci_high))),
    Column("margin", lambda c: _f(c.margin, 3), (("margin", lambda c: c.margin),)),
    Column("call", _call, (("call", lambda c: c.call.value if c.call else ""),)),
    Column("p", lambda c: _p(c.p_perm), (("p_perm", lambda c: c.p_perm),)),
    Column("p Wilcoxon", lambda c: _p(c.p_wilcoxon), (("p_wilcoxon", lambda c: c.p_wilcoxon),)),
    Column("p adj", lambda c: _p(c.p_adjusted), (("p_adjusted", lambda c: c.p_adjusted),)),
    Column("dz", lambda c: _f(c.dz, 2), (("dz", lambda c: c.dz),)),
    Column("cases × repeats (pairs)", lambda c: f"{c.n_cases} × {c.n_repeats} ({c.n_pairs})",
           (("cases", lambda c: c.n_cases), ("repeats", lambda c: c.n_repeats),
            ("pairs", lambda c: c.n_pairs))),
    Column("reading", lambda c: c.verdict.value + (f" (SPRT: {c.sprt})" if c.sprt else ""),
           (("reading", lambda c: c.verdict.value),)),
)


def headers() -> list[str]:
    return [col.header for col in COLUMNS]


def cells(c: Comparison) -> list[str]:
    return [col.text(c) for col in COLUMNS]


def control_cells(r: AblationResult, metric: str) -> list[str]:
    """The control's row: its name and its own mean ± sd, the rest empty."""
    cm, cs = r.control_summary.get(metric, (math.nan, math.nan))
    return [f"{r.control} (control)", f"{_f(cm)} ± {_f(cs)}"] + [""] * (len(COLUMNS) - 2)


def data_table(r: AblationResult) -> dict[str, list]:
    """Every comparison as one row per (variant, metric), the columns' raw
    values (NaN as None), for MLflow's ``log_table``."""
    fields = [f for col in COLUMNS for f in col.fields]
    names = [fields[0][0], "metric", "gated", "verdict"] + [name for name, _ in fields[1:]]
    table: dict[str, list] = {name: [] for name in names}
    for metric in r.metrics:
        for c in r.table(metric):
            values = [fields[0][1](c), metric, metric in r.gated,
                      r.verdicts[c.variant].outcome.value] + [get(c) for _, get in fields[1:]]
            for name, v in zip(names, values, strict=True):
                table[name].append(None if isinstance(v, float) and math.isnan(v) else v)
    return table
