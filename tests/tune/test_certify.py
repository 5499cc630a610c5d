"""Certification pays for the k candidates, and the option written for a
candidate that ships composes as a scorer option with the tuned values."""

from __future__ import annotations

import numpy as np
from omegaconf import OmegaConf

from silas_exp.analysis.data import JobData, SweepData
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.config import validate
from silas_exp.tune.certify import certify, write_option

METRIC = "context.retrieval_relevance"


def jobs(variant: str, m: np.ndarray) -> list[JobData]:
    ids = [f"c{i}" for i in range(m.shape[0])]
    return [JobData(variant, r, {}, {c: {METRIC: float(m[i, r]), "summary.pass": 1.0,
                                         "summary.error": 0.0} for i, c in enumerate(ids)},
                    status={c: "pass" for c in ids}) for r in range(m.shape[1])]


def test_k_candidates_are_certified_at_the_bonferroni_confidence():
    rng = np.random.default_rng(0)
    # every case passes in every arm: 320 agreeing cases rule out a loss of the pass rate's
    # margin, 40 would not (the pass rate's interval keeps its width without disagreement)
    base = rng.normal(0.7, 0.1, (320, 3))
    data = SweepData("s", "", jobs("control", base) + jobs("a", base + 0.05)
                     + jobs("b", base - 0.2))
    cert, result = certify(data, {"a": 3, "b": 5}, "control", "control",
                           AnalysisSettings(gate=[METRIC]), [METRIC], {})
    assert cert.k == 2 and result.confidence == cert.confidence == 1 - 0.05 / 2
    outcomes = {c.variant: c.outcome for c in cert.candidates}
    assert outcomes == {"a": "ship", "b": "do_not_ship"}
    assert cert.candidates[0].holdout_delta[METRIC] > 0.04


def test_a_shipped_option_composes_with_its_tuned_values(tmp_path, compose):
    params = {"scorer.base.zone.chronicle": 0.3351, "scorer.base.age_decay": 0.9502,
              "scorer.l2": 3.951, "prompt": "no_guidance"}
    path, others = write_option(tmp_path, "weights", "weights_tuned", params, "tuned\nhere")
    assert others == ["prompt=no_guidance"]
    extra = tmp_path / "proposed"
    dcfg = compose(f"hydra.searchpath=[file://{extra}]", "scorer=weights_tuned")
    cfg = validate(OmegaConf.to_container(dcfg, resolve=True))
    assert cfg.scorer.name == "weights" and cfg.scorer.l2 == 3.951
    assert cfg.scorer.base.zone.chronicle == 0.3351 and cfg.scorer.base.age_decay == 0.9502
    assert cfg.scorer.base.masked_penalty == 1.0  # untouched settings keep their defaults
    assert path.read_text().startswith("# tuned\n# here\n")
