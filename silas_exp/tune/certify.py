"""Certification: the study's best trials (the top k) against the control on
the held-out cases, with the project's verdict rule (``analysis.ablation``),
at a confidence that pays for the k candidates (Bonferroni: each at
1 − (1 − confidence)/k, so the chance that any of the k ships while worse
than its margin stays within the rule's one-sided 2.5 %).

A holdout larger than ``cases_per_block`` is certified sequentially, as a
sweep is (``silas_exp.study``): in seeded blocks of cases, looking after
blocks 1, 2, 4, … and the last, the k-candidate confidence spent over the
looks by the sweep's group-sequential plan (silas_exp.stats.sequential: the
one-sided alpha/k of each candidate spent as alpha/k · t²); a candidate stops when its
verdict is decided or the rest of the holdout cannot decide it, and its
outcome is the one of the look it stopped at.

Only a candidate that ships is written out, as a ready option of its config
group in the sweep folder, with how to adopt it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from silas_exp.analysis.ablation import AblationResult, ablation
from silas_exp.analysis.data import SweepData, job_from_result, merge_blocks
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.records import RESULT_FILE, read_job_result
from silas_exp.stats import Outcome
from silas_exp.study.state import AdaptiveState, read_as_decided
from silas_exp.tune.record import Candidate, Certification

PROPOSED_DIR = "proposed"


def certified_confidence(confidence: float, k: int) -> float:
    """Two-sided confidence of each of k certifications (Bonferroni)."""
    return 1 - (1 - confidence) / max(k, 1)


def certification_settings(settings: AnalysisSettings, k: int, control: str) -> AnalysisSettings:
    """The analysis settings of certifying k candidates against ``control``."""
    return settings.model_copy(update={"confidence": certified_confidence(settings.confidence, k),
                                       "control": control, "use_baseline": False})


def load_jobs(sweep_id: str, command: str, folders: Sequence[Path], swept: list[str]
              ) -> SweepData:
    """The finished certification jobs (only these folders: the trials' jobs
    ran on other cases), a variant's blocks of cases merged into one job per repeat."""
    jobs = []
    for folder in folders:
        if (folder / RESULT_FILE).is_file():
            result = read_job_result(folder / RESULT_FILE)
            if result.finished and result.run is not None:
                jobs.append(job_from_result(result, folder=folder))
    return SweepData(sweep_id, command, merge_blocks(jobs), swept)


def _mean_gain(data: SweepData, variant: str, other: str, metric: str) -> float:
    _, m = data.matrix(variant, other, metric)
    with np.errstate(all="ignore"):
        return float(np.nanmean(m)) if m.size and not np.all(np.isnan(m)) else math.nan


def certify(data: SweepData, candidates: Mapping[str, int], control: str, reference: str,
            settings: AnalysisSettings, objectives: Sequence[str],
            train_gain: Mapping[str, dict[str, float]], sequential: AdaptiveState | None = None
            ) -> tuple[Certification, AblationResult]:
    """``candidates``: variant -> trial number, best first. ``sequential``: the
    looks of a holdout certified in blocks, whose stops are the outcomes."""
    k = len(candidates)
    # a holdout certified in blocks: each candidate read at the look it stopped at
    looked, own, notes = read_as_decided(sequential, certification_settings(settings, k, control))
    result = ablation(data, looked, confidence_of=own)
    result.notes += notes
    holdout = sequential.pool_cases if sequential is not None and sequential.pool_cases else len(
        {c for j in data.jobs for c in j.cases})
    cert = Certification(control=control, reference=reference, k=k, confidence=looked.confidence,
                         holdout_cases=holdout, notes=list(result.notes))
    if sequential is not None:
        cert.cases_per_block, cert.looks = sequential.cases_per_block, list(sequential.looks)
    variants = set(data.variants())
    for variant, trial in candidates.items():
        vv = result.verdicts.get(variant)
        if vv is None:
            cert.candidates.append(Candidate(trial=trial, variant=variant, outcome="failed",
                                             reasons=["no finished certification job"]))
            continue
        stop = sequential.closed.get(variant) if sequential is not None else None
        deltas = {c.metric: c.delta for c in result.comparisons
                  if c.variant == variant and c.metric in objectives}
        gains = {m: _mean_gain(data, variant, reference, m) for m in objectives} \
            if reference in variants else {}
        cert.candidates.append(Candidate(
            trial=trial, variant=variant, outcome=stop["outcome"] if stop else vv.outcome.value,
            reasons=[stop["why"]] if stop else list(vv.reasons),
            train_gain=dict(train_gain.get(variant, {})), holdout_gain=gains,
            holdout_delta=deltas, stopped_at=stop["round"] if stop else None,
            cases=len({c for j in data.jobs_of(variant).values() for c in j.cases})))
    return cert, result


def ships(candidate: Candidate) -> bool:
    return candidate.outcome == Outcome.SHIP.value


def nested(params: Mapping[str, object], prefix: str) -> dict:
    """``{"scorer.base.age_decay": 0.3}`` -> ``{"base": {"age_decay": 0.3}}`` for ``prefix="scorer"``."""
    out: dict = {}
    for key, value in params.items():
        if not key.startswith(prefix + "."):
            continue
        node = out
        *path, leaf = key[len(prefix) + 1:].split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def write_option(sweep_dir: Path, scorer: str, name: str, params: Mapping[str, object],
                 header: str) -> tuple[Path, list[str]]:
    """A ready option of the scorer group (``proposed/scorer/<name>.yaml``): the
    tuned scorer's own option with the tuned values over it; returns its path
    and the overrides of other keys (config groups) to use with it."""
    path = sweep_dir / PROPOSED_DIR / "scorer" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = OmegaConf.to_yaml(OmegaConf.create(nested(params, "scorer")))
    others = [f"{k}={v}" for k, v in params.items() if not k.startswith("scorer.")]
    comment = "\n".join(f"# {line}" if line else "#" for line in header.splitlines())
    path.write_text(f"{comment}\ndefaults:\n  - {scorer}\n  - _self_\n{body}")
    return path, others
