"""One declared spec per metric: every metric a real job logs has one, gated
metrics have a direction and a margin, and directions are the declared ones
(not guessed from a key's spelling)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.errors import ConfigError
from silas_exp.metrics.registry import (
    MetricSpec,
    all_specs,
    find_spec,
    gated_for,
    markdown,
    register_metric,
    spec,
    undeclared,
)
from silas_exp.run.job import make_job, run_job

from ..conftest import REPO


@pytest.mark.parametrize("key,direction", [
    ("feedback.exclusion_rate", "lower"),   # fewer keep-backs = better proposals
    ("feedback.exclusion_auc", "higher"),
    ("judge.variance", "lower"),
    ("probe.tokens_after", "none"),         # read with the scores, not alone
    ("probe.compression_ratio", "higher"),
    ("context.tokens_per_served_need", "lower"),
    ("summary.error", "lower"),
    ("tier2.proposals", "none"),
    ("probe.dim.artifact_trail", "higher"),  # by family pattern
    ("llm.calls.keepback", "none"),
])
def test_declared_directions(key, direction):
    assert spec(key).direction == direction


def test_gated_metrics_are_decidable():
    for s in all_specs():
        if s.gate:
            assert s.direction != "none" and s.margin is not None and s.per_case, s.key
    assert set(gated_for("replay")) >= {"context.retrieval_relevance", "ir.ndcg_at_10",
                                        "context.tokens_per_served_need", "summary.pass"}
    assert "probe.overall" in gated_for("probe") and "probe.overall" not in gated_for("replay")
    with pytest.raises(ValueError):
        MetricSpec("x.y", "none", "u", "m", gate=("replay",), margin=0.1)


def test_unknown_metric_has_no_spec():
    assert find_spec("context.made_up") is None and undeclared(["context.made_up"]) == [
        "context.made_up"]
    with pytest.raises(ConfigError, match="register_metric"):
        spec("context.made_up")
    with pytest.raises(ValueError):
        register_metric(MetricSpec("ir.ndcg_at_10", "lower", "0-1", "redeclared"))


@pytest.mark.parametrize("suite", ["smoke", "probes"])
def test_every_metric_a_job_logs_is_declared(compose, tmp_path, suite):
    over = ["suite.max_cases=2", "scorer=heuristic"] if suite == "probes" else ["scorer=weights"]
    cfg = validate(OmegaConf.to_container(compose(f"suite={suite}",
                                                  "tracking=none", *over), resolve=True))
    out = run_job(cfg, make_job(cfg, "v"), tmp_path / "job")  # run_job itself refuses undeclared
    keys = set(out.metrics) | {k for r in out.results() for k in r.metrics}
    assert keys and undeclared(keys) == []


def test_metrics_doc_is_in_step_with_the_registry():
    assert (REPO / "docs" / "metrics.md").read_text() == markdown(), \
        "run: python scripts/metrics_doc.py"
