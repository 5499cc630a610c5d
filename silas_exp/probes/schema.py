"""Probe plans: which compression events a session has and what is asked at each.

A probe case is a §20.2 ``BenchmarkCase`` with ``expected.mode = "llm_judge"``;
its ``expected.value["probe_plan"]`` holds a ``ProbePlan``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from silas_exp.facts.fact import Fact
from silas_exp.probes.rubric import CRITERIA

ProbeType = Literal["recall", "artifact", "continuation", "decision"]

DEFAULT_CRITERIA: dict[str, list[str]] = {
    "recall": ["accuracy_factual", "accuracy_technical", "artifact_key_details",
               "context_conversation_state", "completeness_coverage", "instruction_format"],
    "artifact": ["artifact_files_created", "artifact_files_modified", "context_artifact_state",
                 "accuracy_factual", "completeness_depth", "instruction_format"],
    "continuation": ["continuity_work_state", "continuity_todo_state", "context_conversation_state",
                     "completeness_coverage", "instruction_constraints"],
    "decision": ["continuity_reasoning", "accuracy_factual", "completeness_depth",
                 "instruction_constraints"],
}


class ProbeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    probe_id: str = Field(min_length=1)
    type: ProbeType
    cut: int = Field(ge=0, description="index into ProbePlan.compressions")
    question: str = Field(min_length=1)
    expected: list[str] = Field(min_length=1, description="facts 'kind:value[|detail]'")
    criteria: list[str] = Field(default_factory=list)

    @field_validator("expected")
    @classmethod
    def _facts_parse(cls, v: list[str]) -> list[str]:
        for raw in v:
            Fact.parse(raw)  # ValueError names the fact and the expected form
        return v

    @model_validator(mode="after")
    def _criteria(self) -> ProbeSpec:
        if not self.criteria:
            self.criteria = list(DEFAULT_CRITERIA[self.type])
        unknown = [c for c in self.criteria if c not in CRITERIA]
        if unknown:
            raise ValueError(f"probe {self.probe_id!r}: unknown criteria {unknown}; "
                             f"known: {sorted(CRITERIA)}")
        return self


class ProbePlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    compressions: list[int] = Field(min_length=1, description="turns at which the context is compressed")
    probes: list[ProbeSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> ProbePlan:
        if self.compressions != sorted(set(self.compressions)):
            raise ValueError(f"compressions {self.compressions} must be strictly increasing turns")
        for p in self.probes:
            if p.cut >= len(self.compressions):
                raise ValueError(f"probe {p.probe_id!r}: cut={p.cut} but there are only "
                                 f"{len(self.compressions)} compression events")
        return self
