"""Golden equivalence of the replay: the outputs of two-tier eviction (Tier 1,
Tier 2 with every scorer kind, the simulated main model's keep-backs, the
feedback store, offline calibration, the circuit breaker's fallback, an
explicit flush and the shared-candidate scoring the runner does) on generated
sessions, pinned run by run.

What is pinned, and how:
- **Decisions, exactly.** Everything the replay decides or counts — needs
  served, window usage per turn, rankings, candidates and their order,
  keep-backs, evictions, counters, retained text, flush copies, feedback rows
  (less their wall-clock timestamps), token accounting — is hashed with every
  float replaced by a placeholder: one sha256 per run (``GOLDEN``).
- **Floats, to a relative tolerance.** The floats the run produced (scores,
  metrics, calibrated and online weights, costs), in a fixed traversal order,
  are kept in ``golden_floats.npz`` beside this file and compared with
  ``RTOL``/``ATOL``. numpy's OpenBLAS picks its kernel per CPU and numpy's own
  ``exp`` its SIMD path, so the same float differs across machines in its last
  bits: measured ≤ 2e-15 relative on these runs across the Haswell, SkylakeX,
  Zen and Sandybridge kernels (calibrated weights ≤ 2e-14). ``RTOL = 1e-9``
  leaves five orders of magnitude for that and none for a change of behaviour.

``test_golden_under_other_kernels`` runs the same check in subprocesses under
two OpenBLAS kernels other than this machine's (one of them with numpy's
AVX-512 code paths off, as on an AVX2-only host), so a kernel-dependent
output cannot pass here and fail elsewhere.

If a change alters replay behaviour on purpose, regenerate with
``PYTHONPATH=. python -m tests.context.test_replay_golden`` (prints the new
``GOLDEN`` entries and rewrites ``golden_floats.npz``) and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from silas_exp.context.budget import PROFILES, TokenBudget, ZoneShares
from silas_exp.context.features import feature_rows
from silas_exp.context.replay import NeedOracle, replay
from silas_exp.context.stats import ReplayStats
from silas_exp.data.suites.build import fitted_shares, peak_usage
from silas_exp.data.suites.generator import generate_session, spec_for
from silas_exp.eviction.two_tier import TwoTierEviction, TwoTierSettings
from silas_exp.eviction.two_tier.compiled import ENGINE_VARIABLE
from silas_exp.feedback.calibration import calibrate
from silas_exp.feedback.flush import KeepBackBroker, KeepbackConfig, MainModel
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
from silas_exp.scorers.grid import on_grid
from silas_exp.scorers.heuristic import HeuristicWeights
from silas_exp.scorers.prompt import PromptSettings

from ..conftest import CONF

ROOT = Path(__file__).resolve().parents[2]

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
    candidates = [(*r[:8], f.tolist(), r[12]) for r, f in zip(rows, x, strict=True)]
    # the evicted and excluded columns hold JSON (excluded with scores): compared parsed
    feedback = [(*r[:5], json.loads(r[5]), json.loads(r[6])) for r in feedback]
    return {"feedback": feedback, "candidates": candidates}


RTOL, ATOL = 1e-9, 1e-12
FLOATS = Path(__file__).with_name("golden_floats.npz")


def _split(record) -> tuple[str, np.ndarray]:
    """(sha256 of the record with each float replaced by a placeholder, the
    floats in traversal order: dict keys sorted, sequences in order)."""
    floats: list[float] = []

    def strip(x):
        if isinstance(x, float):
            floats.append(x)
            return "<f>"
        if isinstance(x, dict):
            return {str(k): strip(x[k]) for k in sorted(x, key=str)}
        if isinstance(x, (list, tuple)):
            return [strip(v) for v in x]
        return x

    blob = json.dumps(strip(record), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest(), np.asarray(floats, dtype=float)


def _run(name: str, variant: str, calibration, store_path: Path,
         reference: list | None = None, engine: str = "python") -> tuple[dict, list]:
    """One replay as the runner does it; returns (observations, flush log).
    ``engine="compiled"``: through the compiled loop, as the runner takes it
    when it can (the shared candidates scored after the replay)."""
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
    main = MainModel("claude-sonnet-4-5", "simulated",
                     KeepbackConfig(false_keep=0.9 if variant == "hoarder" else 0.05))
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
                got = on_grid(scorer.score(list(f.items), turn))
            except ScorerUnavailable:
                continue
            shared.append([got[i.ctx_id] for i in f.items])
        if turn == flush_turn:
            strategy.compress(window, turn)
        else:
            strategy.step(window, turn)

    if engine == "compiled":
        def score_shared(turn: int) -> None:
            for f in by_turn.get(turn, ()):
                got = on_grid(scorer.score(list(f.items), turn))
                shared.append([got[i.ctx_id] for i in f.items])

        assert strategy.replay_compiled(session, truth, budget, stats, flush_turn, score_shared), \
            f"{name}/{variant}: {strategy.compiled_ineligible()}"
    else:
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
        broker = KeepBackBroker(MainModel("claude-sonnet-4-5", "simulated"), llm, store,
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


# the variants the compiled loop replays (a linear scorer, the online one, the prompt
# scorer answered in process; the simulated main model)
COMPILED_VARIANTS = ("heuristic", "weights", "prompt", "online", "no_keepbacks", "hoarder")


def golden_outputs(tmp: Path, engine: str = "python") -> dict[str, tuple[str, np.ndarray]]:
    """Every pinned run: its decisions' digest and its floats. ``engine="compiled"``:
    the runs the compiled loop can replay, replayed by it (calibration in Python)."""
    saved = os.environ.get(ENGINE_VARIABLE)
    if engine == "python":  # every call in Python too: the prompt scorer's through the client
        os.environ[ENGINE_VARIABLE] = "python"
    try:
        return _golden_outputs(tmp, engine)
    finally:
        if saved is None:
            os.environ.pop(ENGINE_VARIABLE, None)
        else:
            os.environ[ENGINE_VARIABLE] = saved


def _golden_outputs(tmp: Path, engine: str) -> dict[str, tuple[str, np.ndarray]]:
    cal, cal_record = _calibration(tmp)
    out = {"calibration": _split(cal_record)}
    variants = VARIANTS[1:] if engine == "python" else COMPILED_VARIANTS[1:]
    for name in SESSIONS:
        control, reference = _run(name, "heuristic", cal, tmp / f"{name}-control.sqlite", engine=engine)
        out[f"{name}/heuristic"] = _split(control)
        for variant in variants:
            record, _ = _run(name, variant, cal, tmp / f"{name}-{variant}.sqlite", reference=reference,
                             engine=engine)
            out[f"{name}/{variant}"] = _split(record)
    return out


def golden_differences(got: dict[str, tuple[str, np.ndarray]], partial: bool = False) -> list[str]:
    """What differs from the pinned outputs, one line per run (``partial``: the
    runs of ``got`` only, none missing)."""
    pinned = np.load(FLOATS)
    problems = [] if partial else [f"{k}: run missing" for k in GOLDEN if k not in got]
    problems += [f"{k}: run not pinned" for k in got if k not in GOLDEN]
    for key, (digest, floats) in got.items():
        if key not in GOLDEN:
            continue
        if digest != GOLDEN[key]:
            problems.append(f"{key}: decisions changed (digest {digest[:12]}…)")
            continue
        want = pinned[key]
        if want.shape != floats.shape:
            problems.append(f"{key}: {floats.size} floats, {want.size} pinned")
            continue
        off = ~np.isclose(floats, want, rtol=RTOL, atol=ATOL, equal_nan=True)
        if off.any():
            i = int(np.flatnonzero(off)[0])
            rel = np.abs(floats - want)[off] / np.maximum(np.abs(want[off]), ATOL)
            problems.append(f"{key}: {int(off.sum())} floats beyond rtol={RTOL:g} (first at #{i}: "
                            f"{float(floats[i])!r} vs {float(want[i])!r}; largest relative difference "
                            f"{np.nanmax(rel):.2e})")
    return problems


GOLDEN: dict[str, str] = {
    'calibration': 'b3418652f466b45fdedc7c8c90552783ba3926081f6d13405793d359aa5cfb47',
    'coding/heuristic': 'b334bb26a86dd4451f2f627c8f70431a61f51aba967f77677f598a497646b84d',
    'coding/weights': 'a812a62ca6aaf9dbc0c3809fad5ac244aedc07cde295bd900e9a725ed57e0f02',
    'coding/prompt': 'f2e24a56e9ab9f0c15667cb5424730bdc53d429372c9f028314c0524dbef2ef1',
    'coding/online': 'ab88bfaed08729ce0e569651a41bfd5f3ca107ee65df3673c8fcccb681bad1b3',
    'coding/oracle': '43eff17063d69ca21b6940aaf2943fad94ccead4e1a149559b40237508f1ca71',
    'coding/random': 'e6ed945302fd61a1d89c9abfe480569ecf8f781a3376cfeec5eecdbbbdf40ca5',
    'coding/flaky': '30f3286f7a81986bba48afb279d434fe10bf9f213bc5e22bf61abba47a004fb7',
    'coding/no_keepbacks': '512d702d2a66fc843220345ff3bd3d6ecd1c9d9e94f1f775d9f8ce9c957eaa7d',
    'coding/hoarder': '61b1cef9e871140a9326f0af4b9c97ae33c09b818f20c7a3f2a3c046c296a2d8',
    'debugging/heuristic': 'b6693eb75bcd2ea337844e56a913bbec05ab3f8adf7a24d346414aed8e5ee215',
    'debugging/weights': '2c13537858a674f8495a0dd0c02edf093c2549e3f4bfd73e34a0bec2b9c73c1f',
    'debugging/prompt': '43b389d743762ab6e65da82d3b0e6ffdfc1554d7dad1a0bc7392ff469ceacda8',
    'debugging/online': '531d8b827b529d5315dbfe39a0c1be299f86ea0baa65f1cd7008f04783905e39',
    'debugging/oracle': '791b07aeedf1981da70ef3969dfc1d4940d95be780fa8b1bcdffa2143e9d6463',
    'debugging/random': '585667a5be94e39cded37b976f524bd5f2088159d1f3bc8aee936938bd4c5222',
    'debugging/flaky': 'a60adb31e235fc43d534095002dc0c44ada284ef8c65dfb5bed5b8b141357695',
    'debugging/no_keepbacks': '2c05eb187fcc50a6f4548f01324a3686cedb9d516e4002ba9daa200762c519e5',
    'debugging/hoarder': '5579e59ef512db2ed02518711b84e13beff928f78a356a79b59845227a75b394',
    'research/heuristic': 'a81a5e8d9126994d31e271618e4a2f68df30635acaca6832a47f1b26798e6d9d',
    'research/weights': '4ea3325b20e2cacdfad3361c6ab0edd2aa574f87a48e2cb66352294b4c16f414',
    'research/prompt': '03ae2eb8683a26b41282b26e886dcea2c563404ea32a3664612fc726e14ae2d1',
    'research/online': '796d1a430aff3728f344a8e2d199163661249d6c251d95374224774f00665c66',
    'research/oracle': '892f5964ede788b5c0a7f45e0cc3e876485e348da4cfafc324cf73b4eb0a9c09',
    'research/random': '02bc51139375df44d2aa4180f2b2d264a22c2357c77f3628343fbf62bcee59aa',
    'research/flaky': 'c480ae8da2d3384e575f15e216de1942c4832dd7ee4b661a35bea769adc4c35e',
    'research/no_keepbacks': '9fe8b7ca9156a8af97ea96d89efa6820acce7fa995b1756c53ae5a12a75fcd44',
    'research/hoarder': '3884dbfddc106fc33e481fdec3181ddeeb3db305e908d64fcd91d15c4350ae42',
    'support/heuristic': 'bf4ca40c2fef5d487c7786042ec6778733d21e91cfb975fa952b11a178babaf0',
    'support/weights': '3e2f5ab1640eaa384a083729596a23e9980fb7f5b21f93e51a8ee7d808a7433a',
    'support/prompt': 'a1b56ac1d22794225352662554b579dd4a6352f7f1a5bd96ad5bbcfd46a2d95c',
    'support/online': 'b821d31837c3db6e3b5d4e07d5ecd1216c578111e56121e5056dccd369c559e8',
    'support/oracle': 'da9ea70bd997799147a052991eeb2241a60b767d515b18e93386785a2a2d8053',
    'support/random': '818b64c57f14abd729f49d282859ecf1af863132cce7c9d6c1c23c225a964985',
    'support/flaky': '24e74b48fcacd7d9017825b97aac14f8c25bedc67c4f8bb67028dbdff7da54f3',
    'support/no_keepbacks': '085ce76cdeb1370b26b693e2caf562be10b8098e0add106961ceadfc4e3224ca',
    'support/hoarder': '0517bb22156aea715763a249750a7637f46b0c68890c8efb25450d93c53cef54',
    'chronicle/heuristic': '4c7c17bf5c3d289340b4f8eeb7840cbc570824194199743c87440ff5144d2c29',
    'chronicle/weights': '03e19dfe3fb8dbd291ad85a1926381a66454ec7c130194da4603d785af05b1ce',
    'chronicle/prompt': '38ede1c43bcfa0742c61dc3e5af169c576d28233a303b092a149b0d00ab2fbe2',
    'chronicle/online': 'ff616dfac4e5601102587316584f5d2e4f127060424d70ace910f2f587121274',
    'chronicle/oracle': '8aab1266f2541ef3f548f6469a3f78143a068d230ba73fe6b865f852afd962c8',
    'chronicle/random': '23f52c5af0bcce4bfab307bf641a91c92dd25a69e6d106447be478b2659faa41',
    'chronicle/flaky': '8e6cd2db21bc2a5b902ea2d5adbfff757d8e58d0b5dfa9887aa10b55b4175adf',
    'chronicle/no_keepbacks': '8ccd318bfadb18e8f0a462348562acc0d60f930d721f9f5688a3dffca942236a',
    'chronicle/hoarder': '4663e8979b429e8f500eaccf765c0692022fbe373aa6542c4e6e06d3867574e1',
}


def test_replay_outputs_are_unchanged(tmp_path):
    problems = golden_differences(golden_outputs(tmp_path))
    assert not problems, "replay outputs changed:\n" + "\n".join(problems)


def test_compiled_replay_gives_the_pinned_outputs(tmp_path):
    """The compiled loop decides, records and counts exactly what the pinned
    Python runs did: the control, the fitted weights, no keep-backs, the hard
    ceiling, an explicit flush, fitted shares, a shorter masking age."""
    got = golden_outputs(tmp_path, engine="compiled")
    assert len(got) == 1 + len(SESSIONS) * len(COMPILED_VARIANTS)
    problems = golden_differences(got, partial=True)
    assert not problems, "compiled replay differs from the pinned runs:\n" + "\n".join(problems)


def _openblas_kernel() -> str | None:
    from threadpoolctl import threadpool_info

    return next((i.get("architecture") for i in threadpool_info()
                 if i.get("internal_api") == "openblas"), None)


# other hosts, emulated: (OpenBLAS kernel, numpy CPU features turned off). Kernels
# that run on any x86-64 with AVX2 (SkylakeX needs AVX-512, so it is only ever
# this machine's own; "Zen" loads the Haswell kernel). Haswell and Nehalem also
# turn numpy's AVX-512 paths off, as on an AVX2-only host, where numpy's exp
# takes another code path and rounds differently.
_NO_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"
_FOREIGN = (("Haswell", _NO_AVX512), ("Sandybridge", ""), ("Nehalem", _NO_AVX512))


def foreign_hosts(own: str | None) -> list[tuple[str, str]]:
    """Two emulated hosts whose OpenBLAS kernel is not this machine's own."""
    return [h for h in _FOREIGN if h[0] != own][:2]


@pytest.mark.parametrize("slot", [0, 1])
def test_golden_under_other_kernels(slot):
    """The golden check passes under OpenBLAS kernels other than this machine's.
    Each runs in a fresh interpreter: OpenBLAS reads OPENBLAS_CORETYPE when it loads."""
    coretype, disabled = foreign_hosts(_openblas_kernel())[slot]
    env = {**os.environ, "OPENBLAS_CORETYPE": coretype, "NPY_DISABLE_CPU_FEATURES": disabled}
    env.pop("OPENBLAS_L2_SIZE", None)  # belongs to the machine's own kernel
    proc = subprocess.run([sys.executable, "-m", "tests.context.test_replay_golden", "--check"],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    host = f"OPENBLAS_CORETYPE={coretype} NPY_DISABLE_CPU_FEATURES={disabled!r}"
    assert f"kernel: {coretype}\n" in proc.stdout, f"{host} did not run that kernel:\n{proc.stdout}{proc.stderr[-2000:]}"
    assert proc.returncode == 0, f"golden replay differs under {host}:\n{proc.stdout}{proc.stderr[-2000:]}"


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
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Regenerate the replay goldens (default) or check them.")
    parser.add_argument("--engine", choices=("python", "compiled"), default="python",
                        help="replay in Python (every run) or through the compiled loop (its runs)")
    parser.add_argument("--check", action="store_true",
                        help="compare with the pinned outputs instead; print the OpenBLAS kernel; "
                             "exit 1 on a difference")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        outputs = golden_outputs(Path(d), args.engine)
    if args.engine != "python" and not args.check:
        parser.error("--engine compiled only checks (the goldens are the Python runs')")
    if args.check:
        problems = golden_differences(outputs, partial=args.engine != "python")
        print(f"kernel: {_openblas_kernel()}")
        print("\n".join(problems) or "unchanged")
        sys.exit(1 if problems else 0)
    for key, (digest, _) in outputs.items():
        print(f"    {key!r}: {digest!r},")
    np.savez_compressed(FLOATS, **{k: f for k, (_, f) in outputs.items()})
    print(f"# floats written to {FLOATS}")
