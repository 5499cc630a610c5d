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
                got = on_grid(scorer.score(list(f.items), turn))
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


def golden_outputs(tmp: Path) -> dict[str, tuple[str, np.ndarray]]:
    """Every pinned run: its decisions' digest and its floats."""
    cal, cal_record = _calibration(tmp)
    out = {"calibration": _split(cal_record)}
    for name in SESSIONS:
        control, reference = _run(name, "heuristic", cal, tmp / f"{name}-control.sqlite")
        out[f"{name}/heuristic"] = _split(control)
        for variant in VARIANTS[1:]:
            record, _ = _run(name, variant, cal, tmp / f"{name}-{variant}.sqlite", reference=reference)
            out[f"{name}/{variant}"] = _split(record)
    return out


def golden_differences(got: dict[str, tuple[str, np.ndarray]]) -> list[str]:
    """What differs from the pinned outputs, one line per run."""
    pinned = np.load(FLOATS)
    problems = [f"{k}: run missing" for k in GOLDEN if k not in got]
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
    'calibration': '5127ff41d20fab13857a2d8c3f7c7f8c5b66685f0dc92f7cc680a5d39c5fa1c5',
    'coding/heuristic': 'fe7662da27609eb539cbc33710c67e35bd49bdeccc10fa06e7e1deacdff08761',
    'coding/weights': '3e860112abb77283240a83e27ecb01324d27058345cce78ec1700c59bfdec3e2',
    'coding/prompt': 'c467debc0af38144f49c3264c7c6ca192140eb73a172008c1de1d933f3b8ba9a',
    'coding/online': 'fded6bab38e64796459064c9ebb18eee0cbb4bcd59abc69bbffe66e4dc21169f',
    'coding/oracle': '595d58bd068a2a9d7a4f1e339ac6fd75539e7a3e4d607846afed89769b5bafcb',
    'coding/random': '0d90e007ebbf907a1eaf691c8a791620e3bcc618ca15033898d6a2ca4ff163eb',
    'coding/flaky': 'af59f6849940ee5f97e527bfc2bbea49f39b0b5be4aa6d36dfd887a8cb7a0d74',
    'coding/no_keepbacks': 'bb52c8409cb21a013d04fce3bf8344da853616e640f558c12cbdc6c1d6a3638e',
    'coding/hoarder': 'e004c727e8decb54358ebf3dfbe1ceec46b3f4130bb014d2abb812d4ecbac2a2',
    'debugging/heuristic': 'eb1e426721f636d71e1a24183942461a5b427ddd5d15675b73a528a85e180a76',
    'debugging/weights': '21e0f243be4ae7142d01a2581d9694e424e3f734dcd319f3626715ba8638b9ee',
    'debugging/prompt': '79637bc2846a02dbde1e136d73b5cdabd3d04737a63c57c32f488813567089bb',
    'debugging/online': '9f10b84740fef49a105eaba965a85b66a0416948972425ad8ede9be37e56ac70',
    'debugging/oracle': '6d0de160dca9119721b2f8229c9f8c5d7171a34dbe2c0bf08f4eb145938f3200',
    'debugging/random': 'd43f34d9c56d4c60a6345b560c239c0ece4efc075cc77c7027fbd9b1918dc489',
    'debugging/flaky': '8f5d0a23425ff85b9004348492d18748fc8376ce6361c7e2e9383253b0ac6b6f',
    'debugging/no_keepbacks': '519851fe72ff36773cf820a928188b3bd0a6a8dcdf0bf6eb08b8cef97122e3b5',
    'debugging/hoarder': '794ddb157d14f3edd33dba0776a015fd0b26933ae2602e5d3c3d1a6d8569b5a5',
    'research/heuristic': '96a3c9322cc597782125421b66e1c09295a4406f44dd1824d4745e08ea7233d6',
    'research/weights': '0f2d5a99aed537d6d1fcae656dba229a3789c7596f31ddc1e7eb51707cc96ea1',
    'research/prompt': '64c06c021d08b373755cfeaf30d0d0ab2d7b1b7d9139eaa01ece2668fcc6b67d',
    'research/online': 'ad1e4eeffdd09ae43e5ad750678f70c6670a09beab4e601fc63bedc08df99a45',
    'research/oracle': '04c367829d7051acd492b3d544c273a9a3322133b9afd89b13d8ef8c4780a43a',
    'research/random': 'a5e50beadd15f8c0a76defef7efdfec1bc30b29a4d20f05da76b642063ab42bc',
    'research/flaky': 'e1a8e0931b94c4c6a793649e10ee139d293477c6103a3378d13ef3e5706cd649',
    'research/no_keepbacks': '331a9de5a46a0cd6afa27f4ad5142bccae649a8a867e3716545ecf46c8d7da70',
    'research/hoarder': 'd752d226ae76590ebf0279f2c9e407cbe8b7f53f86df50d41fb9d53f5b33dfc0',
    'support/heuristic': '18a39c316edc6eb56dd76f44577849f4d1da884a84b9d0492b4d216235a95da8',
    'support/weights': '565ad5bbbc6e4bc3e2ff7d1dc14e33e0456096730aba5d0f2f01ea37cd70558b',
    'support/prompt': '1d5c7a86ac7e35b0833feef01a6792ac9e2fddfc2052e723e029075512a305a7',
    'support/online': '8cc4e793aed9db6d5afb3702e047d83dcb1740c128c193c6c3676aa37db62fdb',
    'support/oracle': '5dfaa745120bd7f0156032413a8fcdb7bc858f6224eaf411229f24b2b870ccd1',
    'support/random': '20fa1a1576fa6509b5794812f10a40aff572210ed3592e0f47aacbe28c208017',
    'support/flaky': 'd75b81b1cd167d9dfb621daf94d2310ef152f704dacfa2b330451bacf6fa82d7',
    'support/no_keepbacks': 'ab1462fdeb5b5748cf486584ba5681e22d64ca8edbf4db6c2eca1a2e78610abb',
    'support/hoarder': '1d9fb442dbd436fbb62c819eaad20ad4172ca4652a47cb9c340f55a41f6fb4d3',
    'chronicle/heuristic': '909f8a51c4c9981419593311c39bbbcf3732aae7c9b5cc7f687daa3ae717ce14',
    'chronicle/weights': 'ad742d31b5785f0657b8f42b8a1e0fe58de68f2f49175c89f55b87bf7c804156',
    'chronicle/prompt': '1e2cd1bc06f9dc6dbd16ad8eb5979bb20d935c7d8780f6bef29577976721fcb9',
    'chronicle/online': '2386226f23b9b1c4d4f60e9164844922ddf660c7c470779a052f79013228dca0',
    'chronicle/oracle': 'd347a7b6ccd0c8e46f69781a2d190a4bac9fa25f9279eb2c8034310d329ac15e',
    'chronicle/random': 'c73ab23138cfdb24c42ee500fb68e388da3ea0ad89cfd01aa8adc038042dd1db',
    'chronicle/flaky': 'b0d350099e2942a029a036554763199e142b65e23974206592a8ee9d978004cd',
    'chronicle/no_keepbacks': '8335ab153c69c54206faff2d9433aa17ec2f1d5461e64c16c9c40f360edc1f0e',
    'chronicle/hoarder': 'ae6eac6b994849510b36a45b2593cc79271a2db6c05f5b7d4c28db29fd1c5856',
}


def test_replay_outputs_are_unchanged(tmp_path):
    problems = golden_differences(golden_outputs(tmp_path))
    assert not problems, "replay outputs changed:\n" + "\n".join(problems)


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
    parser.add_argument("--check", action="store_true",
                        help="compare with the pinned outputs instead; print the OpenBLAS kernel; "
                             "exit 1 on a difference")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        outputs = golden_outputs(Path(d))
    if args.check:
        problems = golden_differences(outputs)
        print(f"kernel: {_openblas_kernel()}")
        print("\n".join(problems) or "unchanged")
        sys.exit(1 if problems else 0)
    for key, (digest, _) in outputs.items():
        print(f"    {key!r}: {digest!r},")
    np.savez_compressed(FLOATS, **{k: f for k, (_, f) in outputs.items()})
    print(f"# floats written to {FLOATS}")
