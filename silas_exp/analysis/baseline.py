"""The promoted baseline as the next studies' control.

A baseline is a configuration with its results (silas_exp.schema.baseline).
A later study does not pair its variants with those logged results (other
cases, other seeds, other code): it runs the baseline's *configuration* as
its control arm, on the same cases, blocks, repeats and seeds as every
variant, so every pair shares its random streams. The sweeper calls two
functions, and nothing else of this module (the record comes from the suite's
baseline store, silas_exp.baselines):

* :func:`baseline_arm` once, before it plans any job: the control arm (its
  overrides, its name and why it is the control), or None when
  ``analysis.control`` names a control, ``analysis.use_baseline`` is false or
  the suite has no baseline. It records the arm in the sweep folder
  (``control.json``) for the end-of-sweep analysis.
* :func:`with_control_arm` on the job list: each job's study part (seeds,
  repeat, block, suite size …) with the arm's overrides, once per distinct
  study part. A listed variant equal to the baseline *is* the control arm: it
  runs once. Anything else listed (``scorer=heuristic`` too) is a variant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from silas_exp.records import update_manifest, write_json_atomic
from silas_exp.schema.baseline import BaselineRecord, arm_name, config_overrides

CONTROL_FILE = "control.json"  # the sweep's control: an added §19.5 option, or the baseline arm
ARM_TAG = "silas.control_arm"  # on a study's parent run: the baseline arm it ran


@dataclass(frozen=True)
class ControlArm:
    """The baseline's configuration as a sweep's control arm."""

    name: str  # its variant name in the sweep ("scorer=weights")
    overrides: tuple[str, ...]
    reason: str  # why it is the control, for the console and the parent run
    run_id: str  # the run the baseline was promoted from (its study's parent run)
    experiment_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "overrides": list(self.overrides)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ControlArm:
        return cls(**{**data, "overrides": tuple(data["overrides"])})

    def linked(self, markdown: str) -> str:
        """``markdown`` with the first mention of the baseline's run linked to its page."""
        if not self.experiment_id:
            return markdown
        page = f"#/experiments/{self.experiment_id}/runs/{self.run_id}?workflowType=machine_learning"
        short = f"run {self.run_id[:8]}"
        return markdown.replace(short, f"[{short}]({page})", 1)

    def tags(self) -> dict[str, str]:
        """On the parent run of a study that ran it: the link to the baseline's
        run, and the arm itself (an ablation read back from MLflow finds it)."""
        return {"silas.baseline_run_id": self.run_id, ARM_TAG: json.dumps(self.to_json())}

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> ControlArm | None:
        return cls.from_json(json.loads(tags[ARM_TAG])) if tags.get(ARM_TAG) else None


def baseline_arm(analysis: Mapping[str, Any], record: BaselineRecord | None, sweep_dir: Path,
                 code_note: str = "") -> ControlArm | None:
    """The sweep's control arm from the suite's promoted baseline ``record``
    (see the module's docstring); recorded in ``control.json``. ``code_note``:
    what the reason adds when today's code is not the baseline's."""
    if analysis.get("control") or not analysis.get("use_baseline", True) or record is None:
        return None
    arm = control_arm(record, code_note)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(sweep_dir / CONTROL_FILE, {"added": {}, "baseline": arm.to_json()})
    return arm


def control_arm(record: BaselineRecord, code_note: str = "") -> ControlArm:
    where = f"study {record.sweep_id}, " if record.sweep_id else ""
    reason = (f"the suite's promoted baseline (promoted {record.promoted_at[:10]} from {where}"
              f"run {record.source_run_id[:8]}), its configuration run afresh on the same cases "
              "and seeds as every variant" + (f"; {code_note}" if code_note else "")
              + "; analysis.control=... names another")
    return ControlArm(record.name, tuple(record.overrides), reason, record.source_run_id,
                      record.experiment_id)


def _key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def _design(key: str) -> bool:
    return not config_overrides([f"{key}="])


def study_part(overrides: Sequence[str]) -> list[str]:
    """The overrides of a job that set how its study runs (seed, repeat, block,
    suite size …), not what it runs (its configuration)."""
    return sorted(o for o in overrides if _design(_key(o)))


def with_control_arm(jobs: Sequence[Sequence[str]], arm: ControlArm, sweep_dir: Path
                     ) -> list[list[str]]:
    """The jobs and the control arm's: for each distinct study part of the jobs
    (their overrides that set how the study runs: seed, repeat, block, suite
    …), that part with the arm's overrides, unless a listed job already is it.
    The keys that tell the jobs apart (the arm's keys and every configuration
    key a job sets) become the sweep's swept keys, so each job's variant name
    shows them and the arm's name is ``arm.name``."""
    out = [list(j) for j in jobs]
    have = {(tuple(study_part(j)), tuple(config_overrides(j))) for j in out}
    for job in jobs:
        study = tuple(study_part(job))
        if (study, tuple(sorted(arm.overrides))) not in have:
            have.add((study, tuple(sorted(arm.overrides))))
            out.append([*study, *arm.overrides])
    keys = {_key(o) for j in out for o in config_overrides(j)}
    if keys:
        def widen(info: Any) -> None:
            info.swept_keys = sorted(set(info.swept_keys) | keys)

        update_manifest(sweep_dir, widen)
    return out


__all__ = ["CONTROL_FILE", "ControlArm", "arm_name", "baseline_arm", "control_arm",
           "study_part", "with_control_arm"]
