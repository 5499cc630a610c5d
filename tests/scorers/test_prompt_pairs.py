"""The prompt scorer's calls answered in process (scorers/prompt_kernel.py,
prompt_inprocess.py) against the Python path they stand in for: each compiled
function against its Python twin, then a whole call against
``PromptScorer.score`` through the client (scores, accounting), on window
items in every state a line shows (masked, completed, inactive, a relevance,
an error status, ctx_ids the request's JSON escapes).

Whole replays both ways: tests/context/test_compiled_replay.py; pinned:
tests/context/test_replay_golden.py."""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii

import numpy as np
import pytest

from silas_exp.context.window import LiveItem
from silas_exp.feedback.calibration import Calibration, ExclusionRates, Rate
from silas_exp.llm import LLMSettings, build_client
from silas_exp.llm.simulated import _ANSWER_JSON
from silas_exp.schema.eviction import ContextZone
from silas_exp.scorers import ScorerContext, build_scorer, validate_scorer_settings
from silas_exp.scorers import prompt as P
from silas_exp.scorers import prompt_kernel as K
from silas_exp.scorers.prompt_inprocess import ENGINE_VARIABLE, InProcess

from ..conftest import CONF

GUIDANCE = ["- zone=chronicle: kept back in 40% of proposals (overall 10%); score these higher",
            "- zone=workspace: kept back in 1% of proposals (overall 10%); score these lower",
            "- age=30_plus: kept back in 2% of proposals (overall 10%); score these lower",
            "- age=0_2: kept back in 30% of proposals (overall 10%); score these higher"]
KINDS = ("user_message", "agent_response", "tool_result", "memory", "plan", "subscription", "ack")


def _template() -> P.PromptSettings:
    import yaml

    raw = yaml.safe_load((CONF / "prompt" / "default.yaml").read_text())
    return P.PromptSettings(**{k: v for k, v in raw.items() if k != "defaults"})


def _items(n: int = 60, seed: int = 0) -> list[LiveItem]:
    """Window items in every state an item line shows."""
    rng = np.random.default_rng(seed)
    ids = ["a", 'q"uote', "back\\slash", "é-ü", "漢字", "x|y"]
    out = []
    for i in range(n):
        zone = list(ContextZone)[1 + i % 3]
        text = " ".join(rng.choice(["alpha", "beta |", "é", "\t", "error", "漢", "x" * 30], size=12))
        it = LiveItem(ctx_id=f"{ids[i % len(ids)]}-{i}", zone=zone, kind=KINDS[i % len(KINDS)],
                      full_tokens=int(rng.integers(1, 5000)), tokens=0, born=int(rng.integers(0, 40)),
                      last_ref=int(rng.integers(0, 80)), status=[None, "ok", "error"][i % 3],
                      relevance=[None, 0.731, 0.005, 0.995][i % 4] if zone == ContextZone.MEMORY else None,
                      completed_turn=[None, 10, 70][i % 3], snippet=text[:160], text=text)
        it._tokens = int(rng.integers(0, 4000))
        it.masked, it.active = bool(i % 5 == 0), bool(i % 7)
        out.append(it)
    return out


def _scorer(guidance=GUIDANCE, template=None, seed: int = 3):
    llm = build_client(LLMSettings(cache_mode="off"), seed=seed, cache_dir=None)
    cal = Calibration(np.zeros(17), ExclusionRates(Rate(0.1, 9), {}, {}, {}), list(guidance), 9)
    scorer = build_scorer(validate_scorer_settings({"name": "prompt"}), ScorerContext(
        seed=seed, namespace="pairs/case", scorer_model="claude-haiku-4-5", llm=llm,
        calibration=cal, prompt=template or _template()))
    return scorer, llm


def _arrays(items):
    return (np.array([it._tokens for it in items], np.int64), np.array([it.masked for it in items]),
            np.array([it.active for it in items]), np.array([it.last_ref for it in items], np.int64))


TURN = 50


@pytest.fixture
def sim():
    scorer, llm = _scorer()
    here = InProcess.for_scorer(scorer.inner, P)
    assert here.why_not() is None
    yield here
    llm.close()


def test_item_lines_are_the_escaped_prompt_lines(sim):
    items = _items()
    table, rows = sim.live_rows(items)
    tok, masked, active, last_ref = _arrays(items)
    out = np.empty(1 << 16, np.uint8)
    ages, flags = np.empty(len(items), np.int64), np.empty(len(items), np.int64)
    n, chars = K.item_lines(table.items, rows, tok, masked, active, last_ref, TURN, out, ages, flags)
    text = "\n".join(P.item_line(it, TURN) for it in items)
    assert bytes(out[:n]).decode() == encode_basestring_ascii(text)[1:-1]
    assert chars == len(text)
    assert ages.tolist() == [max(0, TURN - it.last_ref) for it in items]
    assert any(f & 1 for f in flags) and any(f & 2 for f in flags)


def test_prior_logits_are_the_logits_read_back(sim):
    items = _items()
    table, rows = sim.live_rows(items)
    tok, masked, active, last_ref = _arrays(items)
    out, z = np.empty(1 << 16, np.uint8), np.empty(len(items))
    ages, flags = np.empty(len(items), np.int64), np.empty(len(items), np.int64)
    K.item_lines(table.items, rows, tok, masked, active, last_ref, TURN, out, ages, flags)
    K.prior_logits(table.items, rows, tok, ages, flags, sim.weights, z)
    _, read = P.read_prompt("\n".join(P.item_line(it, TURN) for it in items))
    assert [r[0] for r in read] == [it.ctx_id for it in items]
    assert z.tolist() == [r[3] for r in read]  # the same floats, bit for bit


def test_round4_is_pythons_round():
    rng = np.random.default_rng(4)
    ps = rng.random(200_000).tolist() + [k / 10000 for k in range(10001)]
    ties = [j / 32 for j in range(1, 32, 2)]  # p * 1e4 exactly half an integer
    assert all((p * 10000) % 1 == 0.5 for p in ties)
    ps += ties
    ps += [math.nextafter(p, 0.0) for p in ps[-40:]] + [math.nextafter(p, 1.0) for p in ps[-40:]]
    ps += [0.0, 1.0, 5e-5, 4.9999999999999996e-05, 1e-300]
    for p in ps:
        assert K.round4(p) == round(p, 4), p


def test_relevances_are_the_simulated_answer(sim):
    """The shifted logits, the noise, the sigmoid and the rounding of ``simulated_scorer``."""
    items = _items()
    text = "\n".join(P.item_line(it, TURN) for it in items)
    prompt = "\n".join(GUIDANCE) + "\n" + text
    request = P.LLMRequest(task="scorer", model="m", messages=(P.Message("user", prompt),))
    answer = P.simulated_scorer(request, np.random.default_rng(11))
    table, rows = sim.live_rows(items)
    tok, masked, active, last_ref = _arrays(items)
    out, z, r = np.empty(1 << 16, np.uint8), np.empty(len(items)), np.empty(len(items))
    ages, flags = np.empty(len(items), np.int64), np.empty(len(items), np.int64)
    K.item_lines(table.items, rows, tok, masked, active, last_ref, TURN, out, ages, flags)
    K.prior_logits(table.items, rows, tok, ages, flags, sim.weights, z)
    noise = np.random.default_rng(11).normal(0.0, 0.25, size=len(items))
    K.relevances(rows, ages, z, noise, table.items, sim.age_shift, r)
    assert r.tolist() == [s["relevance"] for s in answer["scores"]]
    assert len(set(sim.age_shift.tolist())) > 1 and len(set(table.items.zshift.tolist())) > 1


def test_answer_chars_is_the_encoded_answers_length(sim):
    items = _items()
    table, rows = sim.live_rows(items)
    rng = np.random.default_rng(5)
    for k in (0, 1, 2, 17, len(items)):
        r = np.array([round(x, 4) for x in rng.random(k).tolist()])
        r[: min(k, 3)] = [0.0, 1.0, 0.5][: min(k, 3)]
        answer = {"scores": [{"ctx_id": it.ctx_id, "relevance": v}
                             for it, v in zip(items[:k], r.tolist(), strict=True)]}
        assert K.answer_chars(table.items, rows[:k], r, sim.answer_fixed) == \
            len(_ANSWER_JSON.encode(answer)), k


@pytest.mark.parametrize("guidance", [GUIDANCE, []])
def test_a_call_answered_in_process_is_the_clients(guidance, monkeypatch):
    """Scores and the call's accounting: in process as through the client and
    the simulated backend (request, fingerprint, seeded noise, usage)."""
    got = {}
    for engine in ("python", "auto"):
        monkeypatch.setenv(ENGINE_VARIABLE, engine)
        scorer, llm = _scorer(guidance)
        assert (InProcess.for_scorer(scorer.inner, P).why_not() is None) == (engine == "auto")
        items = _items()
        got[engine] = ([scorer.score(items[: 7 * j + 1], turn) for j, turn in enumerate((3, 40, 97))],
                       llm.accounting.as_metrics())
        llm.close()
    assert got["python"] == got["auto"]


def test_a_line_that_does_not_read_back_goes_through_the_client(monkeypatch):
    """An item whose line the simulated model would not read as written (a
    status of two words): not answered in process; the client's answer lacks
    the item, as it does in Python."""
    scorer, llm = _scorer()
    items = _items(8)
    items[3].status = "timed out"
    here = InProcess.for_scorer(scorer.inner, P)
    assert here.live_rows(items) is None
    asked = []
    complete = type(llm).complete

    def counted(self, request, **kw):
        asked.append(request)
        return complete(self, request, **kw)

    monkeypatch.setattr(type(llm), "complete", counted)
    with pytest.raises(P.ScorerUnavailable, match="lacks 1 item"):
        scorer.score(items, TURN)
    assert len(asked) == 1
    llm.close()


def test_a_template_whose_text_reads_as_items_is_not_answered_in_process():
    template = _template().model_copy(update={"user": "Items:{items}\n{guidance}"})
    scorer, llm = _scorer(template=template)
    assert "template" in InProcess.for_scorer(scorer.inner, P).why_not()
    llm.close()


def test_the_answer_is_json_the_schema_allows(sim):
    """What the in-process answer stands for is a valid answer: scores in [0, 1]."""
    items = _items()
    table, rows = sim.live_rows(items)
    r = sim.scores(table, rows, *_arrays(items), TURN)
    assert ((r >= 0) & (r <= 1)).all() and json.dumps(r.tolist())


def test_warm_up_loads_the_one_specialization_calls_use(sim):
    """The launcher's warm-up loads the machine code calls then run: the same
    argument types, so no call compiles a second specialization."""
    from silas_exp.scorers.prompt_inprocess import warm_up

    warm_up()
    items = _items(5)
    table, rows = sim.live_rows(items)
    sim.scores(table, rows, *_arrays(items), TURN)
    assert len(K.prompt_block.signatures) == 1 and len(K.prompt_answer.signatures) == 1
