"""The feedback store keeps what the harness saw of each candidate and rebuilds
the feature rows the scorers saw from it, equal to the bit."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from silas_exp.context.features import feature_matrix
from silas_exp.context.window import LiveItem
from silas_exp.eviction.two_tier import candidate_records
from silas_exp.feedback.flush import candidate_state, feedback_record
from silas_exp.feedback.store import FeedbackStore, id_list_json
from silas_exp.schema.eviction import ContextZone, ProposalRecord

KINDS = ("user_message", "agent_response", "tool_result", "memory", "plan", "subscription", "ack",
         "note")  # "note": a kind without a feature of its own


def _random_items(rng: np.random.Generator, n: int, turn: int) -> list[LiveItem]:
    items = []
    for i in range(n):
        full = int(rng.integers(0, 5000))
        it = LiveItem(
            ctx_id=f"c{i:03d}", zone=list(ContextZone)[int(rng.integers(0, 4))],
            kind=str(rng.choice(KINDS)), full_tokens=full, tokens=int(rng.integers(0, full + 1)),
            born=0, last_ref=int(rng.integers(0, turn + 5)),  # a reference after turn: age 0
            status=[None, "ok", "error"][int(rng.integers(0, 3))],
            relevance=None if rng.random() < 0.5 else float(rng.random()),
            completed_turn=None if rng.random() < 0.5 else int(rng.integers(0, 2 * turn)),
            masked=bool(rng.random() < 0.3))
        items.append(it)
    return items


@pytest.mark.parametrize("path", [":memory:", "file"])
def test_dataset_rebuilds_the_feature_rows_the_scorers_saw(tmp_path, path):
    rng = np.random.default_rng(7)
    store = FeedbackStore(tmp_path / "f.sqlite" if path == "file" else ":memory:")
    expected = []
    for p in range(30):
        turn = int(rng.integers(1, 400))
        items = _random_items(rng, int(rng.integers(1, 12)), turn)
        scores = {it.ctx_id: float(rng.random()) for it in items}
        proposal = ProposalRecord(f"p{p}", "s", turn, datetime.now(UTC), "m",
                                  candidate_records(items, scores, turn))
        kept = {it.ctx_id: None for it in items if rng.random() < 0.3}
        store.record(proposal, feedback_record(proposal, "llm", kept),
                     [candidate_state(it, turn) for it in items])
        expected.append(feature_matrix(items, turn))
    want = np.concatenate(expected)
    got = store.dataset().X
    assert got.shape == want.shape
    # the dataset's row order is the database's; compare the rows as sorted byte strings
    assert sorted(r.tobytes() for r in got) == sorted(r.tobytes() for r in want)
    store.close()


def test_a_candidate_without_its_state_is_refused():
    store = FeedbackStore()
    items = _random_items(np.random.default_rng(1), 2, 10)
    proposal = ProposalRecord("p", "s", 10, datetime.now(UTC), "m",
                              candidate_records(items, {"c000": 0.1, "c001": 0.2}, 10))
    with pytest.raises(ValueError, match="2 candidates, 1 candidate states"):
        store.record(proposal, feedback_record(proposal, "auto", {}), [candidate_state(items[0], 10)])


@pytest.mark.parametrize("ids", [(), ("a",), ("c001", 'q"uote\\', "é\n"), ["x", 3]])
def test_id_list_json_is_the_text_json_dumps_gives(ids):
    assert id_list_json(ids) == json.dumps(ids)


def test_a_missing_status_or_relevance_is_stored_as_null():
    """The store binds a missing status or retrieval relevance as NaN, which
    SQLite stores as NULL: the column reads back None, typed null."""
    item = LiveItem(ctx_id="c1", zone=ContextZone.MEMORY, kind="memory", full_tokens=10, tokens=10,
                    born=0, last_ref=0, status=None, relevance=None)
    other = LiveItem(ctx_id="c2", zone=ContextZone.MEMORY, kind="memory", full_tokens=10, tokens=10,
                     born=0, last_ref=0, status="ok", relevance=0.25)
    proposal = ProposalRecord("s:1:0", "s", 1, datetime.now(UTC), "heuristic",
                              candidate_records([item, other], {"c1": 0.1, "c2": 0.2}, 1))
    store = FeedbackStore()
    store.record(proposal, feedback_record(proposal, "auto", {}),
                 [candidate_state(item, 1), candidate_state(other, 1)])
    store.flush()
    rows = store._db.execute(
        "SELECT ctx_id, status, typeof(status), retrieval_relevance, typeof(retrieval_relevance) "
        "FROM eviction_candidates ORDER BY ctx_id").fetchall()
    assert rows == [("c1", None, "null", None, "null"), ("c2", "ok", "text", 0.25, "real")]
    store.close()
