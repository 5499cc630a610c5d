"""SQLite feedback store (Silas §19.3): one row per resolved proposal in
``eviction_feedback`` plus one row per candidate with what the harness saw of
it (zone, kind, age, tokens, status, masked, completed, retrieval relevance),
so calibration can be fitted from it later: ``dataset`` rebuilds the feature
rows from those columns through the same function the scorers use.

Resolved proposals are written in batches: ``record`` queues one, and the
queue goes to the database in one transaction when it reaches
``FLUSH_EVERY`` proposals, when ``flush`` is called (the runner calls it after
every case) and before any read, export or close. A job that dies midway
keeps every case it finished; one transaction per proposal cost a commit each
(a third of a replay's time with the simulated model)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import NamedTuple

import numpy as np

from silas_exp.context.features import feature_rows
from silas_exp.schema.eviction import (
    ZONE_TEXT,
    ContextZone,
    EvictionFeedback,
    EvictionProposal,
    FeedbackRecord,
    ProposalRecord,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS eviction_feedback (
    proposal_id TEXT PRIMARY KEY,
    scope_id TEXT NOT NULL,
    turn_number INTEGER NOT NULL,
    scorer_model TEXT NOT NULL,
    resolved_at TEXT NOT NULL,
    resolved_by TEXT NOT NULL CHECK (resolved_by IN ('llm', 'user', 'auto')),
    evicted TEXT NOT NULL,
    excluded TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS eviction_candidates (
    proposal_id TEXT NOT NULL REFERENCES eviction_feedback(proposal_id),
    rank INTEGER NOT NULL,
    ctx_id TEXT NOT NULL,
    zone TEXT NOT NULL,
    kind TEXT NOT NULL,
    relevance_score REAL NOT NULL,
    age_turns INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    status TEXT,
    masked INTEGER NOT NULL,
    completed INTEGER NOT NULL,
    retrieval_relevance REAL,
    excluded INTEGER NOT NULL,
    PRIMARY KEY (proposal_id, ctx_id)
);
"""


@dataclass(frozen=True)
class FeedbackDataset:
    """Candidates as rows: features X, label y = kept back by the main model."""

    X: np.ndarray
    y: np.ndarray
    zones: np.ndarray
    ages: np.ndarray
    scopes: np.ndarray
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.y)


class CandidateState(NamedTuple):
    """What the harness saw of a candidate besides its ``CandidateRecord``:
    with the record's age and tokens, everything its feature row is made of."""

    kind: str
    status: str | None
    masked: bool
    completed: bool  # completed by the proposal's turn
    relevance: float | None  # retrieval relevance (memory items)


def id_list_json(ids: Sequence[str]) -> str:
    """``json.dumps(ids)``, the same text, without building a JSON encoder per
    call: each id through the C string encoder ``json.dumps`` itself uses."""
    try:
        return "[" + ", ".join(map(encode_basestring_ascii, ids)) + "]"
    except TypeError:  # an id that is not a str
        return json.dumps(ids)


# bound for NULL: SQLite stores a NaN as NULL (sqlite3VdbeMemSetDouble), and sqlite3
# binds a float without the adapter look-up that None goes through
_NULL = float("nan")

FLUSH_EVERY = 256  # queued proposals that trigger a write


def proposal_row(proposal_id: str, scope_id: str, turn: int, scorer_model: str, resolved_at: datetime,
                 resolved_by: str, evicted: Sequence[str],
                 excluded: Sequence[tuple[str, float, str | None]]) -> tuple:
    """A row of ``eviction_feedback``; ``excluded``: (ctx_id, relevance score,
    reason) of each candidate kept back."""
    return (proposal_id, scope_id, turn, scorer_model, resolved_at.isoformat(), resolved_by,
            id_list_json(evicted),
            json.dumps([{"ctx_id": cid, "relevance_score": score, "exclude_reason": why}
                        for cid, score, why in excluded]) if excluded else "[]")


def candidate_rows(proposal_ids: Sequence[str], ranks: Sequence[int], ctx_ids: Sequence[str],
                   zones: Sequence[str], kinds: Sequence[str], scores: Sequence[float],
                   ages: Sequence[int], tokens: Sequence[int], statuses: Sequence[str | None],
                   masked: Sequence[bool], completed: Sequence[bool],
                   relevance: Sequence[float | None], excluded: Sequence[bool]) -> list[tuple]:
    """Rows of ``eviction_candidates`` from their columns (zones as text). Flags
    are bound as exact ints and a missing status or relevance as NaN, which
    SQLite stores as NULL: sqlite3 binds an exact int, float or str directly,
    anything else (a bool, None) through its adapter look-up (~0.3 us a value)."""
    return list(zip(proposal_ids, ranks, ctx_ids, zones, kinds, scores, ages, tokens,
                    [_NULL if st is None else st for st in statuses], [1 if m else 0 for m in masked],
                    [1 if c else 0 for c in completed], [_NULL if r is None else r for r in relevance],
                    [1 if e else 0 for e in excluded], strict=True))


def check_states(proposal: ProposalRecord | EvictionProposal, observed: Sequence[CandidateState]) -> None:
    """A resolved proposal comes with one candidate state per candidate."""
    if len(observed) != len(proposal.candidates):
        raise ValueError(f"proposal {proposal.proposal_id}: {len(proposal.candidates)} candidates, "
                         f"{len(observed)} candidate states")


class FeedbackStore:
    def __init__(self, path: str | Path = ":memory:", *, fresh: bool = False) -> None:
        """``fresh``: start from an empty store, removing one a previous run of
        the same job left at ``path`` (its proposal ids would collide)."""
        self.path = str(path)
        self._pending: list[tuple] = []
        self._queued = 0  # proposals in _pending
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            if fresh:
                for leftover in (self.path, f"{self.path}-wal", f"{self.path}-shm"):
                    Path(leftover).unlink(missing_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        # WAL + synchronous=NORMAL: a batch commits without an fsync
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._db.commit()

    def record(
        self,
        proposal: ProposalRecord | EvictionProposal,
        feedback: FeedbackRecord | EvictionFeedback,
        observed: Sequence[CandidateState],
    ) -> None:
        """Queue one resolved proposal (written by the next ``flush``) with what
        the harness saw of each candidate, in the proposal's order."""
        check_states(proposal, observed)
        self._pending.append((proposal, feedback, observed))
        self._queued += 1
        if self._queued >= FLUSH_EVERY:
            self.flush()

    def record_rows(self, proposals: list[tuple], candidates: list[tuple]) -> None:
        """Queue resolved proposals as rows made already (``proposal_row``,
        ``candidate_rows``), after every proposal queued before them."""
        self._pending.append((None, proposals, candidates))
        self._queued += len(proposals)
        if self._queued >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Write every queued proposal in one transaction."""
        if not self._pending:
            return
        pending, self._pending, self._queued = self._pending, [], 0
        proposals: list[tuple] = []
        candidates: list[tuple] = []
        for proposal, feedback, observed in pending:
            if proposal is None:  # rows made by the caller (record_rows)
                proposals += feedback
                candidates += observed
                continue
            excluded = {e.ctx_id for e in feedback.excluded}
            proposals.append(proposal_row(
                proposal.proposal_id, proposal.scope_id, proposal.turn_number, proposal.scorer_model,
                feedback.resolved_at, feedback.resolved_by, feedback.evicted,
                [(e.ctx_id, e.relevance_score, e.exclude_reason) for e in feedback.excluded]))
            pid = proposal.proposal_id
            records = proposal.candidates
            if records and not isinstance(records[0], tuple):  # schema models (EvictionProposal)
                records = [(c.ctx_id, c.zone, c.relevance_score, c.age_turns, c.token_count)
                           for c in records]
            # records and states transposed into columns (field order: CandidateRecord's
            # and CandidateState's)
            cids, zones, scores, ages, tokens = zip(*records, strict=True) if records else ((),) * 5
            kinds, statuses, masked, completed, relevance = \
                zip(*observed, strict=True) if observed else ((),) * 5
            candidates += candidate_rows(
                [pid] * len(cids), range(len(cids)), cids, [ZONE_TEXT[z] for z in zones], kinds,
                scores, ages, tokens, statuses, masked, completed, relevance,
                [cid in excluded for cid in cids])
        with self._db:  # one transaction per batch
            self._db.executemany("INSERT INTO eviction_feedback VALUES (?,?,?,?,?,?,?,?)", proposals)
            self._db.executemany("INSERT INTO eviction_candidates VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                 candidates)

    def count(self) -> int:
        self.flush()
        return self._db.execute("SELECT COUNT(*) FROM eviction_feedback").fetchone()[0]

    def dataset(self) -> FeedbackDataset:
        self.flush()
        rows = self._db.execute(
            "SELECT c.zone, c.kind, c.age_turns, c.token_count, c.status, c.masked, c.completed, "
            "c.retrieval_relevance, c.excluded, f.scope_id, c.relevance_score "
            "FROM eviction_candidates c JOIN eviction_feedback f USING (proposal_id)"
        ).fetchall()
        if not rows:
            empty = np.zeros(0)
            return FeedbackDataset(np.zeros((0, 0)), empty, empty, empty, empty, empty)
        zones, kinds, ages, tokens, statuses, masked, completed, relevance, excluded, scopes, \
            scores = zip(*rows, strict=True)
        return FeedbackDataset(
            X=feature_rows([ContextZone(z) for z in zones], kinds, ages, tokens, statuses,
                           [bool(m) for m in masked], [bool(c) for c in completed], relevance),
            y=np.array(excluded, dtype=float),
            zones=np.array(zones),
            ages=np.array(ages),
            scopes=np.array(scopes),
            scores=np.array(scores),
        )

    def label_counts(self, column: str) -> dict[str | int, tuple[int, int]]:
        """(candidates, kept back) per value of ``column`` (``zone``, ``age_turns``
        or ``scope_id``), counted inside the database: no candidate row is loaded."""
        self.flush()
        expr = {"zone": "c.zone", "age_turns": "c.age_turns", "scope_id": "f.scope_id"}[column]
        rows = self._db.execute(
            f"SELECT {expr}, COUNT(*), SUM(c.excluded) FROM eviction_candidates c "
            f"JOIN eviction_feedback f USING (proposal_id) GROUP BY {expr}").fetchall()
        return {key: (int(n), int(kept)) for key, n, kept in rows}

    def resolved_by_counts(self) -> dict[str, int]:
        self.flush()
        rows = self._db.execute(
            "SELECT resolved_by, COUNT(*) FROM eviction_feedback GROUP BY resolved_by"
        ).fetchall()
        return {k: int(v) for k, v in rows}

    def export(self, dest: str | Path) -> Path:
        """Copy the whole store to ``dest`` (SQLite online backup)."""
        self.flush()
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        out = sqlite3.connect(dest)
        with out:
            self._db.backup(out)
        out.close()
        return dest

    def close(self) -> None:
        self.flush()
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.close()


class DiscardingStore:
    """A feedback store that keeps nothing: for replays whose feedback nobody
    reads (the control's reference flushes, recorded only for their proposals)."""

    def record(self, proposal, feedback, observed) -> None:
        return None

    def record_rows(self, proposals, candidates) -> None:
        return None

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None
