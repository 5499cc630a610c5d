"""Golden equivalence of the replay: the exact outputs of two-tier eviction
(Tier 1, Tier 2 with every scorer kind, the simulated main model's keep-backs,
the feedback store, offline calibration, the circuit breaker's fallback, an
explicit flush and the shared-candidate scoring the runner does) on generated
sessions, pinned as one sha256 per run.

The digests were computed on 24a40c8, before the replay-throughput work; a
speed-up must leave every one of them unchanged. Floats are compared to the
last bit, so a different CPU or numpy build could in principle round a dot
product differently; regenerate only after checking that is the cause. A digest covers every observation the
replay records (needs, window usage per turn, rankings, candidates, evictions,
counters, retained text, flush copies), the feedback rows written (less their
wall-clock timestamps), the model calls' token accounting and the case
metrics, with floats in full precision.

If a change alters replay behaviour on purpose, print the new digests with
``PYTHONPATH=. python -m tests.context.test_replay_golden`` and say why in the
commit.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from silas_exp.context.budget import PROFILES, TokenBudget, ZoneShares
from silas_exp.context.features import feature_rows
from silas_exp.context.replay import NeedOracle, replay
from silas_exp.context.stats import ReplayStats
from silas_exp.data.suites.build import fitted_shares, peak_usage
from silas_exp.data.suites.generator import generate_session, spec_for
from silas_exp.eviction.two_tier import TwoTierEviction, TwoTierSettings
from silas_exp.feedback.calibration import calibrate
from silas_exp.feedback.flush import KeepBackBroker, MainModelSettings
from silas_exp.feedback.store import FeedbackStore
from silas_exp.llm import LLMSettings, build_client
from silas_exp.metrics.context import case_metrics
from silas_exp.schema.eviction import ContextZone
from silas_exp.scorers import (
    ScorerContext,
    ScorerUnavailable,
    build_scorer,
    validate_scorer_settings,
)
from silas_exp.scorers.heuristic import HeuristicWeights
from silas_exp.scorers.prompt import PromptSettings

from ..conftest import CONF

HORIZON = 20
# (seed, flavour, turns, fill, flush turn or None, fitted shares, observation_mask_after_turns)
SESSIONS = {
    "coding": (11, "coding", 90, 3.0, None, False, None),
    "debugging": (12, "debugging", 80, 2.2, None, False, None),
    "research": (13, "research", 80, 3.0, None, True, 8),
    "support": (14, "support", 90, 1.4, None, False, None),
    "chronicle": (15, "chronicle", 80, 3.0, 60, True, None),
}
# every scorer kind, plus the control failing on a pattern of turns, the control without
# keep-backs and the control with a main model that keeps most candidates back (hard ceiling)
VARIANTS = ("heuristic", "weights", "prompt", "online", "oracle", "random", "flaky", "no_keepbacks",
            "hoarder")
CONTROLS = ("flaky", "no_keepbacks", "hoarder")
CALIBRATION_SESSIONS = ((21, "debugging", 80), (22, "chronicle", 80))
ITEM_FIELDS = ("ctx_id", "zone", "kind", "full_tokens", "tokens", "born", "last_ref", "pinned",
               "group", "tool_name", "status", "relevance", "completed_turn", "refreshed_turns",
               "snippet", "masked", "active", "facts", "text")


class FlakyScorer:
    """The control scorer failing on a fixed pattern of turns (trips the breaker)."""

    name, model_id = "flaky", "flaky"

    def __init__(self, inner) -> None:
        self.inner = inner

    def score(self, items, turn):
        if turn % 9 in (1, 2, 3, 4):
            raise ScorerUnavailable("timeout")
        return self.inner.score(items, turn)

    def observe(self, items, excluded, turn):
        return None


def _case(name: str):
    seed, flavour, turns, fill, flush_turn, fitted, mask_after = SESSIONS[name]
    session, truth = generate_session(seed, spec_for(flavour, turns), name)
    overrides = {"total": max(int(peak_usage(session, truth) / fill), 2_000)}
    if mask_after is not None:
        overrides["observation_mask_after_turns"] = mask_after
    shares = ZoneShares(**fitted_shares(session)) if fitted else PROFILES[session.profile]
    return session, truth, TokenBudget(**overrides), shares, flush_turn


def _item(it) -> list:
    return [getattr(it, f) for f in ITEM_FIELDS]


def _store_rows(path: Path) -> dict:
    """The store's rows, each candidate with its feature row as the JSON of the
    row (the digests were pinned when the store kept that JSON itself; it now
    keeps the observations and rebuilds the rows, which must be equal to the bit)."""
    db = sqlite3.connect(path)
    try:
        feedback = db.execute("SELECT proposal_id, scope_id, turn_number, scorer_model, resolved_by, "
                              "evicted, excluded FROM eviction_feedback ORDER BY rowid").fetchall()
        rows = db.execute("SELECT proposal_id, rank, ctx_id, zone, kind, relevance_score, age_turns, "
                          "token_count, status, masked, completed, retrieval_relevance, excluded "
                          "FROM eviction_candidates ORDER BY rowid").fetchall()
    finally:
        db.close()
    x = feature_rows([ContextZone(r[3]) for r in rows], [r[4] for r in rows], [r[6] for r in rows],
                     [r[7] for r in rows], [r[8] for r in rows], [bool(r[9]) for r in rows],
                     [bool(r[10]) for r in rows], [r[11] for r in rows])
    candidates = [(*r[:8], json.dumps(f.tolist()), r[12]) for r, f in zip(rows, x, strict=True)]
    return {"feedback": feedback, "candidates": candidates}


def _digest(record: dict) -> str:
    blob = json.dumps(record, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _run(name: str, variant: str, calibration, store_path: Path,
         reference: list | None = None) -> tuple[dict, list]:
    """One replay as the runner does it; returns (observations, flush log)."""
    session, truth, budget, shares, flush_turn = _case(name)
    llm = build_client(LLMSettings(cache_mode="off"), seed=7, cache_dir=None)
    store = FeedbackStore(store_path)
    oracle, stats = NeedOracle(truth), ReplayStats(flush_log=[])
    namespace = f"golden/{name}"
    settings = validate_scorer_settings({"name": "heuristic" if variant in CONTROLS else variant})
    prompt = PromptSettings(**{k: v for k, v in _prompt_yaml().items() if k != "defaults"})
    scorer = build_scorer(settings, ScorerContext(
        seed=7, namespace=namespace, scorer_model="claude-haiku-4-5", llm=llm,
        calibration=calibration, prompt=prompt,
        oracle=lambda cid, t: oracle.need_score(cid, t, HORIZON)))
    if variant == "flaky":
        scorer = FlakyScorer(scorer)
    main = MainModelSettings("claude-sonnet-4-5", "simulated",
                             false_keep=0.9 if variant == "hoarder" else 0.05)
    broker = KeepBackBroker(main, llm, store, namespace, 7, oracle.max_grade_within)
    keepbacks = variant != "no_keepbacks"
    strategy = TwoTierEviction(TwoTierSettings(keepbacks=keepbacks), budget, shares, scorer,
                               broker if keepbacks else None, stats, session.scope_id)
    shared: list = []
    by_turn: dict[int, list] = {}
    for f in reference or ():
        by_turn.setdefault(f.turn, []).append(f)

    def step(window, turn: int) -> None:
        for f in by_turn.get(turn, ()):
            try:
                got = scorer.score(list(f.items), turn)
            except ScorerUnavailable:
                continue
            shared.append([got[i.ctx_id] for i in f.items])
        if turn == flush_turn:
            strategy.compress(window, turn)
        else:
            strategy.step(window, turn)

    replay(session, truth, step, budget, stats)
    llm.close()
    store.close()
    counters = {k: v for k, v in vars(stats).items() if isinstance(v, int)}
    record = {
        "counters": counters,
        "needs": [[n.turn, n.ctx_id, n.grade, n.served] for n in stats.needs],
        "window_tokens": stats.window_tokens,
        "rankings": [[r.turn, list(r.ranked)] for r in stats.rankings],
        "candidates": [stats.candidate_scores, stats.candidate_excluded, stats.candidate_turns,
                       stats.candidate_ids],
        "evictions": stats.evictions,
        "retained": stats.retained,
        "flushes": [[f.turn, [_item(i) for i in f.items], list(f.kept)] for f in stats.flush_log],
        "store": _store_rows(store_path),
        "llm": llm.accounting.as_metrics(),
        "weights": scorer.weights.tolist() if hasattr(scorer, "weights") else None,
        "shared_scores": shared,
        "metrics": case_metrics(stats, oracle, HORIZON),
    }
    return record, stats.flush_log


def _prompt_yaml() -> dict:
    import yaml

    return yaml.safe_load((CONF / "prompt" / "default.yaml").read_text())


def _calibration(tmp: Path):
    """Offline calibration as the runner fits it: control replays with exploration."""
    records = []
    path = tmp / "calibration.sqlite"
    store = FeedbackStore(path)
    llm = build_client(LLMSettings(cache_mode="off"), seed=7, cache_dir=None)
    for seed, flavour, turns in CALIBRATION_SESSIONS:
        session, truth = generate_session(seed, spec_for(flavour, turns), f"cal{seed}")
        budget = TokenBudget(total=max(int(peak_usage(session, truth) / 2.2), 2_000))
        oracle, stats = NeedOracle(truth), ReplayStats()
        scorer = build_scorer(validate_scorer_settings({"name": "heuristic"}),
                              ScorerContext(seed=7, namespace=f"cal{seed}", scorer_model="h"))
        broker = KeepBackBroker(MainModelSettings("claude-sonnet-4-5", "simulated"), llm, store,
                                f"cal{seed}", 7, oracle.max_grade_within)
        strategy = TwoTierEviction(TwoTierSettings(explore_rate=0.15), budget,
                                   PROFILES[session.profile], scorer, broker, stats, session.scope_id)
        replay(session, truth, strategy.step, budget, stats)
        records.append(stats.evictions)
    cal = calibrate(store.dataset(), HeuristicWeights().vector(), l2=20.0)
    store.close()
    llm.close()
    record = {"evictions": records, "store": _store_rows(path), "weights": cal.weights.tolist(),
              "guidance": cal.guidance, "n": cal.n_candidates}
    return cal, record


def golden_digests(tmp: Path) -> dict[str, str]:
    cal, cal_record = _calibration(tmp)
    out = {"calibration": _digest(cal_record)}
    for name in SESSIONS:
        control, reference = _run(name, "heuristic", cal, tmp / f"{name}-control.sqlite")
        out[f"{name}/heuristic"] = _digest(control)
        for variant in VARIANTS[1:]:
            record, _ = _run(name, variant, cal, tmp / f"{name}-{variant}.sqlite", reference=reference)
            out[f"{name}/{variant}"] = _digest(record)
    return out


GOLDEN: dict[str, str] = {
    'calibration': 'ca86c0e92d328d5c7558568aa73e40b31d2e7f720e57156bb357da79f1737684',
    'coding/heuristic': '87396fcd511b30daa195ba927f9230fb4e6ba2ccf0f236806e5d41c8fd5af609',
    'coding/weights': 'd0814d199b1c5580c175c6a35eb1eb85032191c747a0211cf3e1b7463696fdfb',
    'coding/prompt': 'adb61120359156c1e1c6ff05bec40303f5717ff9d853688c16a875d36430c8f6',
    'coding/online': 'c16a5f5851eaab1f96360e8a753ac52778162696258567d0bd1ced1f7d1c503d',
    'coding/oracle': '800afe26444a1a4be14a541de4026a8c20ffb41379664c75fcbeb294610985c8',
    'coding/random': '3e7b4dd801ff759b19f8565e0cc3a69046ab3322ad02633dc54155d54ca07834',
    'coding/flaky': '49db4ff96c83a8fcb92f21f64c584dfd138e73cacdae50eb73af214e1f2d87da',
    'coding/no_keepbacks': '86ba200e46e2875b2eabcf662ff28b31ce431340174c1ae735cf96832b0783a6',
    'coding/hoarder': '3c74676f967552593a4e87419f61b62dcd9f19cbda183fbca1d1982b51629184',
    'debugging/heuristic': '03011721d646173a9f385d2fd010d2566de8846a27ca66d28d0712363857a73a',
    'debugging/weights': '44e9330726c575121112349487b2a4a9cf67db74fd4f704473b336c604284886',
    'debugging/prompt': '96229d52c9921c85c8fd87dcc381fad4cc50cdc195ded80ee2f0cf2055064156',
    'debugging/online': 'c49ca5eea2b8f9adfca0b5b1e1b412606570bd7e85334356645d7624634fadb5',
    'debugging/oracle': 'af67b03b4965706cb44b5724220e8a2e300afd6f74dc6b7df110a1afa780271c',
    'debugging/random': '438f2b99098df59efe946f2622077742ade9cd8cf4bbb19f3fbd083f373ce428',
    'debugging/flaky': 'c9a7d9afc0c4acc0e93c11fdc631f9fae0a33887ddf94d09eb587298fa1b34bb',
    'debugging/no_keepbacks': '1404673d56abeb145759560a5d74d82e2c636d673192c0dc5a1a80538acd3942',
    'debugging/hoarder': '0fbb87ec228712e00c5f65ecd833eb72cfb10dafaec1c13c6466e5c1169bc600',
    'research/heuristic': '672d05bdbd8c4fb6af176b0292948c86428a414d378dbda6fffb7b091bd43ed2',
    'research/weights': '68bffd2dba1db9fa0234dc68bcce21f59877fd9f9a4a91f1bc7b34a7322a2be7',
    'research/prompt': '66a3a432a937c846424b5b079936d4d1bc1b81ce78ceabf0270e8f265a87f899',
    'research/online': '96608a198f98b97d53bada80f0bb78283583f5067d8da66142bd3eb944abc4df',
    'research/oracle': 'b354b1e5e55497a46f3b48583413ff2cb526bc07747b471903cec838fab8351b',
    'research/random': 'ffceb04ef16c1dc3a8cf05cac1e50e4a116cd2501b6a825a7245c84fdbd0887a',
    'research/flaky': 'bea837143cfd416dc52f44ce0e6cc61aa1efb5f932a4e098abd358b7a16cb457',
    'research/no_keepbacks': '0c20df91bbc19734be3b84aeb738bb5e3e28a06ed9eb3496ef22fc375d86a7b0',
    'research/hoarder': '0036e8cfe6e989471b71ce77f7373ed8eb7831fc8c5a242f80879089cdb27cbf',
    'support/heuristic': 'afd9845c251ecc8b451dc40fa322e33f7e4653ca909884be7be228b7106ae497',
    'support/weights': '7e3ecf8db49a8e7f7f8886ef12d8ad14e14349d2bffa57cb27fe3bd70eb2d687',
    'support/prompt': '03e1c4bf5c1a8191588b4d3a2772cc4f9a710ca9882f3261998d4afe1c44156a',
    'support/online': '36deeb24fd5d10bb6a6707185802a17d84b94d126781e3cc001583a10501377d',
    'support/oracle': 'b69582d431707e1b039c558e5cbb5dc446a6ca64d2e1cf18dccbe3575119422a',
    'support/random': '047f804a714e1be1256bf9920e827e5ea9171d5fd829de74a0a5a26ae7b94555',
    'support/flaky': '00985c8a435d21bcf2097694ebc7b43c76b107af7b8fc934cb23c839689d5569',
    'support/no_keepbacks': 'e982b82929d0a278ab2e97b532ec62e47806593def61ac222301d08a00881ed0',
    'support/hoarder': '4e60e5cafde861f81b7664baae0a0f236957ae1d9ee6cfad389e5186dc8c677a',
    'chronicle/heuristic': '4b575dc2c81fc621e7c7d8111361341353972b41add2d1c0092e2b983478eb4f',
    'chronicle/weights': 'eaba4b97957458d69e51fca8acb459d4d1c8d10157450283acf6511f54c8d4c0',
    'chronicle/prompt': '92b590ee48c6842f4106712ff15083e63eb9814592e83e26efba3dbb8c42372d',
    'chronicle/online': '9bd513052da9f2f12be5964b85f715bb35394a893c7cda40b40a2ac442658b63',
    'chronicle/oracle': 'dfa52c32892b742bbcf2da7fadd23e52f7c06867fa52e781cd504db4cdf4eda1',
    'chronicle/random': '502f77aa1ae136dddd055273a7a720c176d4f061bfff1e165a1c2b9b2d2e54eb',
    'chronicle/flaky': '5c5f9140fb85123a2f2931f431a1f5200391306dc50b972c49a5e8b9d58bed21',
    'chronicle/no_keepbacks': '6fed26b9079d41e6895bab708a352a9ff59265ccf85366bec8ff301fccb6b8f1',
    'chronicle/hoarder': 'eaf2f0e2d5d46d8c66d68bb30494e3a7a26086a28fb10fff26f0bfa5cbbce500',
}


def test_replay_outputs_are_unchanged(tmp_path):
    got = golden_digests(tmp_path)
    changed = sorted(k for k in GOLDEN if got.get(k) != GOLDEN[k])
    assert set(got) == set(GOLDEN) and not changed, f"replay outputs changed for {changed}"


@pytest.mark.parametrize("name", ["coding"])
def test_golden_runs_exercise_every_path(tmp_path, name):
    """The pinned runs cover Tier 2, keep-backs, timeouts, the breaker and the ceiling."""
    cal, _ = _calibration(tmp_path)
    flaky = _run(name, "flaky", cal, tmp_path / "flaky.sqlite")[0]["counters"]
    assert flaky["breaker_opens"] >= 1 and flaky["fallbacks"] >= 1
    control = _run(name, "heuristic", cal, tmp_path / "control.sqlite")[0]["counters"]
    assert control["proposals"] > 5 and control["auto_resolved"] >= 1
    assert control["masked"] and control["trivial_dropped"] and control["subscriptions_deactivated"]
    assert _run(name, "hoarder", cal, tmp_path / "hoarder.sqlite")[0]["counters"]["hard_ceiling_overrides"]


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for key, value in golden_digests(Path(d)).items():
            print(f"    {key!r}: {value!r},")
