"""The ablation with a simulated twin: the paid per-case differences corrected
by the twin's over the whole pool, the multiplier in the report, and no
correction where the twin cannot help honestly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from silas_exp.analysis.ablation import ablation
from silas_exp.analysis.data import JobData, SweepData
from silas_exp.analysis.settings import AnalysisSettings
from tests.conftest import REPO

METRIC = "context.retrieval_relevance"
CONTROL, VARIANT = "scorer=heuristic", "scorer=weights"


def _jobs(values: dict[str, dict[str, float]]) -> list[JobData]:
    return [JobData(arm, 0, {}, {c: {METRIC: v, "summary.pass": 1.0, "summary.error": 0.0}
                                 for c, v in rows.items()},
                    status={c: "pass" for c in rows}) for arm, rows in values.items()]


def _study(paid: int = 40, pool: int = 320, rho: float = 0.95, seed: int = 0, z_weight: float = 0.0):
    rng = np.random.default_rng(seed)
    ids = [f"c{i:03d}" for i in range(pool)]
    level = rng.normal(0.7, 0.05, pool)
    x = rng.normal(0.0, 0.04, pool)  # the simulated difference
    z = rng.normal(0.0, 0.04, pool)  # what the baseline's history knows of a case
    # the paid difference
    y = rho * x + z_weight * z + np.sqrt(1 - rho**2) * rng.normal(0.0, 0.04, pool)
    twin = SweepData("twin", "", _jobs({CONTROL: dict(zip(ids, level, strict=True)),
                                        VARIANT: dict(zip(ids, level + x, strict=True))}))
    paid_ids = ids[:paid]
    data = SweepData("s", "", _jobs({CONTROL: {c: level[i] for i, c in enumerate(paid_ids)},
                                     VARIANT: {c: level[i] + y[i] for i, c in enumerate(paid_ids)}}))
    return data, twin, y[:paid], dict(zip(ids, z, strict=True))


def _row(result):
    return next(c for c in result.comparisons if c.metric == METRIC)


def test_a_good_twin_narrows_the_interval_around_the_corrected_estimate():
    data, twin, y, _ = _study()
    settings = AnalysisSettings(gate=[METRIC])
    plain = _row(ablation(data, settings, metrics=[METRIC]))
    data.twin = twin
    result = ablation(data, settings, metrics=[METRIC])
    row = _row(result)
    assert plain.covariates == () and np.isnan(plain.multiplier)
    assert abs(plain.delta - np.mean(y)) < 1e-12
    assert row.covariates == ("simulated",) and row.multiplier > 3
    assert (row.ci_high - row.ci_low) < 0.7 * (plain.ci_high - plain.ci_low)
    assert row.delta != plain.delta
    assert any("effective sample multiplier" in n and "×" in n for n in result.notes)


def test_no_correction_when_the_twin_misses_a_paid_case_or_every_case_is_paid():
    data, twin, _, _ = _study()
    settings = AnalysisSettings(gate=[METRIC])
    for job in twin.jobs:
        job.cases.pop("c000")
    data.twin = twin
    assert _row(ablation(data, settings, metrics=[METRIC])).covariates == ()
    whole, twin, _, _ = _study(paid=320)
    whole.twin = twin
    assert _row(ablation(whole, settings, metrics=[METRIC])).covariates == ()


def test_the_baseline_history_is_a_second_covariate_only_where_it_helps():
    settings = AnalysisSettings(gate=[METRIC])
    for weight, used in ((0.0, ("simulated",)), (1.0, ("simulated", "baseline"))):
        data, twin, _, z = _study(rho=0.3, seed=1, z_weight=weight)
        data.twin, data.history = twin, {c: {METRIC: v} for c, v in z.items()}
        assert _row(ablation(data, settings, metrics=[METRIC])).covariates == used


@pytest.mark.slow
@pytest.mark.timeout(1800)  # two sweeps of 24 cases: minutes on a busy 2-core machine
def test_a_paid_sequential_study_writes_its_twin_and_reports_what_it_bought(tmp_path):
    """A sweep on a model that is not the simulator (the departing model, through
    the sweeper) replays its simulated twin on the whole pool first; each look and
    the report correct with it. A simulated study has no twin."""
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    common = ["-m", "scorer=heuristic,weights", "cases_per_block=8", "suite.max_cases=24",
              "tracking=none", f"paths.cache={tmp_path / 'cache'}"]
    paid = subprocess.run([sys.executable, "-m", "tests.fakes.departing", *common,
                           "model.backend=departing_0.2", f"hydra.sweep.dir={tmp_path / 'paid'}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert paid.returncode == 0, paid.stderr[-3000:]
    twin = json.loads((tmp_path / "paid" / "twin.json").read_text())
    assert {j["variant"]: len(j["cases"]) for j in twin["jobs"]} == \
        {"scorer=heuristic": 24, "scorer=weights": 24}
    assert "effective sample multiplier" in (tmp_path / "paid" / "ablation.md").read_text()
    free = subprocess.run([sys.executable, "-m", "silas_exp", *common,
                           f"hydra.sweep.dir={tmp_path / 'free'}"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert free.returncode == 0, free.stderr[-3000:]
    assert not (tmp_path / "free" / "twin.json").exists()


def test_the_promoted_baselines_results_are_read_as_history(tmp_path):
    from silas_exp.analysis.data import baseline_history
    from silas_exp.schema.baseline import BASELINE_FILE, BaselineJob, BaselineRecord
    from silas_exp.schema.benchmark import BenchmarkResult

    def result(case: str, value: float, status: str = "pass") -> BenchmarkResult:
        return BenchmarkResult(case_id=case, status=status, latency_ms=1.0, token_cost=1,
                               metrics={METRIC: value})

    record = BaselineRecord(suite="default", suite_version="3.0.0", variant=CONTROL,
                            overrides=[CONTROL], source_run_id="run", jobs=[
                                BaselineJob(repeat=0, results=[result("a", 0.6), result("b", 0.8)]),
                                BaselineJob(repeat=1, results=[result("a", 0.7),
                                                               result("b", 0.9, "fail")])])
    assert baseline_history(tmp_path) is None
    (tmp_path / BASELINE_FILE).write_text(record.model_dump_json())
    history = baseline_history(tmp_path)
    assert abs(history["a"][METRIC] - 0.65) < 1e-12
    assert history["b"]["summary.pass"] == 0.5  # each case's mean over the baseline's repeats
