"""What a sweep's parent run should say about the result, as plain data: a
description (the verdict table), per-variant aggregate metrics, verdict tags.
The tracking layer logs it; nothing here imports mlflow."""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from silas_exp.analysis.ablation import AblationResult
from silas_exp.analysis.report import OUTCOME_TEXT, verdict_rule
from silas_exp.metrics.names import display_name

_UNSAFE = re.compile(r"[^\w.\- /]")


def safe_name(variant: str) -> str:
    """A variant as an MLflow key part: "scorer=weights,eviction=x" -> "scorer_weights.eviction_x"."""
    return _UNSAFE.sub("_", variant.replace(",", ".").replace("=", "_"))


PARENT_FILE = "parent_summary.json"  # in the sweep folder; the tracking layer logs it


@dataclass
class ParentSummary:
    description: str  # markdown for mlflow.note.content
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def write(self, folder: Path) -> Path:
        path = folder / PARENT_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(path)
        return path


def parent_summary(r: AblationResult) -> ParentSummary:
    lines = [f"**Ablation verdicts** against the control **{r.control}** ({r.control_reason}).", "",
             "| variant | verdict | gated metric deltas vs control [CI] |", "|---|---|---|"]
    metrics: dict[str, float] = {}
    tags = {"silas.control": r.control, "silas.suite_kind": r.suite_kind,
            "silas.gated": ",".join(r.gated)}
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
    return ParentSummary("\n".join(lines), metrics, tags)
