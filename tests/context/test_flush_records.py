"""Tier 2 hands proposals and resolutions around as plain records with the
§19.2 models' field names; outside values are checked where they enter."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from silas_exp.context.window import LiveItem
from silas_exp.eviction.two_tier import candidate_records
from silas_exp.feedback.flush import feedback_record
from silas_exp.schema.eviction import (
    CandidateRecord,
    ContextZone,
    EvictionCandidate,
    EvictionExclusion,
    EvictionFeedback,
    EvictionProposal,
    ExclusionRecord,
    FeedbackRecord,
    ProposalRecord,
)


@pytest.mark.parametrize("record,model", [
    (CandidateRecord, EvictionCandidate), (ProposalRecord, EvictionProposal),
    (ExclusionRecord, EvictionExclusion), (FeedbackRecord, EvictionFeedback),
])
def test_records_have_the_models_fields(record, model):
    assert record._fields == tuple(model.model_fields) and record.__slots__ == ()


def _items(n=3):
    return [LiveItem(ctx_id=f"c{i}", zone=ContextZone.CHRONICLE, kind="user_message", full_tokens=50,
                     tokens=50, born=0, last_ref=i) for i in range(n)]


def test_records_convert_to_validated_models():
    cands = candidate_records(_items(), {"c0": 0.1, "c1": 0.5, "c2": 1.0}, turn=4)
    proposal = ProposalRecord("p", "s", 4, datetime.now(UTC), "m", cands)
    model = proposal.to_schema()
    assert [c.age_turns for c in model.candidates] == [4, 3, 2]
    feedback = feedback_record(proposal, "llm", {"c1": "still needed", "c2": None})
    assert feedback.evicted == ("c0",)
    assert feedback.to_schema().excluded[0] == EvictionExclusion(ctx_id="c1", relevance_score=0.5,
                                                                 exclude_reason="still needed")


def test_scores_from_a_scorer_are_checked_by_the_schema():
    items = _items(2)
    coerced = candidate_records(items, {"c0": 0.25, "c1": 1}, turn=3)
    assert coerced[1].relevance_score == 1.0 and type(coerced[1].relevance_score) is float
    with pytest.raises(ValidationError, match="EvictionCandidate"):
        candidate_records(items, {"c0": 0.25, "c1": 1.5}, turn=3)
    with pytest.raises(ValidationError):
        candidate_records(items, {"c0": float("nan"), "c1": 0.5}, turn=3)


def test_reasons_from_the_main_model_are_checked_by_the_schema():
    cands = candidate_records(_items(2), {"c0": 0.2, "c1": 0.3}, turn=3)
    proposal = ProposalRecord("p", "s", 3, datetime.now(UTC), "m", cands)
    with pytest.raises(ValidationError, match="EvictionExclusion"):
        feedback_record(proposal, "llm", {"c0": 42})
