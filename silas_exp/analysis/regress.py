"""Regression check of a run against the suite's baseline (§20.5): case
pass→fail, judge score drop > 0.1, latency up > 50% (above a noise floor),
and gated metrics that worsen (in their declared direction) with a bootstrap CI
over cases that excludes zero."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from silas_exp.analysis.data import JobData
from silas_exp.metrics.names import display_name
from silas_exp.metrics.registry import spec
from silas_exp.stats import cluster_bootstrap_ci

GATED = ("context.retrieval_relevance", "ir.ndcg_at_10", "context.tokens_per_served_need")
# bounded [0, 1] quality metrics: a per-case drop larger than this flags the case,
# the same rule §20.5 applies to judge scores
CASE_DROP = {"context.retrieval_relevance": 0.1, "ir.ndcg_at_10": 0.1}
NOTE_MARK = "**Regression check:"  # first line of a checked run's description


@dataclass
class RegressionReport:
    run_id: str
    baseline_id: str
    case_flags: list[tuple[str, str]] = field(default_factory=list)  # (case_id, reason)
    metric_flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return bool(self.case_flags or self.metric_flags)

    def headline(self, accepted: bool = False) -> str:
        """One line for the top of the checked run's description."""
        if not self.regressed:
            return (f"{NOTE_MARK} no regression** against baseline `{self.baseline_id}` "
                    "(report: `regress.md`).")
        what = [f"{len(self.case_flags)} case(s)"] if self.case_flags else []
        what += [f"{len(self.metric_flags)} metric(s)"] if self.metric_flags else []
        first = self.metric_flags[0].split(":")[0] if self.metric_flags \
            else f"{self.case_flags[0][0]}: {self.case_flags[0][1]}"
        return (f"{NOTE_MARK} REGRESSION{' (accepted)' if accepted else ''}** against baseline "
                f"`{self.baseline_id}`: {', '.join(what)}; first: {first} (report: `regress.md`).")

    def markdown(self, accepted: bool = False) -> str:
        head = "REGRESSION" if self.regressed else "no regression"
        if self.regressed and accepted:
            head += " (accepted with --accept-regression)"
        lines = [f"## Benchmark regression check: {head}", "",
                 f"Run `{self.run_id}` against baseline `{self.baseline_id}`.", ""]
        if self.case_flags:
            lines += ["| case | regression |", "|---|---|"]
            lines += [f"| {c} | {why} |" for c, why in self.case_flags]
            lines.append("")
        lines += [f"- {m}" for m in self.metric_flags] + [f"- note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def regress(run: JobData, base: JobData, run_id: str, baseline_id: str,
            latency_floor_ms: float = 50.0, judge_drop: float = 0.1, latency_up: float = 0.5,
            metrics=GATED, seed: int = 0) -> RegressionReport:
    rep = RegressionReport(run_id, baseline_id)
    shared = sorted(set(run.cases) & set(base.cases))
    missing = sorted(set(base.cases) - set(run.cases))
    rep.case_flags += [(c, "case missing from the run") for c in missing]
    for c in shared:
        now, was = run.cases[c], base.cases[c]
        if base.status.get(c) == "pass" and run.status.get(c) in ("fail", "error", "timeout"):
            rep.case_flags.append((c, f"pass → {run.status.get(c)}"))
        if "llm_judge_score" in now and "llm_judge_score" in was \
                and was["llm_judge_score"] - now["llm_judge_score"] > judge_drop:
            rep.case_flags.append((c, f"judge score {was['llm_judge_score']:.2f} → "
                                      f"{now['llm_judge_score']:.2f}"))
        for metric, limit in CASE_DROP.items():
            a, b = was.get(metric, math.nan), now.get(metric, math.nan)
            if not (math.isnan(a) or math.isnan(b)) and a - b > limit:
                rep.case_flags.append((c, f"{display_name(metric)} {a:.3f} → {b:.3f}"))
        if was["latency_ms"] >= latency_floor_ms and now["latency_ms"] > (1 + latency_up) * was["latency_ms"]:
            rep.case_flags.append((c, f"latency {was['latency_ms']:.0f} → {now['latency_ms']:.0f} ms"))
    for metric in metrics:
        diffs = np.array([run.cases[c].get(metric, math.nan) - base.cases[c].get(metric, math.nan)
                          for c in shared])
        if len(diffs) < 2 or np.all(np.isnan(diffs)):
            continue
        ci = cluster_bootstrap_ci(diffs, seed=seed)
        mspec = spec(metric)
        higher = mspec.higher_is_better
        bad = ci.high < 0 if higher else ci.low > 0
        if bad:
            sign = 1 if higher else -1
            worst = sorted((sign * d, c) for d, c in zip(diffs, shared, strict=True) if not math.isnan(d))[:3]
            rep.metric_flags.append(
                f"{display_name(metric)} worsened beyond noise ({mspec.arrow()}): "
                f"Δ {ci.estimate:+.4f} "
                f"[{ci.low:+.4f}, {ci.high:+.4f}] over {len(diffs)} cases; worst: "
                + ", ".join(f"{c} ({sign * d:+.3f})" for d, c in worst))
    rep.notes.append(f"latency checked only where the baseline case took ≥ {latency_floor_ms:.0f} ms")
    return rep


def record_outcome(reader, run_id: str, report: RegressionReport, markdown: str,
                   accepted: bool = False, gates_passed: bool | None = None) -> dict[str, str]:
    """Log the check on the run it checked: ``silas.regress=pass|regression`` (plus
    the baseline it was checked against, when, and whether a regression was
    accepted or a gate failed) and the report as ``regress.md``."""
    tags = {"silas.regress": "regression" if report.regressed else "pass",
            "silas.regress_baseline": report.baseline_id,
            "silas.regress_at": datetime.now(UTC).isoformat()}
    if report.regressed:
        tags["silas.regress_accepted"] = str(accepted).lower()
    if gates_passed is not None:
        tags["silas.regress_gates"] = "pass" if gates_passed else "fail"
    reader.store.log(run_id, tags=tags)
    reader.store.log_text(run_id, markdown, "regress.md")
    reader.store.note_first(run_id, report.headline(accepted), NOTE_MARK)
    return tags
