"""The compiled replay loop (silas_exp.eviction.two_tier: kernel.py, compiled.py)
against the Python one it stands in for.

- Its primitives give the Python functions' bits: splitmix64, the flush key,
  the inverse normal CDF, the sort.
- Replayed both ways, generated sessions under settings that reach every
  branch (keep-backs on and off, a main model that keeps most candidates
  back and trips the hard ceiling, one that mostly times out, an explicit
  flush, a short masking age, wide and narrow zone caps) leave the same
  ReplayStats, flush copies, feedback-store rows and model-call accounting.
- Whatever the loop cannot replay (another scorer, exploration, a real or
  slowed main model, a spend cap, SILAS_EXP_REPLAY=python) is left to Python
  with nothing recorded.
- A job gives the same per-case results and metrics either way.

The golden runs (test_replay_golden.test_compiled_replay_gives_the_pinned_outputs)
pin the same equality against the stored digests.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sqlite3
from dataclasses import fields
from statistics import NormalDist

import numpy as np
import pytest
from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.context.budget import PROFILES, TokenBudget
from silas_exp.context.replay import NeedOracle, replay
from silas_exp.context.stats import ReplayStats
from silas_exp.data.suites.build import peak_usage
from silas_exp.data.suites.generator import generate_session, spec_for
from silas_exp.eviction.two_tier import TwoTierEviction, TwoTierSettings, compiled
from silas_exp.eviction.two_tier import kernel as K
from silas_exp.feedback.flush import KeepBackBroker, KeepbackConfig, MainModel
from silas_exp.feedback.store import FeedbackStore
from silas_exp.llm import LLMSettings, build_client
from silas_exp.llm.simulated import KeyedDraws, mix64
from silas_exp.run.job import make_job, run_job
from silas_exp.scorers import ScorerContext, build_scorer, validate_scorer_settings

from ..conftest import CONF

# -- primitives -----------------------------------------------------------------


def test_mix64_and_the_flush_key_are_the_python_ones():
    rng = np.random.default_rng(0)
    for z in rng.integers(0, 2**63, size=200, dtype=np.uint64).tolist() + [0, 1, 2**64 - 1]:
        assert int(K.mix64(np.uint64(z))) == mix64(z)
    draws = KeyedDraws(3, "ns/case", "keepback")
    for turn in (0, 1, 17, 999):
        assert int(K.flush_key(np.uint64(draws._key), turn)) == draws._at((turn, 0))


def test_inv_cdf_is_statistics_normal_dist_bit_for_bit():
    normal = NormalDist()
    bits = np.random.default_rng(1).integers(0, 2**53, size=5000).tolist()
    ps = [(b + 0.5) * 2.0**-53 for b in bits]
    # the three branches and their edges: central, tails (r <= 5 and beyond)
    ps += [0.5, 0.075, 0.925, 0.0749999, 0.9250001, 1e-12, 1 - 1e-12, 1e-300, 0.5 * 2.0**-53]
    for p in ps:
        assert K.inv_cdf(p) == normal.inv_cdf(p), p


def test_argsort2_orders_by_primary_then_secondary():
    rng = np.random.default_rng(2)
    for n in (0, 1, 2, 7, 64, 333):
        primary = rng.integers(0, 4, size=n).astype(float)  # many ties
        secondary = rng.permutation(n).astype(np.int64)
        got = K.argsort2(primary, secondary).tolist()
        assert got == sorted(range(n), key=lambda i: (primary[i], secondary[i]))


# -- the loop, replayed both ways ------------------------------------------------

# (generator seed, flavour, turns, fill, settings): what each scenario reaches
SCENARIOS = {
    "coding": (31, "coding", 120, 3.0, {}),
    "support-no-keepbacks": (32, "support", 100, 2.2, {"keepbacks": False}),
    "research-hoarder": (33, "research", 100, 3.0, {"false_keep": 0.9}),  # the hard ceiling
    "debugging-slow-model": (34, "debugging", 100, 2.5, {"latency_median_ms": 1900.0}),  # timeouts
    "chronicle-flush": (35, "chronicle", 90, 3.0, {"flush_turn": 64, "mask_after": 2}),
    "coding-narrow-caps": (36, "coding", 90, 1.6, {"zone_cap_factor": 1.0, "ttl": 3}),
    "support-wide-caps": (37, "support", 90, 3.5, {"zone_cap_factor": 2.0, "recall": 0.3}),
    "research-calm": (38, "research", 60, 0.5, {}),  # under budget: Tier 2 never runs
}


def _prompt_context() -> dict:
    """What the prompt scorer is built with: the default template and a calibration's guidance."""
    import yaml

    from silas_exp.feedback.calibration import Calibration, ExclusionRates, Rate
    from silas_exp.scorers.prompt import PromptSettings

    raw = yaml.safe_load((CONF / "prompt" / "default.yaml").read_text())
    guidance = ["- zone=chronicle: kept back in 35% of proposals (overall 12%); score these higher",
                "- age=30_plus: kept back in 3% of proposals (overall 12%); score these lower"]
    return {"prompt": PromptSettings(**{k: v for k, v in raw.items() if k != "defaults"}),
            "calibration": Calibration(np.zeros(17), ExclusionRates(Rate(0.12, 50), {}, {}, {}),
                                       guidance, 50)}


def _replay(name: str, engine: str, tmp_path, scorer_name: str = "heuristic"):
    seed, flavour, turns, fill, opts = SCENARIOS[name]
    session, truth = generate_session(seed, spec_for(flavour, turns), name)
    budget = TokenBudget(total=max(int(peak_usage(session, truth) / fill), 2_000),
                         observation_mask_after_turns=opts.get("mask_after", 5),
                         subscription_ttl_turns=opts.get("ttl", 10))
    llm = build_client(LLMSettings(cache_mode="off"), seed=5, cache_dir=None)
    path = tmp_path / f"{name}-{engine}.sqlite"
    store = FeedbackStore(path)
    oracle, stats = NeedOracle(truth), ReplayStats(flush_log=[])
    scorer = build_scorer(validate_scorer_settings({"name": scorer_name}), ScorerContext(
        seed=5, namespace=name, scorer_model="claude-haiku-4-5", llm=llm,
        **(_prompt_context() if scorer_name == "prompt" else {})))
    main = MainModel("claude-sonnet-4-5", "simulated", KeepbackConfig(
        **{k: opts[k] for k in ("false_keep", "latency_median_ms", "recall") if k in opts}))
    broker = KeepBackBroker(main, llm, store, f"{name}/r0", 5, oracle.max_grade_within)
    settings = TwoTierSettings(keepbacks=opts.get("keepbacks", True),
                               zone_cap_factor=opts.get("zone_cap_factor", 1.25))
    strategy = TwoTierEviction(settings, budget, PROFILES[session.profile], scorer, broker, stats,
                               session.scope_id)
    flush_turn = opts.get("flush_turn")
    if engine == "compiled":
        assert strategy.replay_compiled(session, truth, budget, stats, flush_turn)
    else:
        def step(window, turn):
            (strategy.compress if turn == flush_turn else strategy.step)(window, turn)

        saved = os.environ.get(compiled.ENGINE_VARIABLE)
        os.environ[compiled.ENGINE_VARIABLE] = "python"  # the scorer's calls through the client too
        try:
            replay(session, truth, step, budget, stats)
        finally:
            os.environ.pop(compiled.ENGINE_VARIABLE)
            if saved is not None:
                os.environ[compiled.ENGINE_VARIABLE] = saved
    store.close()
    db = sqlite3.connect(path)
    rows = (db.execute("SELECT proposal_id, scope_id, turn_number, scorer_model, resolved_by, evicted, "
                       "excluded FROM eviction_feedback ORDER BY rowid").fetchall(),
            db.execute("SELECT * FROM eviction_candidates ORDER BY rowid").fetchall())
    db.close()
    accounting = llm.accounting.as_metrics()
    llm.close()
    return stats, rows, accounting


def _observed(stats: ReplayStats) -> dict:
    out = {f.name: getattr(stats, f.name) for f in fields(stats) if f.name != "flush_log"}
    out["flush_log"] = [(f.turn, f.kept, [it.__getstate__() for it in f.items]) for f in stats.flush_log]
    return out


def _same_rows(a, b) -> bool:
    """Rows equal, a NULL (NaN bound) equal to itself."""
    def norm(rows):
        return [tuple("NULL" if isinstance(v, float) and math.isnan(v) else v for v in r) for r in rows]
    return all(norm(x) == norm(y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_compiled_replay_leaves_the_python_records(name, tmp_path):
    py_stats, py_rows, py_accounting = _replay(name, "python", tmp_path)
    c_stats, c_rows, c_accounting = _replay(name, "compiled", tmp_path)
    py, cc = _observed(py_stats), _observed(c_stats)
    assert [k for k in py if py[k] != cc[k]] == []
    assert _same_rows(py_rows, c_rows) and len(py_rows[1]) == len(c_rows[1])
    assert py_accounting == c_accounting


# the scorers the loop pauses for: the online one's refits, the prompt scorer's calls
# (answered in process); scenarios with keep-backs, without, the ceiling, timeouts, a flush
PAUSING = ["coding", "support-no-keepbacks", "research-hoarder", "debugging-slow-model",
           "chronicle-flush"]


@pytest.mark.parametrize("scorer", ["online", "prompt"])
@pytest.mark.parametrize("name", PAUSING)
def test_compiled_replay_with_a_scorer_it_pauses_for(scorer, name, tmp_path):
    """Replayed both ways, the same records; the prompt scorer's calls and the
    keep-backs counted alike, in the same order (the cost summed to the same bits)."""
    py_stats, py_rows, py_accounting = _replay(name, "python", tmp_path, scorer)
    c_stats, c_rows, c_accounting = _replay(name, "compiled", tmp_path, scorer)
    py, cc = _observed(py_stats), _observed(c_stats)
    assert [k for k in py if py[k] != cc[k]] == []
    assert _same_rows(py_rows, c_rows) and len(py_rows[1]) == len(c_rows[1])
    assert py_accounting == c_accounting
    assert py_stats.proposals > 3 and (scorer == "online") == (py_accounting.get("llm.calls.scorer") is None)


def test_the_scenarios_reach_every_branch(tmp_path):
    """Each scenario exercises what it is there for (else the equality above is idle)."""
    reached = {name: _replay(name, "compiled", tmp_path)[0] for name in SCENARIOS}
    assert reached["coding"].proposals > 5 and reached["coding"].auto_resolved >= 1
    assert reached["coding"].masked and reached["coding"].trivial_dropped
    assert reached["coding"].re_retrievals and reached["coding"].subscriptions_deactivated
    assert reached["research-hoarder"].hard_ceiling_overrides >= 1
    slow = reached["debugging-slow-model"]
    assert slow.auto_resolved > slow.proposals / 3
    assert reached["support-no-keepbacks"].auto_resolved == 0
    assert not any(reached["support-no-keepbacks"].candidate_excluded)
    assert any(f.turn == 64 for f in reached["chronicle-flush"].flush_log)  # not a flush of step
    assert reached["research-calm"].scorer_calls == 0 and reached["research-calm"].evictions
    assert any(len(f.items) > 1 and any(it.group for it in f.items) for s in reached.values()
               for f in s.flush_log), "no coherence group was ever proposed"


# -- what stays in Python --------------------------------------------------------


def _strategy(tmp_path, *, scorer="heuristic", explore=0.0, main_backend="simulated",
              llm_settings=None):
    session, truth = generate_session(1, spec_for("coding", 40), "x")
    budget = TokenBudget(total=max(int(peak_usage(session, truth) / 3.0), 2_000))
    llm = build_client(llm_settings or LLMSettings(cache_mode="off"), seed=1, cache_dir=None)
    oracle, stats = NeedOracle(truth), ReplayStats()
    built = build_scorer(validate_scorer_settings({"name": scorer}), ScorerContext(
        seed=1, namespace="x", scorer_model="h", llm=llm,
        oracle=lambda cid, t: oracle.need_score(cid, t, 20)))
    broker = KeepBackBroker(MainModel("m", main_backend), llm, FeedbackStore(tmp_path / "f.sqlite"),
                            "x", 1, oracle.max_grade_within)
    strategy = TwoTierEviction(TwoTierSettings(explore_rate=explore), budget, PROFILES[session.profile],
                               built, broker, stats, session.scope_id)
    return session, truth, strategy, budget, stats


@pytest.mark.parametrize("case", ["oracle", "random", "explore", "real main model",
                                  "spend cap", "variable"])
def test_what_the_loop_cannot_replay_is_left_to_python(case, tmp_path, monkeypatch):
    kw = {"oracle": {"scorer": "oracle"}, "random": {"scorer": "random"},
          "explore": {"explore": 0.15}, "real main model": {"main_backend": "anthropic"},
          "spend cap": {"llm_settings": LLMSettings(cache_mode="off", max_usd=5.0)},
          "variable": {}}[case]
    if case == "variable":
        monkeypatch.setenv(compiled.ENGINE_VARIABLE, "python")
    session, truth, strategy, budget, stats = _strategy(tmp_path, **kw)
    assert not strategy.replay_compiled(session, truth, budget, stats)
    assert stats == ReplayStats() and strategy.broker.store.count() == 0
    if case != "variable":
        assert strategy.compiled_ineligible()


def test_the_control_is_replayed_compiled(tmp_path):
    session, truth, strategy, budget, stats = _strategy(tmp_path)
    assert strategy.compiled_ineligible() is None
    assert strategy.replay_compiled(session, truth, budget, stats)
    assert stats.turns == session.turns and stats.proposals > 0


# -- a job, both ways ------------------------------------------------------------


def _job(compose, out, *overrides):
    cfg = validate(OmegaConf.to_container(compose("tracking=none", "suite.max_cases=4", *overrides),
                                          resolve=True))
    outcome = run_job(cfg, make_job(cfg, overrides[0]), out)
    cases = [json.loads(line) for line in outcome.results_path.read_text().splitlines()]
    for c in cases:
        c.pop("latency_ms")
    return outcome.metrics, cases


@pytest.mark.parametrize("scorer", ["heuristic", "weights", "online", "prompt"])
def test_a_job_gives_the_same_results_either_way(scorer, compose, tmp_path, monkeypatch):
    """The control (its flushes recorded as the reference), the fitted
    weights (the reference scored after the replay), the online scorer (the
    reference scored with the weights of each turn) and the prompt scorer
    (its calls answered in process): every case result and job metric as the
    Python loop gives them."""
    from silas_exp.run import calibration as calibration_module
    from silas_exp.run import references

    results = {}
    taken: list[bool] = []

    replay_compiled = TwoTierEviction.replay_compiled

    @functools.wraps(replay_compiled)  # its signature: it calls before_step itself
    def counted(*args, **kwargs):
        replayed = replay_compiled(*args, **kwargs)
        taken.append(replayed)
        return replayed

    monkeypatch.setattr(TwoTierEviction, "replay_compiled", counted)
    for engine in ("python", "auto"):
        monkeypatch.setenv(compiled.ENGINE_VARIABLE, engine)
        monkeypatch.setattr(calibration_module, "_CALIBRATIONS", {})
        monkeypatch.setattr(references, "_REFERENCES", type(references._REFERENCES)())
        # a cache folder each: the first run's calibration and reference stay out of the second's
        results[engine] = _job(compose, tmp_path / engine, f"scorer={scorer}",
                               f"paths.cache={tmp_path / engine / 'cache'}")
        if engine == "python":
            assert taken and not any(taken)
            taken.clear()
    # the job's own four cases (and the control's reference, replayed by the weights
    # job) through the compiled loop; the weights' calibration replays explore: Python
    assert sum(taken) >= 4, "the auto run did not replay through the compiled loop"
    assert all(taken) == (scorer in ("heuristic", "online"))  # calibration explores: Python
    (py_metrics, py_cases), (c_metrics, c_cases) = results["python"], results["auto"]
    assert py_cases == c_cases
    timed = {"summary.mean_latency_ms", "summary.p95_latency_ms"}  # wall clock: what differs
    assert timed <= set(py_metrics)
    assert {k: v for k, v in py_metrics.items() if k not in timed} == \
        {k: v for k, v in c_metrics.items() if k not in timed}
    assert any("feedback.exclusion_auc" in c["metrics"] for c in c_cases)


def test_answer_chars_is_the_encoded_answers_length():
    """The keep-back answer's characters, counted, are those of the answer the
    simulated main model encodes (ids with quotes, backslashes, non-ASCII)."""
    from silas_exp.llm.simulated import _ANSWER_JSON

    rng = np.random.default_rng(3)
    alphabet = list('ab_-:/"\\é漢\n 0')
    for k in range(6):
        ids = ["".join(rng.choice(alphabet, size=rng.integers(1, 12))) for _ in range(k)]
        reasons = [str(rng.choice(["still needed", "may need"])) for _ in range(k)]
        data = {"exclude_ctx_ids": ids,
                "reasons": [{"ctx_id": c, "reason": r} for c, r in zip(ids, reasons, strict=True)]}
        assert compiled.answer_chars(ids, reasons) == len(_ANSWER_JSON.encode(data)), (ids, reasons)


def test_warm_up_loads_the_one_specialization_replays_use(tmp_path):
    """The launcher's warm-up loads the machine code a replay then runs: the same
    argument types, so no replay compiles a second specialization."""
    compiled.warm_up()
    assert len(K.replay_kernel.signatures) == 1
    session, truth, strategy, budget, stats = _strategy(tmp_path)
    assert strategy.replay_compiled(session, truth, budget, stats)
    assert len(K.replay_kernel.signatures) == 1
