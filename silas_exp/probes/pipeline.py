"""One probe case: replay the session, compress at each compression event with
the strategy under test, ask that event's probes, judge the answers.

Successive compressions share the strategy's state (an anchored summary is
carried from one event to the next; a regenerative one is rebuilt)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any

from silas_exp.context.window import LiveItem, Window, mask_placeholder
from silas_exp.errors import LLMError
from silas_exp.probes.answer import answer_request
from silas_exp.probes.judge import Judge, assessments
from silas_exp.probes.rubric import DIMENSIONS, dimension_scores, overall_score
from silas_exp.probes.schema import ProbePlan
from silas_exp.schema.session import Session


def render(window: Window) -> str:
    """What the main model sees: live items in order, masked ones as placeholders."""
    parts = []
    for it in window:
        if not it.active:
            continue
        if it.masked:
            parts.append(mask_placeholder(it.tool_name, it.status, it.full_tokens))
        elif it.kind == "summary":
            parts.append(f"[summary of the earlier session]\n{it.text}")
        else:
            parts.append(f"[{it.kind}] {it.text}")
    return "\n\n".join(parts)


@dataclass
class ProbeCaseResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    errors: int = 0


def run_probe_case(session: Session, plan: ProbePlan, strategy: Any, llm: Any, judge: Judge,
                   *, namespace: str, main_model: str, max_subscription_tokens: int) -> ProbeCaseResult:
    by_turn: dict[int, list] = defaultdict(list)
    for item in session.items:
        by_turn[item.turn].append(item)
    cuts = {turn: i for i, turn in enumerate(plan.compressions)}
    window, full_tokens = Window(), 0
    out = ProbeCaseResult()
    ratios, before, after = [], [], []
    empty_summaries = 0
    for turn in range(plan.compressions[-1] + 1):
        for item in by_turn.get(turn, ()):
            live = LiveItem.from_session(item, max_subscription_tokens)
            full_tokens += live.tokens
            window.add(live)
        strategy.step(window, turn)
        if turn not in cuts:
            continue
        event = cuts[turn]
        strategy.compress(window, turn)
        used = window.usage()
        # a summary strategy whose summary kept nothing compressed exactly like truncate
        empty_summaries += any(it.kind == "summary" and not it.text.strip() for it in window)
        before.append(full_tokens)
        after.append(used)
        ratios.append(full_tokens / max(used, 1))
        context = render(window)
        for probe in (p for p in plan.probes if p.cut == event):
            row: dict[str, Any] = {"probe_id": probe.probe_id, "type": probe.type, "event": event,
                                   "turn": turn, "question": probe.question}
            try:
                response = llm.complete(answer_request(probe, context, main_model),
                                        namespace=f"{namespace}/{probe.probe_id}")
                # a real model answers in plain text (no structured data); the simulated one in data
                answer = response.data["text"] if response.data else response.text
                grade = judge.grade(probe, answer)
            except LLMError as exc:  # recorded as an error, never as a score of 0
                out.errors += 1
                row.update(answer=None, error=f"{exc.reason}: {exc}", overall=None)
                out.rows.append(row)
                continue
            dims = dimension_scores(grade.scores)
            row.update(answer=answer, error=None, overall=overall_score(grade.scores),
                       scores=grade.scores, dimensions=dims, reasoning=grade.reasoning,
                       judge_variance=grade.variance)
            row["assessments"] = [asdict(a) for a in assessments(row)]  # feedback on its trace
            out.rows.append(row)
    out.metrics = probe_metrics(out.rows)
    out.metrics.update({
        "probe.compression_ratio": fmean(ratios), "probe.tokens_before": fmean(before),
        "probe.tokens_after": fmean(after), "probe.errors": float(out.errors),
        "probe.empty_summaries": float(empty_summaries),
    })
    return out


def probe_metrics(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Means over the graded probes of one case: overall, per dimension, per type."""
    graded = [r for r in rows if r.get("overall") is not None]
    m: dict[str, float] = {}
    if not graded:
        return m
    m["probe.overall"] = fmean(r["overall"] for r in graded)
    for dim in DIMENSIONS:
        vals = [r["dimensions"][dim] for r in graded if dim in r["dimensions"]]
        if vals:
            m[f"probe.dim.{dim}"] = fmean(vals)
    for ptype in sorted({r["type"] for r in graded}):
        m[f"probe.type.{ptype}"] = fmean(r["overall"] for r in graded if r["type"] == ptype)
    var = [v for r in graded for v in (r.get("judge_variance") or {}).values()]
    if var:
        m["judge.variance"] = fmean(var)
    return {k: v for k, v in m.items() if not math.isnan(v)}
