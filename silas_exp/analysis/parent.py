"""What a sweep's parent run should say about the result, as plain data: what
was swept, a description (the decision, then the verdict table), a few metrics
for charts, every per-variant statistic as a table, verdict tags, the reports.
The end of the sweep (silas_exp.run.sweep_end) puts it in the sweep's
``SweepEnd``, which the tracker logs to the parent run."""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field

from silas_exp.analysis.ablation import AblationResult
from silas_exp.analysis.decision import verdict_counts
from silas_exp.analysis.report import decision_lines, verdict_lines, verdict_rule
from silas_exp.stats import Outcome

ARTIFACTS = ("ablation.html",)  # ablation.md and the plots are logged with the sweep
STATS_TABLE = "ablation_table.json"  # per-variant statistics, logged with log_table
PARENT_METRICS = 30  # a sweep's parent run: a handful of charts, not one per statistic

_UNSAFE = re.compile(r"[^\w.\- /]")


@dataclass
class ParentReport:
    """``description``: markdown; ``artifacts``: paths relative to the sweep folder."""

    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    description: str | None = None
    artifacts: list[str] = field(default_factory=list)
    tables: dict[str, dict[str, list]] = field(default_factory=dict)  # name -> columns


def safe_name(variant: str) -> str:
    """A variant as an MLflow key part: "scorer=weights,eviction=x" -> "scorer_weights.eviction_x"."""
    return _UNSAFE.sub("_", variant.replace(",", ".").replace("=", "_"))


def sweep_params(command: str, swept: list[str], added_control: str | None) -> dict[str, str]:
    """``swept.<key>`` = the values swept, ``fixed.<key>`` = the other overrides."""
    params: dict[str, str] = {}
    for token in shlex.split(command)[3:] if command else []:
        key, sep, value = token.partition("=")
        if not sep or token.startswith("-"):
            continue
        key = key.lstrip("+~")
        params[f"{'swept' if key in swept else 'fixed'}.{key}"[:250]] = value[:500]
    if added_control:
        params["swept.control_added"] = added_control
    return params


def parent_metrics(r: AblationResult) -> dict[str, float]:
    """A handful of metrics named for charts (at most PARENT_METRICS, the sweep's
    job counts included): each variant's difference from the control on the
    gated metrics first (``delta.<variant>.<metric>``: the run page cuts long
    names, so the variant comes first), then the verdict counts. Every
    statistic is in the ``ablation_table.json`` table."""
    counts = {f"verdict.{o.value}": float(sum(vv.outcome is o for vv in r.verdicts.values()))
              for o in Outcome}
    room = PARENT_METRICS - len(counts) - 2  # sweep.jobs, sweep.failed_jobs
    short = chart_names(list(r.verdicts))
    out: dict[str, float] = {}  # in the order the run page lists them: gated first
    for metric in r.gated:
        for c in r.table(metric):
            if len(out) < room and not math.isnan(c.delta):
                out[f"delta.{short[c.variant]}.{metric}"[:250]] = float(c.delta)
    return {**out, **counts}


def chart_names(variants: list[str]) -> dict[str, str]:
    """Variants by their values ("scorer=online" -> "online"), so a metric's
    name shows the variant before the UI cuts it; the full name if two collide."""
    short = {v: safe_name("_".join(p.partition("=")[2] or p for p in v.split(",")))
             for v in variants}
    if len(set(short.values())) < len(short):
        return {v: safe_name(v) for v in variants}
    return short


def stats_table(r: AblationResult) -> dict[str, list]:
    """Every per-variant statistic, one row per (variant, metric), for ``log_table``."""
    cols = ("variant", "metric", "gated", "verdict", "mean", "sd", "delta", "ci_low", "ci_high",
            "margin", "call", "p_adjusted", "dz", "cases", "repeats")
    table: dict[str, list] = {c: [] for c in cols}

    def row(*values) -> None:
        for c, v in zip(cols, values, strict=True):
            table[c].append(None if isinstance(v, float) and math.isnan(v) else v)

    for metric in r.metrics:
        cmean, csd = r.control_summary.get(metric, (math.nan, math.nan))
        gated = metric in r.gated
        row(r.control, metric, gated, "control", cmean, csd, *([math.nan] * 4), "", math.nan,
            math.nan, None, None)
        for c in r.table(metric):
            row(c.variant, metric, gated, r.verdicts[c.variant].outcome.value, c.mean, c.sd,
                c.delta, c.ci_low, c.ci_high, c.margin, c.call.value if c.call else "",
                c.p_adjusted, c.dz, c.n_cases, c.n_repeats)
    return table


def parent_summary(r: AblationResult, swept: list[str] | None = None,
                   added_control: str | None = None) -> ParentReport:
    """The parent run's description opens with the decision in one sentence
    (collapsed, the UI shows only the first lines), then the verdict table of
    ``ablation.md``; its name ends with the verdict counts."""
    lines = [*decision_lines(r), "", *verdict_lines(r), "",
             f"Every statistic: the table `{STATS_TABLE}`; the full report with plots: "
             "`ablation.html` (`ablation.md` for text).", "", verdict_rule(r)]
    lines[0] += f" Control: **{r.control}**, {r.control_reason}."  # which control, and why
    swept = swept or []
    what = " ".join(t for t in shlex.split(r.command)[3:] if "," in t) if r.command else ""
    tags = {"silas.control": r.control, "silas.suite_kind": r.suite_kind,
            "silas.gated": ",".join(r.gated),
            "mlflow.runName": f"sweep-{r.sweep_id}" + (f" {what}" if what else "")
                              + f" · {verdict_counts(r)}"}
    for v, vv in sorted(r.verdicts.items()):
        tags[f"silas.verdict.{safe_name(v)}"] = vv.outcome.value
    return ParentReport(params=sweep_params(r.command, swept, added_control),
                        metrics=parent_metrics(r), tags=tags, description="\n".join(lines),
                        artifacts=list(ARTIFACTS), tables={STATS_TABLE: stats_table(r)})
