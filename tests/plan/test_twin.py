"""The simulated twin of a study: every arm on the study's own cases, seeds and
blocks, as the study's jobs would run with the simulated model; kept on disk,
so nothing is replayed twice."""

from __future__ import annotations

import math

from silas_exp.analysis.data import job_data
from silas_exp.config import compose_config
from silas_exp.run.job import make_job, run_job
from silas_exp.run.twin import TwinSpec, simulated_twin

from ..conftest import REPO

REL = "context.retrieval_relevance"


def _spec(tmp, *extra: str) -> TwinSpec:
    design = ["suite.max_cases=8", "cases_per_block=4", "seed=3", f"paths.suites={REPO / 'suites'}",
              f"paths.cache={tmp / 'cache'}", *extra]
    return TwinSpec({"scorer=heuristic": ["scorer=heuristic", *design],
                     "scorer=weights": ["scorer=weights", *design]}, "scorer=heuristic", 1, 2)


def test_the_twin_is_each_arm_replayed_on_the_studys_blocks_with_the_simulated_model(tmp_path):
    spec = _spec(tmp_path)
    twin = simulated_twin(spec, workers=2)
    assert twin.replayed == 4 and {twin.blocks_of(a) for a in spec.arms} == {2}
    for arm, overrides in spec.arms.items():
        for block in range(2):
            cfg = compose_config([*overrides, f"block={block}", "tracking=none"])
            outcome = run_job(cfg, make_job(cfg, arm), tmp_path / f"{arm}-{block}")
            own = job_data(arm, 0, outcome.metrics, outcome.results()).cases
            values = twin.values(arm, REL)
            assert {c: round(r[REL], 12) for c, r in own.items()} == \
                {c: round(values[(c, 0)], 12) for c in own}
    assert len(twin.values("scorer=weights", REL)) == 8
    data = twin.sweep_data(blocks=1)
    assert sorted(data.variants()) == sorted(spec.arms) and len(data.jobs[0].cases) == 4
    # the calibration, made once, is the twin's only overhead
    assert sum(j.metrics["llm.overhead.calls"] > 0 for j in twin.jobs) == 1

    again = simulated_twin(spec)
    assert again.replayed == 0 and again.seconds == 0.0
    assert again.values("scorer=weights", REL) == twin.values("scorer=weights", REL)


def test_a_real_model_study_is_replayed_with_its_model_ids_and_prices(tmp_path):
    spec = _spec(tmp_path, "model=claude-haiku-4-5")
    twin = simulated_twin(spec, upto={"scorer=weights": 1})
    assert twin.blocks_of("scorer=weights") == 1 and twin.blocks_of("scorer=heuristic") == 1
    job = twin.jobs_of("scorer=weights")[0]
    assert job.metrics["llm.calls"] > 0 and job.metrics["llm.cost_usd_simulated"] > 0
    assert job.prefixes["keepback"][0] == "claude-haiku-4-5" and job.prefixes["keepback"][1] > 0
    assert not math.isnan(job.cpu_s)
