"""The prompt scorer's item lines follow ITEM_LINE, and the simulated small
model scores them as docs/simulated_llm.md says: prior logit, guidance
shifts, then one N(0, 0.25) draw per item in item order."""

from __future__ import annotations

import math
from itertools import product

import numpy as np

from silas_exp.context.window import LiveItem, one_line
from silas_exp.feedback.calibration import age_bucket
from silas_exp.llm.base import LLMRequest, Message
from silas_exp.schema.eviction import ContextZone
from silas_exp.scorers.prompt import (
    _LINE_RE,
    ITEM_LINE,
    _prior_logit,
    item_line,
    parse_guidance,
    simulated_scorer,
)


def _items() -> list[LiveItem]:
    out = []
    kinds = ("tool_result", "memory", "plan")
    for n, (zone, kind) in enumerate(product(ContextZone, kinds)):
        out.append(LiveItem(
            ctx_id=f"c{n}", zone=zone, kind=kind, full_tokens=41 * n, tokens=(41 * n) % 900,
            born=n % 5, last_ref=n % 30, status=("error", "ok", None)[n % 3],
            relevance=(None, 0.0, 0.4567, 1.0)[n % 4], completed_turn=(None, 2, 40)[n % 3],
            masked=n % 4 == 0, active=n % 6 != 1,
            snippet=("a |pipe|  and\n spaces " * (n % 3)) + f"item {n}",
        ))
    return out


def test_item_line_is_the_template_filled_in():
    for it, turn in product(_items(), (0, 7, 35)):
        flags = [f for f, on in (("masked", it.masked), ("completed", it.completed(turn)),
                                 ("inactive", not it.active)) if on]
        if it.relevance is not None:
            flags.append(f"rel={it.relevance:.2f}")
        expected = ITEM_LINE.format(
            ctx_id=it.ctx_id, zone=it.zone.value, kind=it.kind, age=it.age(turn), tokens=it.tokens,
            status=it.status or "ok", flags=",".join(flags) or "-",
            snippet=one_line(it.snippet).replace("|", "/") or "-")
        assert item_line(it, turn) == expected
        assert _LINE_RE.match(expected)  # the simulated model reads every line back


def test_simulated_scorer_draws_one_noise_term_per_item_in_order():
    turn = 12
    lines = [item_line(it, turn) for it in _items()]
    guidance = ["- zone=memory: kept back in 40% of proposals (overall 10%)",
                "- age=0-2: kept back in 5% of proposals (overall 10%)"]
    text = "Turn 12.\n" + "\n".join(guidance) + "\nItems:\n" + "\n".join(lines)
    request = LLMRequest(task="scorer", model="m", system="s", messages=(Message("user", text),))
    got = simulated_scorer(request, np.random.default_rng(5))["scores"]

    rng, shifts = np.random.default_rng(5), parse_guidance(text)
    assert shifts  # the guidance lines were read
    expected = []
    for line in lines:  # the definition: a draw per item, as each line is read
        m = _LINE_RE.match(line)
        z = _prior_logit(m) + (shifts.get(("zone", m["zone"]), 0.0)
                               + shifts.get(("age", age_bucket(int(m["age"]))), 0.0))
        z += rng.normal(0.0, 0.25)
        expected.append({"ctx_id": m["ctx_id"], "relevance": round(1 / (1 + math.exp(-z)), 4)})
    assert got == expected
    assert simulated_scorer(LLMRequest(task="scorer", model="m", messages=(Message("user", "no items"),)),
                            np.random.default_rng(5)) == {"scores": []}
