"""Tier 2's orderings and records, as pure functions of the evictable items
and their scores: the keep-first ranking, the coherence groups (units) least
relevant first, and a proposal's candidate records."""

from __future__ import annotations

import operator

from silas_exp.context.stats import tuple_maker
from silas_exp.context.window import LiveItem
from silas_exp.schema.eviction import CandidateRecord, EvictionCandidate


def keep_first(scores: dict[str, float]) -> tuple[str, ...]:
    """ctx_ids by descending score, ties by ctx_id: a sort by ctx_id, then a stable
    sort by score in reverse, both on plain keys (the same order as one sort on
    (-score, ctx_id), which NaN scores fall back to)."""
    values = list(scores.values())
    if not all(map(operator.eq, values, values)):  # a NaN, found without a call per score
        return tuple(sorted(scores, key=lambda c: (-scores[c], c)))
    return tuple(sorted(sorted(scores), key=scores.__getitem__, reverse=True))


def eviction_units(items: list[LiveItem], scores: dict[str, float]) -> list[list[LiveItem]]:
    """Coherence groups (an item without a group is its own), least relevant
    first: by the group's highest score, then by its first ctx_id. Only the
    grouped items go through a dict; the units are then sorted by first ctx_id
    and, stably, by best score, as positions in ``items`` on plain keys (first
    ctx_ids differ between units: no two keys tie). A NaN score, a ctx_id held
    twice or a group named like an item take ``units_by_key``, the same order."""
    ids = [it.ctx_id for it in items]
    best = list(map(scores.__getitem__, ids))
    if not all(map(operator.eq, best, best)) or len(set(ids)) != len(ids):
        return units_by_key(items, scores)
    units = _units(items, ids, best, sorted(range(len(ids)), key=ids.__getitem__))
    return units_by_key(items, scores) if units is None else units


def ranked_units(items: list[LiveItem], scores: dict[str, float]
                 ) -> tuple[tuple[str, ...], list[list[LiveItem]]]:
    """``keep_first(scores)`` and ``eviction_units(items, scores)`` from one sort
    of the items by ctx_id, when the scores' keys are the items' ctx_ids (as a
    scorer gives them): the ranking is that order sorted stably by score in
    reverse, as keep_first sorts all ctx_ids."""
    ids = [it.ctx_id for it in items]
    n = len(ids)
    best = list(map(scores.__getitem__, ids))
    if len(scores) != n or not all(map(operator.eq, best, best)) or len(set(ids)) != n:
        return keep_first(scores), eviction_units(items, scores)
    by_id = sorted(range(n), key=ids.__getitem__)
    ranking = tuple(map(ids.__getitem__, sorted(by_id, key=best.__getitem__, reverse=True)))
    units = _units(items, ids, best, by_id)
    return ranking, units_by_key(items, scores) if units is None else units


def _units(items: list[LiveItem], ids: list[str], best: list[float],
           by_id: list[int]) -> list[list[LiveItem]] | None:
    """The units of items with distinct ctx_ids ``ids`` and scores ``best`` (no
    NaN; group members' entries are overwritten), ``by_id`` their positions by
    ctx_id; None when a group is named like an item."""
    grouped = [k for k, it in enumerate(items) if it.group]
    if not grouped:
        by_id.sort(key=best.__getitem__)
        return [[items[k]] for k in by_id]
    units: list = [[it] for it in items]
    first: dict[str, int] = {}
    for k in grouped:
        key = items[k].group
        f = first.get(key)
        if f is None:
            first[key] = k
        else:  # a later member: into its group's first member's unit
            units[f].append(items[k])
            units[k] = None
            if best[k] > best[f]:  # as max() compares
                best[f] = best[k]
    if not first.keys().isdisjoint(ids):  # a group key that is also an item's own
        return None
    order = [k for k in by_id if units[k] is not None]
    order.sort(key=best.__getitem__)
    return [units[k] for k in order]


def units_by_key(items: list[LiveItem], scores: dict[str, float]) -> list[list[LiveItem]]:
    """``eviction_units`` through a dict of every unit by its key (the group, or
    the item's own ctx_id): its definition, for any scores and items."""
    groups: dict[str, list[LiveItem]] = {}
    best: dict[str, float] = {}
    for it in items:
        key, score = it.group or it.ctx_id, scores[it.ctx_id]
        if key in groups:
            groups[key].append(it)
            if score > best[key]:  # as max() compares
                best[key] = score
        else:
            groups[key], best[key] = [it], score
    values = list(best.values())
    if not all(map(operator.eq, values, values)):  # a NaN: as (score, first ctx_id) tuples compare
        return [groups[k] for _, _, k in sorted([(best[k], units[0].ctx_id, k)
                                                 for k, units in groups.items()])]
    # by (score, first ctx_id): a sort by first ctx_id, then a stable sort by score,
    # both on plain keys (first ctx_ids differ between groups: no two keys tie)
    first = {k: units[0].ctx_id for k, units in groups.items()}
    order = sorted(groups, key=first.__getitem__)
    order.sort(key=best.__getitem__)
    return [groups[k] for k in order]


def plain_scores(values: list[float]) -> bool:
    """Whether every score is a float in [0, 1], as the schema wants it (no
    model needed to check or coerce it)."""
    return all(type(s) is float and 0.0 <= s <= 1.0 for s in values)


def candidate_records(chosen: list[LiveItem], scores: dict[str, float],
                      turn: int) -> tuple[CandidateRecord, ...]:
    """A proposal's candidates. Their scores come from the scorer, from outside
    the harness: one that is not a float in [0, 1] goes through the schema
    model, which coerces it (an int) or raises its validation error."""
    make = tuple_maker(CandidateRecord)  # from a tuple: no Python-level call per candidate
    records = tuple([make((i.ctx_id, i.zone, scores[i.ctx_id],
                           turn - i.last_ref if i.last_ref < turn else 0,  # LiveItem.age inlined
                           i._tokens)) for i in chosen])
    if plain_scores([c.relevance_score for c in records]):
        return records
    return tuple(CandidateRecord(**EvictionCandidate(**c._asdict()).model_dump()) for c in records)
