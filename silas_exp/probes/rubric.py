"""The grading rubric: criteria scored 0–5 in six dimensions.

A dimension's score is the mean of its graded criteria; a probe's overall
score is the unweighted mean of its graded dimensions (a probe is graded only
on the criteria its type lists)."""

from __future__ import annotations

from collections.abc import Mapping
from statistics import fmean

CRITERIA: dict[str, tuple[str, str]] = {
    # id: (dimension, question the judge answers)
    "accuracy_factual": ("accuracy", "Are the stated facts, paths and details correct (nothing invented)?"),
    "accuracy_technical": ("accuracy", "Are error messages, commands and versions exactly right?"),
    "context_conversation_state": ("context_awareness", "Does the answer reflect what happened in the session so far?"),
    "context_artifact_state": ("context_awareness", "Does the answer reflect which files were touched?"),
    "artifact_files_created": ("artifact_trail", "Does the agent know which files were created?"),
    "artifact_files_modified": ("artifact_trail", "Does it know which files were modified and what changed?"),
    "artifact_key_details": ("artifact_trail", "Does it recall error messages, commands and versions?"),
    "completeness_coverage": ("completeness", "Does the answer address every part of the question?"),
    "completeness_depth": ("completeness", "Does it give the details (what changed, why), not only names?"),
    "continuity_work_state": ("continuity", "Could the agent continue without re-reading what it saw?"),
    "continuity_todo_state": ("continuity", "Does it know which tasks are still open?"),
    "continuity_reasoning": ("continuity", "Does it keep the reasons behind decisions and the alternatives?"),
    "instruction_format": ("instruction_following", "Does the answer use the requested line format?"),
    "instruction_constraints": ("instruction_following", "Does it keep to what the session supports (no guessing)?"),
}
DIMENSIONS: tuple[str, ...] = ("accuracy", "context_awareness", "artifact_trail", "completeness",
                               "continuity", "instruction_following")
SCORE_GUIDE = "0 = absent or wrong, 3 = mostly right with gaps, 5 = complete and exact"
VERSION = "rubric-1"


def dimension_scores(criterion_scores: Mapping[str, float]) -> dict[str, float]:
    by_dim: dict[str, list[float]] = {}
    for cid, score in criterion_scores.items():
        by_dim.setdefault(CRITERIA[cid][0], []).append(float(score))
    return {d: fmean(by_dim[d]) for d in DIMENSIONS if d in by_dim}


def overall_score(criterion_scores: Mapping[str, float]) -> float:
    dims = dimension_scores(criterion_scores)
    return fmean(dims.values()) if dims else float("nan")


def rubric_text() -> str:
    """The judge's system prompt (sent as a cached system block)."""
    lines = [
        "You grade an AI coding agent's answer to a probe question asked after its context was "
        "compressed. You see the question, the answer and the ground truth facts. For each "
        "requested criterion give an integer score 0-5 (" + SCORE_GUIDE + ") and one sentence "
        "of reasoning. Judge only what the answer states; do not reward guesses.",
        "",
        "Criteria:",
    ]
    lines += [f"- {cid} ({dim}): {question}" for cid, (dim, question) in CRITERIA.items()]
    return "\n".join(lines)
