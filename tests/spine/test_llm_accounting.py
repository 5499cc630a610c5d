"""A job's own model calls (llm.*, per-case token cost) do not depend on what
its process already holds: the calls made only to measure (offline
calibration, the control's reference replays) are llm.overhead.*, made by
whichever job needs them first. Before, a weights job that happened to fit
the calibration, or a variant that replayed the control itself (a parallel
worker), reported that spend as its own."""

from __future__ import annotations

import json

from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.run import calibration as calibration_module
from silas_exp.run import references
from silas_exp.run.job import make_job, run_job


def _run(compose, out, *overrides):
    cfg = validate(OmegaConf.to_container(compose("tracking=none", "suite.max_cases=3", *overrides),
                                          resolve=True))
    outcome = run_job(cfg, make_job(cfg, overrides[0]), out)
    cases = [json.loads(line) for line in outcome.results_path.read_text().splitlines()]
    return outcome.metrics, [(c["case_id"], c["token_cost"]) for c in cases]


def test_measurement_calls_are_overhead_not_the_variants_own(compose, tmp_path, monkeypatch):
    monkeypatch.setattr(calibration_module, "_CALIBRATIONS", {})
    monkeypatch.setattr(references, "_REFERENCES", type(references._REFERENCES)())
    cold, cold_cases = _run(compose, tmp_path / "cold", "scorer=weights")  # fits, replays the control
    warm, warm_cases = _run(compose, tmp_path / "warm", "scorer=weights")  # both held in the process
    assert cold["llm.overhead.calls"] > 0 and warm["llm.overhead.calls"] == 0
    # the simulated backend spends nothing: its cost is labelled as simulated
    assert cold["llm.overhead.cost_usd_simulated"] > 0
    assert warm["llm.overhead.cost_usd_simulated"] == 0 and "llm.overhead.cost_usd" not in cold
    own = sorted(k for k in cold if k.startswith("llm.") and not k.startswith("llm.overhead."))
    assert own and {k: cold[k] for k in own} == {k: warm[k] for k in own}
    assert cold["llm.calls"] > 0 and cold_cases == warm_cases
    assert cold["summary.total_token_cost"] == warm["summary.total_token_cost"]
