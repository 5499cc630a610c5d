"""The comparison table's columns, declared once. ``ablation.md``,
``ablation.html`` and the parent run's ``ablation_table.json`` are rendered
from :data:`COLUMNS`: a statistic added here shows in all three. Every mean
is on the pairs of cases and repeats that the difference is computed on."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from silas_exp.analysis.decision import margin_text, needed_cell
from silas_exp.analysis.result import AblationResult, Comparison
from silas_exp.metrics.numbers import interval, num, p_value, rounded


def _mean(mean: float, sd: float) -> str:
    return num(mean) + ("" if math.isnan(sd) else f" ± {num(sd)}")


def _rounded(x: Any) -> Any:
    """A float as the table shows it (four significant digits), NaN as None."""
    if isinstance(x, float):
        return None if math.isnan(x) else rounded(x)
    return x


def _call(c: Comparison) -> str:
    return (c.call.value if c.call else "") + (f" ({needed_cell(c.n_needed, c.pool_cases)})"
                                               if c.n_needed else "")


@dataclass(frozen=True)
class Column:
    """One column: its header, its text in a row, and the raw values it
    stands for in the data table (``field name -> value``)."""

    header: str
    text: Callable[[Comparison], str]
    fields: tuple[tuple[str, Callable[[Comparison], Any]], ...] = ()


COLUMNS: tuple[Column, ...] = (
    Column("variant", lambda c: c.variant, (("variant", lambda c: c.variant),)),
    # sd over repeats of each repeat's mean over cases: none with one repeat per case (the
    # default), and the data table's field names say so beside its ``repeats`` column
    Column("variant mean (± sd over repeats)", lambda c: _mean(c.mean, c.sd),
           (("mean", lambda c: c.mean), ("sd_over_repeats", lambda c: c.sd))),
    Column("control mean on the same cases", lambda c: _mean(c.control_mean, c.control_sd),
           (("control_mean", lambda c: c.control_mean),
            ("control_sd_over_repeats", lambda c: c.control_sd))),
    Column("Δ vs control [CI]", lambda c: interval(c.delta, c.ci_low, c.ci_high),
           (("delta", lambda c: c.delta), ("ci_low", lambda c: c.ci_low),
            ("ci_high", lambda c: c.ci_high))),
    Column("margin", lambda c: margin_text(c.margin), (("margin", lambda c: c.margin),)),
    Column("call", _call, (("call", lambda c: c.call.value if c.call else ""),)),
    Column("p", lambda c: p_value(c.p_perm), (("p_perm", lambda c: c.p_perm),)),
    Column("p Wilcoxon", lambda c: p_value(c.p_wilcoxon), (("p_wilcoxon", lambda c: c.p_wilcoxon),)),
    Column("p adj", lambda c: p_value(c.p_adjusted), (("p_adjusted", lambda c: c.p_adjusted),)),
    Column("dz", lambda c: num(c.dz), (("dz", lambda c: c.dz),)),
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


def data_table(r: AblationResult) -> dict[str, list]:
    """Every comparison as one row per (variant, metric), the columns' values
    (four significant digits, NaN as None), for MLflow's ``log_table``."""
    fields = [f for col in COLUMNS for f in col.fields]
    names = [fields[0][0], "metric", "gated", "verdict", "warnings"] + [
        name for name, _ in fields[1:]]
    table: dict[str, list] = {name: [] for name in names}
    for metric in r.metrics:
        for c in r.table(metric):
            values = [fields[0][1](c), metric, metric in r.gated,
                      r.verdicts[c.variant].outcome.value,
                      len(r.warnings.get(c.variant, []))] + [get(c) for _, get in fields[1:]]
            for name, v in zip(names, values, strict=True):
                table[name].append(_rounded(v))
    return table
