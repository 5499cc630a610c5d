"""A tuning study's record (``tune.json`` in the sweep folder): what was
searched, on which cases, the training scores, and the holdout certification.
Typed and versioned, with one reader; the end of the sweep reports from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from silas_exp.errors import AnalysisError
from silas_exp.records import write_json_atomic

TUNE_FILE = "tune.json"
SPLIT_FILE = "split.json"
TUNE_VERSION = 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrialScore(_Record):
    number: int
    params: dict[str, Any]
    train: dict[str, float]  # objective -> mean over the trial's repeats, training cases
    variant: str = ""  # its name in the certification, when certified
    reference: bool = False  # the scorer's own settings (the untuned variant)


class Candidate(_Record):
    trial: int
    variant: str
    outcome: str  # ship | do_not_ship | inconclusive | failed
    reasons: list[str] = Field(default_factory=list)
    train_gain: dict[str, float] = Field(default_factory=dict)  # vs the reference trial
    holdout_gain: dict[str, float] = Field(default_factory=dict)  # vs the reference, holdout
    holdout_delta: dict[str, float] = Field(default_factory=dict)  # vs the control, holdout
    proposal: str | None = None  # the written config option (sweep-relative), when it ships
    cases: int | None = None  # held-out cases it ran
    stopped_at: int | None = None  # in blocks: the block after whose look it stopped


class Certification(_Record):
    control: str
    reference: str
    k: int
    confidence: float  # two-sided, per candidate (Bonferroni over the k)
    holdout_cases: int
    cases_per_block: int | None = None  # in blocks (sequential): their size, else null
    looks: list[int] = Field(default_factory=list)  # in blocks: the blocks after which it looked
    candidates: list[Candidate] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class TuneRecord(_Record):
    schema_version: int = TUNE_VERSION
    study: str
    scorer: str
    objectives: list[str]
    directions: list[str]
    space: dict[str, str]
    n_trials: int  # completed trials
    n_failed: int = 0
    n_pruned: int = 0  # stopped after their first repeat (also searched)
    repeats: int
    train_cases: int
    holdout_cases: int
    split_seed: int
    sampler: str
    reference: TrialScore | None = None
    best: list[TrialScore] = Field(default_factory=list)  # the certified ones, best first
    certification: Certification | None = None

    def write(self, folder: Path) -> Path:
        return write_json_atomic(folder / TUNE_FILE, self.model_dump(mode="json"))


def is_study(folder: Path) -> bool:
    """Whether a sweep folder holds a tuning study (its split is written first)."""
    return (folder / SPLIT_FILE).is_file()


def read_tune(folder: Path) -> TuneRecord | None:
    path = folder / TUNE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("schema_version") != TUNE_VERSION:
            raise ValueError(f"schema_version {data.get('schema_version')} (this code reads "
                             f"{TUNE_VERSION})")
        return TuneRecord.model_validate(data)
    except ValueError as exc:
        raise AnalysisError(f"{path}: not a readable tuning record ({exc}); run the study "
                            "again with resume=true in the same sweep folder") from None
