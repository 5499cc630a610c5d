"""``regress`` refuses what it cannot decide on, before running anything: a
study or a configuration on another suite than the baseline's (exit 2, both
suites named), a baseline of a suite version that is gone; and no decision
reads with an empty reason."""

from __future__ import annotations

import pytest

from silas_exp.baselines import SuiteFolder
from silas_exp.errors import ConfigError
from silas_exp.gate.check import CheckRequest, check
from silas_exp.gate.ports import NoLog
from silas_exp.gate.promote import Study
from silas_exp.gate.report import CANDIDATE, regress
from silas_exp.schema.baseline import BaselineJob, BaselineRecord
from silas_exp.schema.benchmark import BenchmarkResult
from silas_exp.schema.runs import LoggedRun

from .test_report import _job


def _store(tmp_path, version: str = "3.0.0") -> SuiteFolder:
    results = [BenchmarkResult(case_id=f"case-{i:04d}", status="pass", latency_ms=1.0,
                               token_cost=1) for i in range(3)]
    record = BaselineRecord(suite="default", suite_version=version, variant="scorer=weights",
                            overrides=["scorer=weights"], seed=0, cases_per_block=40,
                            source_run_id="b" * 32, git_revision="c" * 40,
                            jobs=[BaselineJob(repeat=0, block=0, results=results)])
    store = SuiteFolder(tmp_path)
    store.write(record)
    return store


class _Reader:
    """A study of the smoke suite, as a run reader hands it."""

    uri = "sqlite:///unused.db"

    def artifact_text(self, run_id, name):
        return "- scorer=weights\n- suite=smoke\n" if name == "hydra/overrides.yaml" else \
            "seed: 0\ncases_per_block: 40\n"


def _smoke_study() -> Study:
    job = LoggedRun("j" * 32, "1", "weights r0", "FINISHED", 1,
                    {"silas.variant": "scorer=weights", "silas.suite": "smoke",
                     "silas.suite_version": "1.0.0", "silas.sweep_id": "smokestudy01"})
    return Study(job, "smokestudy01", "scorer=weights", [job])


def test_a_study_on_another_suite_is_refused_naming_both(tmp_path):
    store = _store(tmp_path)
    with pytest.raises(ConfigError) as err:
        check(_Reader(), NoLog(), store, CheckRequest("smokestudy01", "scorer=weights"),
              _smoke_study(), say=lambda line: None)
    text = str(err.value)
    assert "it runs suite `smoke` v1.0.0, but the baseline in " + store.where in text
    assert "is of suite `default` v3.0.0, so no case pairs with the baseline's" in text
    assert not list(tmp_path.glob("regress*"))  # nothing ran


def test_a_configuration_on_another_suite_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"runs suite `smoke` v1\.0\.0, but .* `default` v3\.0\.0"):
        check(None, NoLog(), _store(tmp_path), CheckRequest(config=["suite=smoke",
                                                                     "scorer=weights"]),
              say=lambda line: None)


def test_a_baseline_of_a_version_that_is_gone_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"is of suite `default` v2\.0\.0, but its configuration "
                                          r"now runs suite `default` v3\.0\.0; promote"):
        check(None, NoLog(), _store(tmp_path, "2.0.0"), CheckRequest(config=["scorer=weights"]),
              say=lambda line: None)


def test_no_decision_reads_with_an_empty_reason():
    report = regress([_job(0, seed=1)], [_job(0, seed=0)], subject="s", baseline_name="b",
                     baseline_run_id="a" * 32)
    report.result.verdicts[CANDIDATE].reasons.clear()
    assert report.reasons() == f"no gated metric decided on the {report.cases} paired cases"
    assert not report.headline().rstrip().endswith(":")


def test_a_relative_margin_is_fixed_once_from_the_baselines_logged_mean(tmp_path):
    """Tokens per served need's margin is 5 % of the baseline's logged mean, the
    same at every look of the check and in its report, whatever cases a look reads."""
    from silas_exp.analysis.settings import AnalysisSettings
    from silas_exp.gate.check import baseline_margins

    results = [BenchmarkResult(case_id=f"case-{i:04d}", status="pass", latency_ms=1.0,
                               token_cost=1, metrics={"context.tokens_per_served_need": tokens,
                                                      "context.retrieval_relevance": 0.7})
               for i, tokens in enumerate((9000.0, 9400.0, 9900.0))]
    record = BaselineRecord(suite="default", suite_version="3.0.0", variant="scorer=weights",
                            overrides=["scorer=weights"], source_run_id="b" * 32,
                            jobs=[BaselineJob(repeat=0, block=0, results=results)])
    margins = baseline_margins(record, AnalysisSettings())
    assert margins == {"context.tokens_per_served_need": pytest.approx(0.05 * 9433.333333)}
    mine = baseline_margins(record, AnalysisSettings(margins={
        "context.tokens_per_served_need": 300.0}))
    assert mine == {"context.tokens_per_served_need": 300.0}  # a declared margin wins
