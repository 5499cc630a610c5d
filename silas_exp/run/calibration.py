"""Offline calibration of a job: replay the suite's calibration cases under the
control scorer, fit weights and guidance on the recorded feedback, and share
the fit (in the process, and on disk across the workers of a sweep)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from silas_exp.config import ExperimentConfig
from silas_exp.data.suites.loader import LoadedSuite, replay_size
from silas_exp.errors import SuiteError
from silas_exp.eviction.base import STRATEGIES
from silas_exp.feedback.calibration import Calibration, ExclusionRates, Rate, calibrate
from silas_exp.feedback.store import FeedbackStore
from silas_exp.records import write_json_atomic
from silas_exp.run import disk_cache
from silas_exp.run.assemble import JobParts, JobSpec
from silas_exp.run.case_replay import replay_case
from silas_exp.run.failures import FailureLog
from silas_exp.run.inflight import in_case_order
from silas_exp.run.suite_needs import no_calibration_cases
from silas_exp.scorers.base import SCORERS, CalibrationSpec, calibration_spec
from silas_exp.scorers.heuristic import HeuristicSettings

_CALIBRATIONS: dict[str, Calibration] = {}
# the priority of the calibration's requests over the reference replays beside it
# and the cases (run/inflight.py, ``first``): every case of the job waits for it
CALIBRATION_FIRST = 1e15


def _calibration_key(cfg: ExperimentConfig, loaded: LoadedSuite, job: JobSpec,
                     spec: CalibrationSpec) -> str:
    """Everything the calibration result depends on, the code and the suite's
    files included; variants A and B of one repeat share it, so a sweep
    computes it once per repeat and process (once at all, from the disk cache).
    The backend that answers its replays is part of it: a dry run (simulated
    answers for a real model) never hands its fit to the real run."""
    parts = {
        "llm": [cfg.llm.backend, cfg.llm.base_url],
        "suite": [loaded.suite.suite_id, loaded.suite.version, str(loaded.root)],
        "base": spec.base.model_dump(), "explore": spec.explore_rate, "l2": spec.l2,
        "model": cfg.model.model_dump(), "eviction": cfg.eviction.model_dump(),
        "budget": cfg.budget.model_dump(), "seed": job.seed, "horizon": cfg.metrics.horizon,
    }
    return disk_cache.cache_key(parts, loaded.root)


def calibrate_job(parts: JobParts, out_dir: Path) -> Calibration | None:
    """Offline calibration: replay the suite's calibration cases under the control
    scorer with the same main model, then fit on the recorded feedback."""
    cfg, loaded = parts.cfg, parts.loaded
    spec = calibration_spec(cfg.scorer)
    if spec is None:
        return None
    key = _calibration_key(cfg, loaded, parts.job, spec)
    if key not in _CALIBRATIONS:
        # deterministic in its key: shared on disk by parallel workers and later runs,
        # unless a plug-in strategy or scorer (code outside the key's digest) is involved
        shared = disk_cache.shareable(STRATEGIES.kind_of(cfg.eviction), SCORERS.kind_of(cfg.scorer))
        if not shared:
            _CALIBRATIONS[key] = _fit_calibration(spec, parts, out_dir)
            return _CALIBRATIONS[key]
        cached = disk_cache.entry_path(cfg.paths.cache, "calibration", key, ".json")
        _CALIBRATIONS[key] = disk_cache.computed_once(  # a worker fitting it now: wait and read
            cached,
            lambda p: _calibration_from_json(json.loads(p.read_text())) if p.is_file() else None,
            lambda: _fit_calibration(spec, parts, out_dir),
            lambda p, cal: write_json_atomic(p, calibration_to_json(cal)))
    return _CALIBRATIONS[key]


class _Replays:
    """What the case scheduler (run/inflight.py) copies for each calibration case
    in flight: the parts, their client and store, and the rows it joins back."""

    def __init__(self, parts: JobParts) -> None:
        self.parts, self.llm, self.store = parts, parts.llm, parts.store
        self.probe_rows: list[dict] = []
        self.errors: list[str] = []
        self.failures = FailureLog([])


def calibration_to_json(cal: Calibration) -> dict:
    return {"weights": cal.weights.tolist(), "guidance": cal.guidance,
            "n_candidates": cal.n_candidates, "rates": asdict(cal.rates)}


def _calibration_from_json(data: dict) -> Calibration:
    def rate_map(m: dict) -> dict[str, Rate]:
        return {k: Rate(**v) for k, v in m.items()}

    r = data["rates"]
    rates = ExclusionRates(Rate(**r["overall"]), rate_map(r["by_zone"]), rate_map(r["by_age"]),
                           rate_map(r["by_scope"]))
    return Calibration(np.asarray(data["weights"]), rates, list(data["guidance"]),
                       int(data["n_candidates"]))


def _fit_calibration(spec: CalibrationSpec, parts: JobParts, out_dir: Path) -> Calibration:
    cfg, loaded = parts.cfg, parts.loaded
    cases = loaded.calibration_cases
    if not cases:  # found before the job by the pre-flight; here for run_job called directly
        raise SuiteError(f"scorer={cfg.scorer.name}: {no_calibration_cases(loaded)}")
    base = spec.base
    store = FeedbackStore(out_dir / "calibration_feedback.sqlite", fresh=True)
    cal_cfg = cfg.model_copy(update={"eviction": cfg.eviction.model_copy(
        update={"explore_rate": spec.explore_rate})}) if hasattr(cfg.eviction, "explore_rate") else cfg
    cal_parts = parts.with_store(store, cal_cfg)
    control = HeuristicSettings(weights=base)
    for _ in in_case_order(_Replays(cal_parts), cases,
                           lambda part, case: replay_case(part.parts, case, control, None),
                           "calibration cases", lambda case: replay_size(loaded, case, cfg.budget),
                           first=CALIBRATION_FIRST):
        pass  # feedback lands in the store, in case order
    result = calibrate(store.dataset(), base.vector(), l2=spec.l2)
    store.close()
    return result
