"""Judge repeats only where the grade is unstable (``judge.unstable_only``): a
probe is graded again and again only when the last probe of its type in the
case varied between gradings; the rule never reads the probe's own grades."""

from __future__ import annotations

import json
import random

from silas_exp.llm.base import LLMResponse, Usage
from silas_exp.probes.judge import JudgeSettings, build_judge
from silas_exp.probes.schema import ProbeSpec

CRITERIA = ["accuracy_factual", "completeness_coverage"]


class NoisyJudgeModel:
    """A judge model steady on recall probes and ±1 on half the scores of decision ones."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.rng = random.Random(0)

    def complete(self, request, *, namespace: str) -> LLMResponse:
        payload = json.loads(request.messages[-1].content)
        self.calls.append(payload["probe_question"])
        noisy = payload["probe_question"].startswith("decision")
        data = {"criteria": [{"criterion_id": c, "reasoning": "-",
                              "score": 3 + (self.rng.choice([-1, 1]) if noisy and self.rng.random() < 0.5
                                            else 0)} for c in payload["rubric_criteria"]]}
        return LLMResponse(json.dumps(data), data, Usage(), request.model, "stub")


def _probe(kind: str, cut: int) -> ProbeSpec:
    return ProbeSpec(probe_id=f"{kind}-{cut}", type=kind, cut=cut, question=f"{kind} {cut}?",
                     expected=["decision: use sqlite | it is embedded"], criteria=CRITERIA)


def _gradings(unstable_only: bool) -> dict[str, int]:
    model = NoisyJudgeModel()
    judge = build_judge(JudgeSettings(kind="llm", repeats=4, unstable_only=unstable_only), model,
                        "claude-haiku-4-5", "case-0/judge")
    for cut in (0, 1, 2):
        for kind in ("recall", "decision"):
            judge.grade(_probe(kind, cut), "- decision: use sqlite")
    return {q: model.calls.count(q) for q in dict.fromkeys(model.calls)}


def test_only_probes_of_an_unstable_type_are_graded_again():
    assert set(_gradings(False).values()) == {4}
    got = _gradings(True)
    # the first probe of each type is graded in full; after it, recall was steady
    assert got["recall 0?"] == 4 and got["recall 1?"] == 1 and got["recall 2?"] == 1
    assert got["decision 0?"] == got["decision 1?"] == got["decision 2?"] == 4


def test_one_grading_reports_no_judge_variance():
    model = NoisyJudgeModel()
    judge = build_judge(JudgeSettings(kind="llm", repeats=3, unstable_only=True), model,
                        "claude-haiku-4-5", "case-0/judge")
    assert judge.grade(_probe("recall", 0), "-").variance  # graded three times
    assert judge.grade(_probe("recall", 1), "-").variance == {}  # once: nothing to tell
