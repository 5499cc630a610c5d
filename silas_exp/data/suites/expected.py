"""§20.2 expected modes, as written: what a case's status is.

The *output* a mode compares:

* a replay or snapshot case: the retained context — the visible text of every
  item left in the window after the last turn, one item per line (a masked
  tool result shows as its placeholder, an inactive subscription not at all);
* a compression-probe case: the main model's answers, one line per probe.

Modes: ``exact`` (output equals ``expected.value``, ignoring leading and
trailing whitespace), ``contains`` (``expected.value`` occurs in the output),
``metric_threshold`` (every ``metric_thresholds`` key meets its bound in the
metric's declared direction: at least the bound when higher is better, at
most when lower is), ``llm_judge`` (probe cases: graded by the judge, plus any
thresholds), ``human`` (``skipped`` until a label is imported into the
suite's ``human_labels.json``). ``metric_thresholds`` apply in every mode and
accept ``latency_ms``, ``token_cost`` (from BenchmarkResult) and any declared
per-case metric. A case none of whose judged values exists is ``skipped``
with the reason, never ``pass``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from silas_exp.metrics.registry import find_spec
from silas_exp.schema.benchmark import BenchmarkCase

RESULT_FIELDS = ("latency_ms", "token_cost")  # BenchmarkResult fields usable as thresholds
PASS_LABELS = ("pass", "accept", "accepted", "good", "correct", "yes")


def threshold_problem(key: str) -> str | None:
    """Why ``key`` cannot be a threshold, or None when it can."""
    if key in RESULT_FIELDS:
        return None
    found = find_spec(key)
    if found is None:
        return "no metric of that name exists"
    if found.direction == "none":
        return "the metric has no direction (better higher or lower), so no bound can pass it"
    if not found.per_case:
        return "the metric exists per run, not per case"
    return None


def expected_problems(case: BenchmarkCase) -> list[str]:
    """What is wrong with a case's ``expected`` block (empty when it can run)."""
    exp = case.expected
    out = []
    if exp.mode in ("exact", "contains") and not isinstance(exp.value, str):
        out.append(f"field 'expected.value': mode {exp.mode!r} compares the output with a string "
                   f"(got {type(exp.value).__name__})")
    if exp.mode == "metric_threshold" and not exp.metric_thresholds:
        out.append("field 'expected.metric_thresholds': mode 'metric_threshold' needs at least one "
                   "threshold, e.g. {\"context.retrieval_relevance\": 0.6}")
    for key, bound in (exp.metric_thresholds or {}).items():
        why = threshold_problem(key)
        if why:
            out.append(f"field 'expected.metric_thresholds', key {key!r}: {why}")
        elif not math.isfinite(bound):
            out.append(f"field 'expected.metric_thresholds', key {key!r}: bound {bound} is not a "
                       "finite number")
    return out


def _meets(key: str, value: float, bound: float) -> bool:
    lower = key in RESULT_FIELDS or find_spec(key).direction == "lower"
    return value <= bound if lower else value >= bound


def judge_case(case: BenchmarkCase, metrics: Mapping[str, float], output: str | None,
               latency_ms: float, token_cost: int,
               human_label: str | None = None) -> tuple[str, str | None]:
    """(status, reason) of a case that ran without error."""
    exp = case.expected
    if exp.mode == "human":
        if human_label is None:
            return "skipped", "awaiting a human label (human_labels.json in the suite folder)"
        ok = human_label.strip().lower() in PASS_LABELS
        return ("pass", None) if ok else ("fail", f"human label {human_label!r}")
    failures, missing = [], []
    if exp.mode == "exact" and (output or "").strip() != str(exp.value).strip():
        failures.append("output differs from expected.value (mode exact)")
    if exp.mode == "contains" and str(exp.value) not in (output or ""):
        failures.append(f"output does not contain {str(exp.value)[:60]!r} (mode contains)")
    values = {**metrics, "latency_ms": float(latency_ms), "token_cost": float(token_cost)}
    for key, bound in (exp.metric_thresholds or {}).items():
        value = values.get(key, math.nan)
        if math.isnan(value):
            missing.append(key)
        elif not _meets(key, value, bound):
            failures.append(f"{key} = {value:.4g} misses its bound {bound:g}")
    if failures:
        return "fail", "; ".join(failures)
    if missing:
        return "skipped", f"no value for threshold metric(s) {', '.join(missing)} on this case"
    judged_values = [v for k, v in metrics.items() if not math.isnan(v)]
    if exp.mode in ("metric_threshold", "llm_judge") and not judged_values:
        return "skipped", "no metric applied to this case"
    return "pass", None
