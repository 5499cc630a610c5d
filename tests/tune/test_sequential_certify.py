"""Certification of a holdout larger than ``cases_per_block`` runs in blocks
of cases with looks and alpha spending over them (marker ``optuna``): a clear
candidate stops at an early look with the cases it used, the control runs
while a candidate does, and a candidate worse than the control never ships."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from omegaconf import OmegaConf

from bench._tune_replays import RecordedJobs, option
from silas_exp.schema.benchmark import BenchmarkResult
from silas_exp.stats.sequential import spending_confidences

from .test_study import optuna, study

pytestmark = pytest.mark.optuna
METRIC = "context.retrieval_relevance"
CHRONICLE = "scorer.base.zone.chronicle"
HOLDOUT_EFFECT = {"0.9": 0.08, "0.1": -0.2}  # a clearly better and a clearly worse candidate


def rows(job: list[str], ids: list[str]) -> list[BenchmarkResult]:
    """Per-case relevance: 0.7 plus the job's effect (on training, its
    chronicle prior / 10; on holdout, HOLDOUT_EFFECT), with a little noise."""
    chronicle, part = option(job, CHRONICLE), option(job, "suite.split")
    effect = (0.0 if chronicle is None else
              float(chronicle) / 10 if part == "train" else HOLDOUT_EFFECT.get(chronicle, 0.0))
    g = np.random.default_rng([zlib.crc32(",".join(job).encode())])
    return [BenchmarkResult(case_id=cid, status="pass", latency_ms=1.0, token_cost=1,
                            metrics={METRIC: 0.7 + effect + g.normal(0, 0.01)}) for cid in ids]


@pytest.fixture()
def certified(tmp_path, compose):
    """A study on 40 pool cases (20 held out, blocks of 5: looks after blocks
    1, 2, 4; the first look's 5 cases are too few for a verdict, and a bounded
    metric's interval needs 10 disagreeing cases to narrow; every case passes on both
    sides, and the pass rate, always gated, gets a margin that 10 agreeing cases
    can clear), whose two certified candidates are a clearly better and a
    clearly worse configuration."""
    from silas_exp.config import validate
    from silas_exp.tune.driver import TuneLoop, settings_of
    from silas_exp.tune.study import open_study

    dcfg = compose("experiment=tune", "suite.max_cases=40", "cases_per_block=5", "repeats=2",
                   f"analysis.gate=[{METRIC}]", "++analysis.margins={summary.pass:0.5}")
    cfg = validate(OmegaConf.to_container(dcfg, resolve=True))
    raw = {**cfg.tune, "space": {"weights": {CHRONICLE: "interval(0.0,1.0)"}}, "n_trials": 3,
           "top_k": 2, "prune": False}
    loop = TuneLoop(cfg, settings_of(raw, {"repeat": "range(0,2)"}), tmp_path, [], "weights",
                    lambda key: False, {})
    launch = RecordedJobs(loop.swept, loop.scorer, cfg, tmp_path, rows)
    s = open_study(tmp_path, loop.dirs, "random", 0, 0, resume=False)
    s.enqueue_trial(loop.reference_params, user_attrs={"reference": True})
    for chronicle in (0.9, 0.1):  # training ranks them first and second after the untuned one
        s.enqueue_trial({CHRONICLE: chronicle})
    loop._search(s, launch)
    record = loop._record(s, launch.split)
    loop._certify(s, record, launch)
    return record, launch, tmp_path


def test_certification_runs_in_blocks_and_stops_at_an_early_look(certified):
    record, launch, folder = certified
    assert [b.params[CHRONICLE] for b in record.best] == [0.9, 0.1]
    c = record.certification
    assert c.holdout_cases == 20 and c.cases_per_block == 5 and c.looks == [1, 2, 4]
    # Bonferroni over the k = 2 candidates, spent over the looks at 5, 10 and 20 of 20 cases
    assert c.confidence == pytest.approx(spending_confidences(1 - 0.05 / 2, (0.25, 0.5, 1.0))[-1])
    for cand in c.candidates:
        assert cand.stopped_at == 2 and cand.cases == 10  # decided at the 2nd look, half the holdout
    holdout = [j for j in launch.launched if option(j, "suite.split") == "holdout"]
    assert {option(j, "block") for j in holdout} == {"0", "1"}  # blocks 2 and 3 never ran
    blocks = {b: {c for j in holdout if option(j, "block") == b for c in launch.cases(j)}
              for b in ("0", "1")}
    assert len(blocks["0"]) == len(blocks["1"]) == 5 and not blocks["0"] & blocks["1"]
    # the control and the untuned reference ran every block a candidate ran, every repeat
    for scorer in ("scorer=heuristic", "scorer=weights"):
        assert len([j for j in holdout if j[0] == scorer and option(j, CHRONICLE) is None]) == 2 * 2
    # a training job always runs the whole training split, never a block of it
    train = [j for j in launch.launched if option(j, "suite.split") == "train"]
    assert train and all(len(launch.cases(j)) == 20 for j in train)
    state = json.loads((folder / "adaptive.json").read_text())
    assert state["unit"] == "block" and set(state["closed"]) == {b.variant for b in record.best}


def test_a_worse_candidate_does_not_ship_and_is_not_proposed(certified):
    record, _, folder = certified
    outcomes = {c.trial: c.outcome for c in record.certification.candidates}
    assert outcomes == {record.best[0].number: "ship", record.best[1].number: "do_not_ship"}
    worse = record.certification.candidates[1]
    assert worse.holdout_delta[METRIC] < -0.1 and worse.proposal is None
    assert [p.name for p in (folder / "proposed" / "scorer").iterdir()] == ["weights_tuned.yaml"]


def test_a_real_study_certifies_in_blocks_and_resumes(tmp_path):
    """Real replays: 12 pool cases (6 held out) in blocks of 3; resumed, the
    study keeps its trials and certifies the same way."""
    args = ("suite.max_cases=12", "cases_per_block=3", "repeats=1")
    study(tmp_path, "tune.n_trials=2", *args, suite="default")
    first = json.loads((tmp_path / "study" / "tune.json").read_text())["certification"]
    assert first["looks"] == [1, 2] and first["cases_per_block"] == 3
    cand = first["candidates"][0]
    assert cand["stopped_at"] in (1, 2) and cand["cases"] == 3 * cand["stopped_at"]
    results = [json.loads(p.read_text()) for p in (tmp_path / "study").glob("1*/result.json")]
    held = {(r["variant"], r["block"]) for r in results if "holdout" in r["variant"]}
    assert {b for _, b in held} == set(range(cand["stopped_at"]))
    study(tmp_path, "tune.n_trials=2", "resume=true", *args, suite="default")
    again = json.loads((tmp_path / "study" / "tune.json").read_text())["certification"]
    assert again["candidates"][0]["outcome"] == cand["outcome"]
    assert again["candidates"][0]["stopped_at"] == cand["stopped_at"]
    s = optuna.load_study(study_name="silas-tune",
                          storage=f"sqlite:///{tmp_path / 'study' / 'optuna.db'}")
    assert len(s.trials) == 2  # resumed: nothing searched again
