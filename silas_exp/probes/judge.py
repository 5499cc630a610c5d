"""Grading probe answers: the offline judge (embedded default) and a model judge.

The judge is blinded: its input is the question, the answer, the expected
facts and the criteria — never the strategy that produced the answer.

Offline judge (deterministic, from ground truth; docs/probes.md): the answer's
``- kind: value | detail`` lines are matched with the expected facts (kind and
value equal after folding case and spaces). With ``cov`` = share of expected
facts stated, ``depth`` = the same with half credit when a fact's detail is
missing, ``prec`` = share of stated facts that are expected, each criterion
is ``round(5 × x)`` of: accuracy_factual prec (0 if nothing stated);
accuracy_technical and artifact_key_details cov over errors/commands/versions;
context_conversation_state, completeness_coverage, continuity_work_state cov;
context_artifact_state cov over files; artifact_files_created cov over created
files; artifact_files_modified depth over modified files; completeness_depth
depth; continuity_todo_state cov over todos; continuity_reasoning depth over
decisions and alternatives; instruction_format share of lines in the format;
instruction_constraints 5 − 2 × invented facts (≥ 0). A criterion whose fact
kinds the probe does not expect falls back to cov.

Model judge (``judge.kind=llm``): the rubric is a cached system prompt, the
answer is structured output; a malformed or incomplete grading is retried
once, then recorded as an error — never as a 0. With the simulated backend the
"model" is the offline judge plus ordinal noise (documented), so judge
repeats show variance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean, pvariance, variance
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from silas_exp.errors import ConfigError, LLMError
from silas_exp.facts.fact import FILES, TECHNICAL, Fact, parse_answer
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.llm.simulated import register_responder
from silas_exp.plugins import Kind, Registry
from silas_exp.probes.rubric import CRITERIA, VERSION, overall_score, rubric_text
from silas_exp.probes.schema import ProbeSpec

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"criteria": {"type": "array", "items": {
        "type": "object",
        "properties": {"criterion_id": {"type": "string"},
                       "score": {"type": "integer", "minimum": 0, "maximum": 5},
                       "reasoning": {"type": "string"}},
        "required": ["criterion_id", "score", "reasoning"], "additionalProperties": False}}},
    "required": ["criteria"], "additionalProperties": False,
}
SIM_NOISE = 0.3  # simulated model judge: P(score moves by ±1)


class JudgeSettings(BaseModel):
    """Config group ``judge``."""

    model_config = ConfigDict(extra="forbid")
    name: str = "offline"
    kind: str = "offline"  # a judge kind: built-in offline / llm, or a plug-in's
    repeats: int = Field(default=1, ge=1)
    # repeat only where the grade is unstable: a probe gets ``repeats`` gradings when the
    # last probe of its type in the same case, graded more than once, varied (its overall
    # grade's variance over gradings at least ``unstable_variance``), else one
    unstable_only: bool = False
    unstable_variance: float = Field(default=0.05, ge=0.0)
    human_labels: str | None = None  # JSON: [{"probe_id", "criterion_id", "score"}]
    kappa_floor: float = Field(default=0.4, ge=-1.0, le=1.0)
    version: str = VERSION


@dataclass
class Grade:
    scores: dict[str, float]                       # mean over judge repeats
    reasoning: dict[str, str]
    variance: dict[str, float] = field(default_factory=dict)  # across judge repeats


def _match(expected: list[Fact], stated: list[Fact]) -> tuple[set[int], set[int], int]:
    """(indices matched, indices matched with detail, stated facts not expected)."""
    keys = {e.key(): i for i, e in enumerate(expected)}
    matched, full, invented = set(), set(), 0
    for s in stated:
        i = keys.get(s.key())
        if i is None:
            invented += 1
            continue
        matched.add(i)
        e = expected[i]
        if not e.detail or " ".join(e.detail.lower().split()) in " ".join(s.detail.lower().split()):
            full.add(i)
    return matched, full, invented


def offline_grade(probe: ProbeSpec, answer: str) -> Grade:
    expected = [Fact.parse(raw) for raw in probe.expected]
    stated, ok_lines, lines = parse_answer(answer)
    matched, full, invented = _match(expected, stated)

    def cov(kinds: tuple[str, ...] | None = None, depth: bool = False) -> float:
        idx = [i for i, e in enumerate(expected) if kinds is None or e.kind in kinds]
        if not idx:
            idx = list(range(len(expected)))
        hit = sum(i in matched for i in idx)
        if depth:
            hit = (hit + sum(i in full for i in idx)) / 2
        return hit / len(idx)

    prec = (len(stated) - invented) / len(stated) if stated else 0.0
    raw = {
        "accuracy_factual": prec, "accuracy_technical": cov(TECHNICAL),
        "artifact_key_details": cov(TECHNICAL), "context_conversation_state": cov(),
        "completeness_coverage": cov(), "continuity_work_state": cov(),
        "context_artifact_state": cov(FILES), "artifact_files_created": cov(("created",)),
        "artifact_files_modified": cov(("modified",), depth=True), "completeness_depth": cov(depth=True),
        "continuity_todo_state": cov(("todo",)),
        "continuity_reasoning": cov(("decision", "alternative"), depth=True),
        "instruction_format": ok_lines / lines if lines else 0.0,
        "instruction_constraints": max(0.0, 5 - 2 * invented) / 5,
    }
    scores = {c: float(round(5 * raw[c])) for c in probe.criteria}
    why = (f"{len(matched)} of {len(expected)} expected facts stated ({len(full)} with detail); "
           f"{invented} not supported by the session")
    return Grade(scores, {c: why for c in probe.criteria})


def judge_request(probe: ProbeSpec, answer: str, model_id: str) -> LLMRequest:
    payload = {"probe_question": probe.question, "model_response": answer,
               "ground_truth": list(probe.expected), "rubric_criteria": list(probe.criteria)}
    return LLMRequest(task="judge", model=model_id, system=rubric_text(), cache_system=True,
                      messages=(Message("user", json.dumps(payload, indent=1)),), max_tokens=2048,
                      temperature=0.0, output_schema=JUDGE_SCHEMA)


@register_responder("judge")
def simulated_judge(request: LLMRequest, rng: np.random.Generator) -> dict:
    payload = json.loads(request.messages[-1].content)
    probe = ProbeSpec(probe_id="judged", type="recall", cut=0, question=payload["probe_question"],
                      expected=payload["ground_truth"], criteria=payload["rubric_criteria"])
    grade = offline_grade(probe, payload["model_response"])
    out = []
    for cid, score in grade.scores.items():
        if rng.random() < SIM_NOISE:
            score = float(np.clip(score + rng.choice([-1, 1]), 0, 5))
        out.append({"criterion_id": cid, "score": int(score), "reasoning": grade.reasoning[cid]})
    return {"criteria": out}


class Judge(Protocol):
    """Grades one probe answer: a score 0–5 per criterion of ``probe.criteria``."""

    def grade(self, probe: ProbeSpec, answer: str) -> Grade: ...


JUDGES = Registry("judge", key="judge", group="silas_exp.judges", builtins="silas_exp.probes.judge",
                  capabilities=("llm",), example="judge=llm", field="kind")


def judge_kind(name: str, settings: type[JudgeSettings], factory, *, needs=(),
               description: str = "") -> Kind:
    """A plug-in judge kind (entry point group ``silas_exp.judges``, or ``judge._target_``);
    the factory gets (settings, granted) with ``model_id``, ``namespace`` and, if
    declared, ``llm``."""
    return JUDGES.kind(name, settings, factory, needs=needs, description=description)


def build_judge(settings: JudgeSettings, llm, model_id: str, namespace: str) -> Judge:
    return JUDGES.build(settings, {"model_id": model_id, "namespace": namespace}, {"llm": llm})


class OfflineJudge:
    def __init__(self, settings: JudgeSettings, granted) -> None:
        self.s = settings

    def grade(self, probe: ProbeSpec, answer: str) -> Grade:
        return offline_grade(probe, answer)


class ModelJudge:
    """The model judge: ``repeats`` gradings through the LLM layer, averaged."""

    def __init__(self, settings: JudgeSettings, granted) -> None:
        self.s, self.llm = settings, granted.llm
        self.model_id, self.namespace = granted.model_id, granted.namespace
        # probe type -> the overall grade's variance over the gradings of the last
        # probe of that type graded more than once (one judge per case)
        self._spread: dict[str, float] = {}

    def gradings(self, probe: ProbeSpec) -> int:
        """How many gradings ``probe`` gets. With ``unstable_only``, a probe
        whose type was stable in this case gets one: the rule reads another
        probe's gradings, never this one's, so its mean stays unbiased
        (silas_exp.stats.repeats); the first probe of a type gets them all."""
        last = self._spread.get(probe.type)
        if not self.s.unstable_only or last is None or last >= self.s.unstable_variance:
            return self.s.repeats
        return 1

    def _llm_once(self, probe: ProbeSpec, answer: str, ns: str) -> Grade:
        request = judge_request(probe, answer, self.model_id)
        for attempt in range(2):  # a malformed grading is retried once
            response = self.llm.complete(request, namespace=f"{ns}/a{attempt}")
            got = {c["criterion_id"]: c for c in (response.data or {}).get("criteria", [])}
            missing = [c for c in probe.criteria if c not in got]
            if not missing:
                return Grade({c: float(got[c]["score"]) for c in probe.criteria},
                             {c: str(got[c]["reasoning"]) for c in probe.criteria})
        raise LLMError(f"judge answer for probe {probe.probe_id} lacks criteria {missing} after a "
                       "retry", reason="judge_incomplete")

    def grade(self, probe: ProbeSpec, answer: str) -> Grade:
        grades = [self._llm_once(probe, answer, f"{self.namespace}/{probe.probe_id}/j{k}")
                  for k in range(self.gradings(probe))]
        scores = {c: fmean(g.scores[c] for g in grades) for c in probe.criteria}
        if len(grades) < 2:  # one grading says nothing of the judge's variance
            return Grade(scores, grades[0].reasoning)
        self._spread[probe.type] = variance([overall_score(g.scores) for g in grades])
        spread = {c: pvariance([g.scores[c] for g in grades]) for c in probe.criteria}
        return Grade(scores, grades[0].reasoning, spread)


JUDGES.register("offline", JudgeSettings, description="deterministic grading from ground truth "
                "(embedded default)")(OfflineJudge)
JUDGES.register("llm", JudgeSettings, needs={"llm"},
                description="a model grades with the rubric (model.judge_id)")(ModelJudge)


@dataclass(frozen=True)
class Assessment:
    """One judge verdict on one probe answer, shaped for an assessment store
    (MLflow feedback): name, value (0-5), rationale."""

    name: str
    value: float
    rationale: str


def assessments(row: dict) -> list[Assessment]:
    """A graded probe row (``probes.json``) as assessments: ``overall`` and one per
    rubric dimension, each with the judge's reasoning for that dimension's criteria."""
    if row.get("overall") is None:
        return []
    reasoning = row.get("reasoning") or {}
    scores = row.get("scores") or {}
    out = [Assessment("overall", float(row["overall"]), "Unweighted mean of the dimension scores.")]
    for dim, value in (row.get("dimensions") or {}).items():
        why = [f"{c} = {scores[c]:g}: {reasoning.get(c, '')}".strip()
               for c in scores if CRITERIA.get(c, ("",))[0] == dim]
        out.append(Assessment(dim, float(value), "\n".join(why)))
    return out


def load_human_labels(path: str | Path) -> dict[tuple[str, str], float]:
    p = Path(path)
    try:
        rows = json.loads(p.read_text())
        labels = {(r["probe_id"], r["criterion_id"]): float(r["score"]) for r in rows}
    except FileNotFoundError:
        raise ConfigError(f"judge.human_labels={str(p)!r}: file not found; give the path of a JSON "
                          "list of {probe_id, criterion_id, score} or set judge.human_labels=null") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{p}: human labels must be a JSON list of objects with probe_id, "
                          f"criterion_id and score (0-5): {exc}") from None
    unknown = {c for _, c in labels if c not in CRITERIA}
    if unknown:
        raise ConfigError(f"{p}: unknown criterion ids {sorted(unknown)}")
    return labels
