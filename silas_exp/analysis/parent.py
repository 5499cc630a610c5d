"""What a sweep's parent run should say about the result, as plain data: what
was swept, a description (the decision, then the verdict table), a few metrics
for charts, every per-variant statistic as a table, verdict tags, the reports.
The end of the sweep (silas_exp.run.sweep_end) puts it in the sweep's
``SweepEnd``, which the tracker logs to the parent run."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

from silas_exp.analysis.columns import data_table
from silas_exp.analysis.decision import verdict_counts
from silas_exp.analysis.report import decision_lines, paired_table, verdict_lines, verdict_rule
from silas_exp.analysis.result import AblationResult, Comparison
from silas_exp.metrics.names import chart_names
from silas_exp.metrics.numbers import rounded
from silas_exp.metrics.registry import spec
from silas_exp.stats import Outcome

ARTIFACTS = ("ablation.html",)  # ablation.md and the plots are logged with the sweep
STATS_TABLE = "ablation_table.json"  # per-variant statistics, logged with log_table
PARENT_METRICS = 30  # a sweep's parent run: a handful of charts, not one per statistic

@dataclass
class ParentReport:
    """``description``: markdown; ``artifacts``: paths relative to the sweep folder."""

    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    description: str | None = None
    artifacts: list[str] = field(default_factory=list)
    tables: dict[str, dict[str, list]] = field(default_factory=dict)  # name -> columns


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


def margins_section(control: str) -> str:
    """The chart section of a study's ``margins`` metrics, named by its control
    ("margins vs heuristic"): MLflow's charts put the part of a key before "/"
    into a section of its own, so studies against other controls never share a chart."""
    return f"margins vs {chart_names([control])[control]}"


def parent_metrics(r: AblationResult) -> dict[str, float]:
    """A handful of metrics named for charts (at most PARENT_METRICS, the sweep's
    job counts included): each variant's difference from the control on the
    gated metrics first, in units of the metric's margin and oriented so that
    below zero is worse (``margins vs <control>/<variant>.<metric>``: −1 is the
    margin; the run page cuts long names, so the variant comes first in the
    chart's title), then the verdict counts. MLflow's charts label a value with
    two decimals: a raw Δ of −0.005 would read −0.01, a share of the margin reads
    right. Every statistic is in the ``ablation_table.json`` table. Values are
    rounded to four significant digits: the run page's table shows every digit logged."""
    counts = {f"verdict.{o.value}": float(sum(vv.outcome is o for vv in r.verdicts.values()))
              for o in Outcome}
    room = PARENT_METRICS - len(counts) - 2  # sweep.jobs, sweep.failed_jobs
    short = chart_names(list(r.verdicts))
    section = margins_section(r.control)
    out: dict[str, float] = {}  # in the order the run page lists them: gated first
    for metric in r.gated:
        for c in r.table(metric):
            if len(out) < room and not math.isnan(c.delta) and c.margin > 0:
                out[f"{section}/{short[c.variant]}.{metric}"[:250]] = rounded(in_margins(c))
    return {**out, **counts}


def in_margins(c: Comparison) -> float:
    """The difference as a share of the margin, below zero when worse."""
    sign = -1.0 if spec(c.metric).direction == "lower" else 1.0
    return sign * float(c.delta) / c.margin


def parent_summary(r: AblationResult, swept: list[str] | None = None,
                   added_control: str | None = None) -> ParentReport:
    """The parent run's description opens with the decision in one sentence
    (collapsed, the UI shows only the first lines), then the verdict table of
    ``ablation.md``; its name starts with the verdict counts (the runs table
    cuts long names). ``silas.verdict.<name>`` and ``margins vs <control>/<name>.<metric>``
    name a variant alike (:func:`chart_names`)."""
    lines = [*decision_lines(r), "", *verdict_lines(r), "",
             "Each variant beside the control on that variant's own cases and repeats:", "",
             paired_table(r), "",
             f"Every statistic: the table `{STATS_TABLE}`; the full report with plots: "
             "`ablation.html` (`ablation.md` for text).", "", verdict_rule(r)]
    lines[0] += f" Control: **{r.control}**, {r.control_reason}."  # which control, and why
    swept = swept or []
    what = " ".join(t for t in shlex.split(r.command)[3:] if "," in t) if r.command else ""
    tags = {"silas.control": r.control, "silas.suite_kind": r.suite_kind,
            "silas.gated": ",".join(r.gated),
            "mlflow.runName": f"{verdict_counts(r)} · sweep-{r.sweep_id}"
                              + (f" {what}" if what else "")}
    short = chart_names(list(r.verdicts))  # the names of the parent's margins.* metrics too
    for v, vv in sorted(r.verdicts.items()):
        tags[f"silas.verdict.{short[v]}"] = vv.outcome.value
    return ParentReport(params=sweep_params(r.command, swept, added_control),
                        metrics=parent_metrics(r), tags=tags, description="\n".join(lines),
                        artifacts=list(ARTIFACTS), tables={STATS_TABLE: data_table(r)})
