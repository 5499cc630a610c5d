"""What a sweep's parent run should say about the result, as plain data: what
was swept, a description (the verdict table), per-variant aggregate metrics,
verdict tags, the reports. The end of the sweep (silas_exp.run.sweep_end) puts it
in the sweep's ``SweepEnd``, which the tracker logs to the parent run."""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field

from silas_exp.analysis.ablation import AblationResult
from silas_exp.analysis.report import OUTCOME_TEXT, verdict_rule
from silas_exp.metrics.names import display_name

ARTIFACTS = ("ablation.html",)  # ablation.md and the plots are logged with the sweep

_UNSAFE = re.compile(r"[^\w.\- /]")


@dataclass
class ParentReport:
    """``description``: markdown; ``artifacts``: paths relative to the sweep folder."""

    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    description: str | None = None
    artifacts: list[str] = field(default_factory=list)


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


def parent_summary(r: AblationResult, swept: list[str] | None = None,
                   added_control: str | None = None) -> ParentReport:
    lines = [f"**Ablation verdicts** against the control **{r.control}** ({r.control_reason}).", "",
             "| variant | verdict | gated metric deltas vs control [CI] |", "|---|---|---|"]
    metrics: dict[str, float] = {}
    swept = swept or []
    what = " ".join(t for t in shlex.split(r.command)[3:] if "," in t) if r.command else ""
    tags = {"silas.control": r.control, "silas.suite_kind": r.suite_kind,
            "silas.gated": ",".join(r.gated),
            "mlflow.runName": f"sweep-{r.sweep_id}" + (f" {what}" if what else "")}
    for v, vv in sorted(r.verdicts.items()):
        tags[f"silas.verdict.{safe_name(v)}"] = vv.outcome.value
        deltas = []
        for c in r.comparisons:
            if c.variant != v:
                continue
            base = f"variant.{safe_name(v)}.{c.metric}"
            for suffix, value in (("mean", c.mean), ("delta", c.delta), ("ci_low", c.ci_low),
                                  ("ci_high", c.ci_high)):
                if not math.isnan(value):
                    metrics[f"{base}.{suffix}"] = float(value)
            if c.metric in r.gated:
                deltas.append(f"{display_name(c.metric)} {c.delta:+.3g} "
                              f"[{c.ci_low:+.3g}, {c.ci_high:+.3g}]")
        lines.append(f"| {v} | {OUTCOME_TEXT[vv.outcome]} | {'; '.join(deltas)} |")
    for metric, (mean, _) in r.control_summary.items():
        if not math.isnan(mean):
            metrics[f"variant.{safe_name(r.control)}.{metric}.mean"] = float(mean)
    lines += ["", verdict_rule(r), "", "Full report with plots: artifact `ablation.html` "
              "(`ablation.md` for text)."]
    return ParentReport(params=sweep_params(r.command, swept, added_control), metrics=metrics,
                         tags=tags, description="\n".join(lines), artifacts=list(ARTIFACTS))
