"""The baseline record (§20.5): a configuration with its results on a suite.

``suites/<suite>/baseline.json`` holds one ``BaselineRecord``: the promoted
configuration (its Hydra overrides against the defaults, without the study's
design: seeds, repeats, blocks, paths, tracking), the suite and its version,
the code revision, the seeds, and every per-case result of every job of the
promoted variant (all blocks and repeats). Pure data here: the promotion
(silas_exp.gate.promote) writes it through a baseline store, and
silas_exp.baselines is its one reader (``parse_baseline``), which also
reads the first baselines (``first_format``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from silas_exp.schema.benchmark import BenchmarkResult

BASELINE_FILE = "baseline.json"
CHECK_MARK = "**Regression check:"  # first line of a checked run's description
HISTORY_FILE = "baseline_history.jsonl"
RECORD_VERSION = 2
# overrides that set how and where a study runs (its design: seeds, repeats, blocks, the
# suite; its setting: the model, the judge, the measurement; its plumbing), not the
# eviction machinery it runs: never part of a baseline's configuration
DESIGN_KEYS = ("seed", "repeat", "repeats", "repeats_min", "repeats_max", "block",
               "cases_per_block", "resume", "fail_fast", "suite", "hydra", "tracking", "paths",
               "analysis", "experiment", "model", "llm", "judge", "metrics")


def config_overrides(overrides: Iterable[str]) -> list[str]:
    """A job's Hydra overrides without the study's design (seeds, repeats,
    blocks, suite, paths, tracking …): what makes its configuration, sorted."""
    out = []
    for ov in overrides:
        key = ov.partition("=")[0].lstrip("+~")
        if not any(key == k or key.startswith(k + ".") or key.startswith(k + "/")
                   for k in DESIGN_KEYS):
            out.append(ov)
    return sorted(out)


def arm_name(overrides: Iterable[str]) -> str:
    """The variant name of a configuration ("scorer=weights"), as a sweep
    names a point whose swept keys are these overrides' keys."""
    return ",".join(sorted(ov.lstrip("+~") for ov in overrides)) or "defaults"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class BaselineJob(_Strict):
    """One job of the promoted variant: which repeat and block it ran, with
    which seed, and its per-case results."""

    repeat: int = 0
    block: int = 0
    seed: int | None = None  # the job's own seed (``job.seed``)
    run_id: str | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    results: list[BenchmarkResult] = Field(default_factory=list)


class BaselineRecord(_Strict):
    schema_version: int = RECORD_VERSION
    suite: str
    suite_version: str
    variant: str  # the name the study gave it ("scorer=weights")
    overrides: list[str]  # the configuration: Hydra overrides against the defaults
    design: list[str] = Field(default_factory=list)  # the study's other overrides (no paths)
    config_hash: str | None = None
    git_revision: str | None = None
    seed: int | None = None  # the study's base seed (block order and repeat seeds)
    cases_per_block: int | None = None
    judge: dict[str, str | None] = Field(default_factory=dict)
    simulated: bool = True  # latency of a simulated model is wall-clock noise: never gated
    source_run_id: str  # what `baseline promote` was given, resolved: the study's parent run or a job run
    sweep_id: str | None = None
    experiment_id: str | None = None
    promoted_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())
    promoted_by: str = ""
    jobs: list[BaselineJob]

    @property
    def name(self) -> str:
        return arm_name(self.overrides)

    def cases(self) -> set[str]:
        return {r.case_id for j in self.jobs for r in j.results}

    def repeats(self) -> list[int]:
        return sorted({j.repeat for j in self.jobs})

    def summary(self) -> str:
        n = sum(len(j.results) for j in self.jobs)
        return (f"`{self.name}` on suite `{self.suite}` v{self.suite_version}: {len(self.cases())} "
                f"cases x {len(self.repeats())} repeat(s) ({n} case results, {len(self.jobs)} "
                f"job(s)), seed {self.seed}, code {(self.git_revision or 'unknown')[:12]}")


def promotion_entry(record: BaselineRecord, replaced: list[str]) -> dict[str, Any]:
    """A promotion as its history records it (``replaced``: the runs it demoted)."""
    return {"action": "promote", "run_id": record.source_run_id, "variant": record.variant,
            "overrides": record.overrides, "sweep_id": record.sweep_id,
            "promoted_at": record.promoted_at, "by": record.promoted_by, "replaced": replaced}


def read_history(suite_dir: Path | str) -> list[dict[str, Any]]:
    """The suite's promotions and demotions, oldest first (``baseline_history.jsonl``,
    one JSON object a line, appended by silas_exp.baselines). A line
    that is not a whole JSON object (an append cut short) is left out."""
    path = Path(suite_dir) / HISTORY_FILE
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def first_format(data: dict[str, Any]) -> dict[str, Any]:
    """A baseline of the first format: one job run's ``pins`` and ``run``."""
    pins = data["pins"]
    run = data["run"]
    variant = pins.get("variant") or "scorer=heuristic"
    return {"suite": pins["suite"], "suite_version": pins["suite_version"], "variant": variant,
            "overrides": variant.split(","), "config_hash": pins.get("config_hash"),
            "git_revision": pins.get("git_revision"), "judge": pins.get("judge") or {},
            "source_run_id": pins["run_id"], "promoted_at": pins.get("promoted_at", ""),
            "jobs": [{"repeat": run.get("repeat") or 0, "run_id": pins["run_id"],
                      "metrics": data.get("metrics", {}), "results": run.get("results", [])}]}
